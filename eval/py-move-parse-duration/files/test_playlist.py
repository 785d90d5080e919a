import unittest

from playlist import Playlist
from timer import countdown_steps


class PlaylistTest(unittest.TestCase):
    def test_total(self):
        p = Playlist("Road Trip!")
        p.add("intro", "45s")
        p.add("song", "3m30s")
        p.add("mix", "1h")
        self.assertEqual(p.total(), "1:04:15")
        self.assertEqual(p.filename(), "road-trip.m3u")

    def test_bad_length(self):
        with self.assertRaises(ValueError):
            Playlist("x").add("song", "3 minutes")

    def test_countdown(self):
        self.assertEqual(countdown_steps("2m30s", "1m"), ["2:30", "1:30", "0:30"])


if __name__ == "__main__":
    unittest.main()

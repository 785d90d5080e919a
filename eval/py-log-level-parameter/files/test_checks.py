import unittest

from disk import check_disk
from net import check_hosts


class ChecksTest(unittest.TestCase):
    def test_disk_ok(self):
        self.assertEqual(check_disk(50), "[INFO] disk ok, 50 GB free")

    def test_hosts_sorted(self):
        self.assertEqual(
            check_hosts({"web": 9, "api": 12}),
            ["[INFO] ping api 12 ms", "[INFO] ping web 9 ms"],
        )


if __name__ == "__main__":
    unittest.main()

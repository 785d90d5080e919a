import unittest

from stats import mean, spread, total


class StatsTest(unittest.TestCase):
    def test_total(self):
        self.assertEqual(total([1, 2, 3]), 6)

    def test_mean(self):
        self.assertEqual(mean([2, 4, 6]), 4)

    def test_mean_empty(self):
        self.assertEqual(mean([]), 0.0)

    def test_spread(self):
        self.assertEqual(spread([3, 9, 4]), 6)


if __name__ == "__main__":
    unittest.main()

import unittest

from temps import c_to_f, f_to_c, is_freezing


class TempsTest(unittest.TestCase):
    def test_c_to_f(self):
        self.assertEqual(c_to_f(100), 212)

    def test_f_to_c(self):
        self.assertAlmostEqual(f_to_c(212), 100)

    def test_freezing(self):
        self.assertTrue(is_freezing(-1))


if __name__ == "__main__":
    unittest.main()

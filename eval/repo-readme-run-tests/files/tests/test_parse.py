# Run with: python -m pytest tests
import os
import unittest

from tidytime import normalise

CASES = os.path.join(os.path.dirname(__file__), "cases.txt")


class CasesTest(unittest.TestCase):
    def test_cases(self):
        with open(CASES) as f:
            for line in f:
                if line.strip() and not line.startswith("#"):
                    given, want = line.rstrip("\n").split(" => ")
                    with self.subTest(given=given):
                        self.assertEqual(normalise(given), want)

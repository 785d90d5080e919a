import unittest

from banner import banner, boxed, rule
from wrap import too_long, wrap_paragraphs


class LayoutTest(unittest.TestCase):
    def test_rule(self):
        self.assertEqual(len(rule()), 72)

    def test_banner_centered(self):
        top, title, bottom = banner("hi").split("\n")
        self.assertEqual(title.strip(), "HI")
        self.assertEqual(title.index("HI"), 35)

    def test_boxed_width(self):
        for line in boxed(["x" * 100, "short"]).split("\n"):
            self.assertEqual(len(line), 72)

    def test_wrap(self):
        text = wrap_paragraphs("word " * 40 + "\n\nend")
        self.assertEqual(too_long(text.splitlines()), [])
        self.assertEqual(text.splitlines()[-1], "end")

    def test_too_long(self):
        self.assertEqual(too_long(["a" * 72, "b" * 73]), [2])


if __name__ == "__main__":
    unittest.main()

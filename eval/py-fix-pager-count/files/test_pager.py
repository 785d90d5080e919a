import unittest

from pager import page_count, page_label, paginate


class PageCountTest(unittest.TestCase):
    def test_exact_pages(self):
        self.assertEqual(page_count(30, 10), 3)

    def test_partial_last_page(self):
        self.assertEqual(page_count(31, 10), 4)
        self.assertEqual(page_count(1, 10), 1)

    def test_empty(self):
        self.assertEqual(page_count(0, 10), 1)

    def test_bad_per_page(self):
        with self.assertRaises(ValueError):
            page_count(5, 0)


class PaginateTest(unittest.TestCase):
    items = list(range(1, 26))

    def test_first_page(self):
        self.assertEqual(paginate(self.items, 1), list(range(1, 11)))

    def test_last_page_is_short(self):
        self.assertEqual(paginate(self.items, 3), [21, 22, 23, 24, 25])

    def test_out_of_range(self):
        with self.assertRaises(ValueError):
            paginate(self.items, 4)
        with self.assertRaises(ValueError):
            paginate(self.items, 0)

    def test_label(self):
        self.assertEqual(page_label(3, 25), "Page 3 of 3")
        self.assertEqual(page_label(1, 0), "Page 1 of 1")


if __name__ == "__main__":
    unittest.main()

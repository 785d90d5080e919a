import unittest

from cart import Cart


class CartTest(unittest.TestCase):
    def test_total(self):
        c = Cart()
        c.add(4)
        c.add(4)
        self.assertEqual(c.total(), 10.0)


if __name__ == "__main__":
    unittest.main()

import unittest

from checkout import apply_discount, receipt, subtotal


class SubtotalTest(unittest.TestCase):
    def test_two_decimals(self):
        self.assertEqual(subtotal(["12.50", "0.99"]), 1349)

    def test_whole_euros(self):
        self.assertEqual(subtotal(["3", "€4"]), 700)

    def test_one_decimal(self):
        self.assertEqual(subtotal(["2.5", "1.2"]), 370)

    def test_empty(self):
        self.assertEqual(subtotal([]), 0)


class ReceiptTest(unittest.TestCase):
    def test_discount_rounds_down(self):
        self.assertEqual(apply_discount(999, 10), 900)

    def test_receipt(self):
        self.assertEqual(receipt(["€2.5", "2.40", "2.5"]), "3 items, total €7.40")

    def test_receipt_with_discount(self):
        self.assertEqual(receipt(["10.0", "5"], discount=20), "2 items, total €12.00 (20% off)")


if __name__ == "__main__":
    unittest.main()

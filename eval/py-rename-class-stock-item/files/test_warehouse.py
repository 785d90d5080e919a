import unittest

from inventory import StockItem
from warehouse import Warehouse


class WarehouseTest(unittest.TestCase):
    def test_low_stock(self):
        wh = Warehouse()
        wh.add(StockItem("A", "hinges", 2))
        wh.add(StockItem("B", "brackets", 9))
        self.assertEqual(wh.low_stock(), ["hinges"])

    def test_rejects_other_types(self):
        wh = Warehouse()
        with self.assertRaises(TypeError):
            wh.add(("A", "hinges", 2))

    def test_take_too_many(self):
        item = StockItem("C", "clamps", 1)
        with self.assertRaises(ValueError):
            item.take(2)


if __name__ == "__main__":
    unittest.main()

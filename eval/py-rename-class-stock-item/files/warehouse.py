from inventory import StockItem, load_items


class Warehouse:
    def __init__(self):
        self.items = {}

    def add(self, item):
        if not isinstance(item, StockItem):
            raise TypeError("can only store stock items")
        self.items[item.sku] = item

    def add_rows(self, rows):
        for item in load_items(rows):
            self.add(item)

    def low_stock(self, threshold=5):
        return sorted(i.name for i in self.items.values() if i.is_low(threshold))

    def total_units(self):
        return sum(i.qty for i in self.items.values())

"""Warehouse stock levels."""


class OutOfStock(Exception):
    """More units were asked for than the warehouse has."""


class Stock:
    def __init__(self):
        self.levels = {}
        self.history = []

    def add(self, sku, qty):
        """Receive `qty` units of `sku`."""
        if qty <= 0:
            raise ValueError("qty must be positive")
        self.levels[sku] = self.levels.get(sku, 0) + qty
        self.history.append(("add", sku, qty))

    def remove(self, sku, qty):
        """Ship `qty` units of `sku`. Behaviour: docs/stock.md."""
        ...

    def total(self):
        """Units across all SKUs."""
        return sum(self.levels.values())

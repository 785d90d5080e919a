class StockItem:
    def __init__(self, sku, name, qty=0):
        self.sku = sku
        self.name = name
        self.qty = qty

    def restock(self, n):
        if n <= 0:
            raise ValueError("restock amount must be positive")
        self.qty += n

    def take(self, n):
        if n > self.qty:
            raise ValueError(f"only {self.qty} of {self.name} left")
        self.qty -= n

    def is_low(self, threshold=5):
        return self.qty < threshold


def load_items(rows):
    return [StockItem(sku, name, int(qty)) for sku, name, qty in rows]

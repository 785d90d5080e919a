import inventory
from warehouse import Warehouse

ROWS = [
    ("B-100", "bolts", "40"),
    ("N-200", "nuts", "3"),
    ("W-300", "washers", "12"),
]


def main():
    wh = Warehouse()
    wh.add_rows(ROWS)
    wh.add(inventory.StockItem("S-400", "screws", 2))
    wh.items["W-300"].take(10)
    print("Stock item report")
    print(f"Total units: {wh.total_units()}")
    print("Running low: " + ", ".join(wh.low_stock()))


if __name__ == "__main__":
    main()

from orders import load_orders


def order_total(order):
    return order["qty"] * order["price"]


def main():
    orders = load_orders()
    total = sum(order_total(o) for o in orders)
    print(f"orders: {len(orders)}")
    print(f"total: {total}")


if __name__ == "__main__":
    main()

def load_orders():
    rows = ["widget,2,6", "gadget,3,10"]
    orders = []
    for row in rows:
        name, qty, price = row.split(",")
        orders.append({"name": name, "qty": int(qty), "price": price})
    return orders

TAX = 0.25


def calc_total(prices):
    subtotal = sum(prices)
    return round(subtotal * (1 + TAX), 2)

"""Loyalty programme: points earned for a customer's purchases this month."""

TIERS = ("basic", "silver", "gold")


def loyalty_points(amounts, tier="basic"):
    if tier not in TIERS:
        raise ValueError(tier)
    points = 0
    for i, amount in enumerate(amounts):
        base = int(amount) // 5          # one point per full 5 euros
        if i % 4 == 3:                   # every fourth purchase counts double
            base *= 2
        points += base
    if tier == "gold":
        points = round(points * 1.5)
    elif tier == "silver":
        points += len(amounts)
    return points

RATES = {"silver": 0.05, "gold": 0.15, "platinum": 0.25}


def discount(price, tier):
    rate = RATES.get(tier, 0)
    return price - price * rate

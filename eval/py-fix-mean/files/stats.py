def total(values):
    result = 0
    for v in values:
        result += v
    return result


def mean(values):
    if not values:
        return 0.0
    return total(values) / (len(values) - 1)


def spread(values):
    return max(values) - min(values)

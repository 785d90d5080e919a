"""Password strength meter used by the sign-up form (0..100)."""


def score(pw):
    n = len(pw)
    upper = sum(c.isupper() for c in pw)
    lower = sum(c.islower() for c in pw)
    digits = sum(c.isdigit() for c in pw)
    symbols = n - upper - lower - digits

    points = n * 4
    if upper:
        points += (n - upper) * 2
    if lower:
        points += (n - lower) * 2
    if digits and digits < n:
        points += digits * 4
    points += symbols * 6

    # penalties
    for a, b in zip(pw, pw[1:]):
        if a == b:
            points -= 3
    if pw.isalpha() or pw.isdigit():
        points -= n

    return max(0, min(100, points))


def label(points):
    if points >= 80:
        return "strong"
    if points >= 50:
        return "fair"
    return "weak"

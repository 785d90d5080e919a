NUMERALS = [
    (1000, "M"),
    (900, "CM"),
    (500, "D"),
    (400, "CD"),
    (100, "C"),
    (90, "XC"),
    (50, "L"),
    (40, "XL"),
    (10, "X"),
    (9, "IX"),
    (5, "V"),
    (4, "IV"),
    (1, "I"),
]


def to_roman(n):
    """Roman numeral for 1 <= n <= 3999, e.g. 1994 -> 'MCMXCIV'."""
    if not isinstance(n, int) or not 1 <= n <= 3999:
        raise ValueError(f"out of range: {n!r}")
    out = []
    for value, letters in NUMERALS:
        count, n = divmod(n, value)
        out.append(letters * count)
    return "".join(out)

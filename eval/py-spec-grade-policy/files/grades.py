"""Grade book helpers for the course site."""


def average(scores):
    """Average of a list of scores."""
    return sum(scores) / len(scores)


def letter(score):
    """Letter grade for a score from 0 to 100."""
    if score >= 90:
        return "A"
    if score >= 80:
        return "B"
    if score >= 70:
        return "C"
    if score >= 60:
        return "D"
    return "F"


def report(name, scores):
    """One line for the class report, e.g. 'Ana: 87.5 (B)'."""
    avg = average(scores)
    return f"{name}: {avg} ({letter(avg)})"

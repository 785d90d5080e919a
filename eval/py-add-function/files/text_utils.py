VOWELS = "aeiou"


def shout(s):
    return s.upper() + "!"


def whisper(s):
    return s.lower() + "..."


def count_vowels(s):
    return sum(1 for c in s.lower() if c in VOWELS)

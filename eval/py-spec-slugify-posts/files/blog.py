"""Utilities for the static blog generator."""
from datetime import date


def word_count(text):
    """Number of whitespace separated words in text."""
    return len(text.split())


def reading_time(text, wpm=200):
    """Minutes needed to read text, at least 1."""
    return max(1, round(word_count(text) / wpm))


def post_filename(day, slug):
    """File name for a post, e.g. 2024-03-05-hello-world.md."""
    return f"{day.isoformat()}-{slug}.md"


def is_published(day, today=None):
    """A post is published once its date has come."""
    return day <= (today or date.today())

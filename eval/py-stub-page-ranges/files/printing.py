"""Print-dialog helpers."""


class PageRangeError(ValueError):
    """A page selection the user typed cannot be read."""


def parse_pages(selection, last_page):
    """The pages a selection like "1-3, 7" picks, as a sorted list. See SPEC.md."""
    raise NotImplementedError("parse_pages")


def describe(pages):
    """A short summary for the status line: [1, 2, 3] -> '3 pages'."""
    return "1 page" if len(pages) == 1 else f"{len(pages)} pages"

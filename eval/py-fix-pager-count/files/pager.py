"""Split long lists into pages for the admin tables."""


def page_count(total, per_page):
    """Number of pages needed to show `total` items, `per_page` at a time.

    An empty list still has one (empty) page.
    """
    if per_page < 1:
        raise ValueError("per_page must be at least 1")
    return max(1, total // per_page)


def paginate(items, page, per_page=10):
    """The items shown on page number `page` (pages start at 1)."""
    pages = page_count(len(items), per_page)
    if not 1 <= page <= pages:
        raise ValueError(f"page {page} is out of range 1..{pages}")
    start = (page - 1) * per_page
    return items[start:start + per_page]


def page_label(page, total, per_page=10):
    """Footer text such as 'Page 2 of 3'."""
    return f"Page {page} of {page_count(total, per_page)}"

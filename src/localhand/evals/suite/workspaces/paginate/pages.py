"""Split a list into pages."""


def page(items, number, size):
    """The items on page `number` (counted from 1), `size` items a page."""
    start = number * size
    return items[start : start + size]


def page_count(items, size):
    """How many pages `items` fill, `size` items a page."""
    return (len(items) + size - 1) // size

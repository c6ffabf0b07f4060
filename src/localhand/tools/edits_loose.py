"""Whitespace-tolerant matching for edit_file, tried only after the exact match found nothing.

Small models copy ``old_text`` with the wrong indentation, tabs where the file has spaces, a
trailing space dropped or lines re-wrapped. When exactly one region of the file equals
``old_text`` once every run of whitespace counts as one space, that region is the one meant:
the edit is applied there, ``new_text`` re-indented to the file's own indentation, and the
result says the match was loose. Two or more such regions are refused with each one's line.
Pure functions on strings.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from localhand.errors import ToolError

_WORDY = re.compile(r"\w")
_LEAD = re.compile(r"[ \t]*")


@dataclass(frozen=True)
class LooseEdit:
    """A loosely matched edit: the edited text, the first matched line and what differed."""

    text: str
    line: int
    differs: str


def loose_replace(text: str, old: str, new: str, *, where: str) -> LooseEdit | None:
    """Apply the edit where ``old`` matches ``text`` up to whitespace, if it does exactly once.

    None when no region matches so; ``ToolError`` naming each candidate's line when several do.
    """
    needle = " ".join(old.split())
    squashed, offsets = _squash(text)
    spans = [
        (offsets[found], offsets[found + len(needle) - 1] + 1)
        for found in find_all(squashed, needle)
        if _on_boundaries(squashed, found, len(needle))
    ]
    if not spans:
        return None
    if len(spans) > 1:
        lines = ", ".join(str(line_of(text, start)) for start, _ in spans[:10])
        raise ToolError(
            f"old_text was not found exactly in '{where}', and it matches {len(spans)} places "
            f"if whitespace is ignored (lines {lines}); copy the exact text of the one you mean, "
            "with a line or two around it so that it matches once"
        )
    start, end = spans[0]
    region = text[start:end]
    newline = "\r\n" if "\r\n" in text else "\n"
    line_start = text.rfind("\n", 0, start) + 1
    line_end = _line_end(text, end)
    if text[line_start:start].strip() or text[end:line_end].strip():
        # Part of a line: swap the words, keep the file's whitespace around them.
        replacement = _trim_like(old, new)
    else:
        region = text[line_start:line_end]
        start, end = line_start, line_end
        replacement = _reindent(old, new, region)
        if old.endswith("\n") and not new.strip() and text[end : end + len(newline)] == newline:
            end += len(newline)  # deleting whole lines takes their line break too
    replacement = replacement.replace("\r\n", "\n").replace("\n", newline)
    edited = text[:start] + replacement + text[end:]
    return LooseEdit(edited, line_of(text, start), _how_it_differs(old, region))


def _squash(text: str) -> tuple[str, list[int]]:
    """``text`` with each run of whitespace as one space (ends stripped), and where each
    character of the result came from in ``text``."""
    out: list[str] = []
    offsets: list[int] = []
    in_space = True  # drops leading whitespace
    for index, char in enumerate(text):
        if char.isspace():
            if not in_space:
                out.append(" ")
                offsets.append(index)
            in_space = True
        else:
            out.append(char)
            offsets.append(index)
            in_space = False
    return "".join(out), offsets


def find_all(haystack: str, needle: str) -> list[int]:
    """Where ``needle`` starts in ``haystack``, matches not overlapping."""
    found, index = [], haystack.find(needle)
    while index != -1:
        found.append(index)
        index = haystack.find(needle, index + len(needle))
    return found


def _on_boundaries(squashed: str, found: int, size: int) -> bool:
    """False when the match starts or ends inside a word (``x = 1`` inside ``max = 10``)."""
    before = squashed[found - 1] if found else " "
    after = squashed[found + size] if found + size < len(squashed) else " "
    first, last = squashed[found], squashed[found + size - 1]
    inside_start = bool(_WORDY.match(first)) and bool(_WORDY.match(before))
    inside_end = bool(_WORDY.match(last)) and bool(_WORDY.match(after))
    return not inside_start and not inside_end


def line_of(text: str, index: int) -> int:
    """The 1-based line number of character ``index``."""
    return text.count("\n", 0, index) + 1


def _line_end(text: str, index: int) -> int:
    """Where the line holding ``index - 1`` ends, before its line break."""
    end = text.find("\n", index)
    end = len(text) if end == -1 else end
    return end - 1 if end and text[end - 1] == "\r" else end


def _trim_like(old: str, new: str) -> str:
    """``new`` without the leading/trailing whitespace it shares with ``old``."""
    lead = old[: len(old) - len(old.lstrip())]
    trail = old[len(old.rstrip()) :]
    if lead and new.startswith(lead):
        new = new[len(lead) :]
    if trail and new.endswith(trail):
        new = new[: len(new) - len(trail)]
    return new


def _reindent(old: str, new: str, region: str) -> str:
    """``new`` moved from ``old``'s indentation to the file region's, line by line.

    Where old_text's lines pair with the region's (same count), each old indentation width
    maps to the file's indentation on that line, so a first line copied without its indent
    still lands right; a new line at a width old_text never used takes the nearest shallower
    known one plus its extra depth, written in the file's style (tabs or spaces) and unit.
    """
    old_lines = [row for row in old.replace("\r\n", "\n").split("\n") if row.strip()]
    file_lines = [row for row in region.replace("\r\n", "\n").split("\n") if row.strip()]
    new_lines = [row for row in new.replace("\r\n", "\n").split("\n") if row.strip()]
    old_unit = _unit(old_lines + new_lines)
    file_unit = _unit(file_lines)
    tabs = any(row.startswith("\t") for row in file_lines)
    known: dict[int, str] = {}
    same_count = len(old_lines) == len(file_lines)
    for mine, theirs in zip(old_lines, file_lines, strict=False) if same_count else []:
        known.setdefault(_width(_indent(mine), old_unit), _indent(theirs))
    if not known:
        known[_width(_indent(old_lines[0]), old_unit)] = _indent(file_lines[0])
    body = new.replace("\r\n", "\n")
    if old.endswith("\n") and body.endswith("\n"):
        body = body[:-1]  # the region stops before its line break; so does the replacement
    rows = []
    for row in body.split("\n"):
        if not row.strip():
            rows.append("")
            continue
        width = _width(_indent(row), old_unit)
        below = [known_width for known_width in known if known_width <= width]
        anchor = max(below) if below else min(known)
        depth = (width - anchor) / old_unit
        rows.append(_render(known[anchor], depth, file_unit, tabs) + row.lstrip(" \t"))
    return "\n".join(rows)


def _indent(row: str) -> str:
    match = _LEAD.match(row)
    return match.group() if match else ""


def _width(indent: str, unit: int) -> int:
    return sum(unit if char == "\t" else 1 for char in indent)


def _unit(rows: list[str]) -> int:
    """The indentation step of ``rows``: the smallest non-zero difference between depths."""
    widths = sorted({_width(_indent(row), 4) for row in rows})
    steps = [b - a for a, b in itertools.pairwise(widths) if b > a]
    steps += [w for w in widths if w]
    return min(steps) if steps else 4


def _render(base: str, depth: float, unit: int, tabs: bool) -> str:
    """``base`` moved ``depth`` steps in or out (never past column 0)."""
    steps = round(depth)
    if steps >= 0:
        return base + ("\t" * steps if tabs else " " * (unit * steps))
    cut = -steps if tabs else -steps * unit
    return base[: max(0, len(base) - cut)]


def _how_it_differs(old: str, region: str) -> str:
    """A short phrase naming the kinds of whitespace difference between ``old`` and ``region``."""
    kinds = []
    if ("\t" in old) != ("\t" in region):
        kinds.append("tabs vs spaces")
    old_rows = [row for row in old.replace("\r\n", "\n").split("\n") if row.strip()]
    file_rows = [row for row in region.replace("\r\n", "\n").split("\n") if row.strip()]
    if [_indent(r) for r in old_rows] != [_indent(r) for r in file_rows][: len(old_rows)]:
        kinds.append("indentation")
    if len(old_rows) != len(file_rows):
        kinds.append("line breaks")
    if [" ".join(r.split()) for r in old_rows] != [r.strip() for r in old_rows] or [
        r.strip() for r in old_rows
    ] != [r.strip() for r in file_rows]:
        kinds.append("spacing within lines")
    if not kinds:
        kinds.append("trailing whitespace or line endings")
    return ", ".join(dict.fromkeys(kinds))

"""Find JSON-like regions in model text in linear time.

Regular expressions such as ``\\{[\\s\\S]*?\\}`` backtrack badly on hostile text and cannot
balance braces, so regions are found by one pass over the interesting characters (brackets and
quotes) with a stack. Loading them is ``json_load``'s job.
"""

from __future__ import annotations

import re
from typing import NamedTuple

_TOKEN = re.compile(r"[{}\[\]\"']")
_JSON_TOKEN = re.compile(r'[{}\[\]"]')
_OPEN_RUN = re.compile(r"[{\[]+")
_CLOSE_RUN = re.compile(r"[}\]]+")
# Whole strings, escapes included. Unrolled and possessive: linear, no backtracking. Single
# quotes (Python literals) end at a newline so that a prose apostrophe cannot run on.
_STRING = {
    '"': re.compile(r'"[^"\\]*+(?:\\.[^"\\]*+)*+"', re.S),
    "'": re.compile(r"'[^'\\\n]*+(?:\\.[^'\\\n]*+)*+'"),
}
# A quote opens a string only after one of these (JSON/Python value positions); elsewhere it is
# prose punctuation such as an apostrophe, and tracking it would swallow the text after it.
_VALUE_START = frozenset("{[,:(=")
_WHITESPACE = frozenset(" \t\r\n")
_CLOSER_OF = {"}": "{", "]": "["}
_OPENERS = ("{", "[")
MAX_DEPTH = 64
MAX_TOKENS = 400_000


class Span(NamedTuple):
    """A bracketed region: ``text[start:end]``; ``closed`` is False when it never closed (it
    then ends where the text, or the region around it, ends). A tuple: scans make many."""

    start: int
    end: int
    closed: bool


def skip_space(text: str, pos: int, stop: int) -> int:
    """The first position from ``pos`` that is not white space, or ``stop``."""
    while pos < stop and text[pos] in _WHITESPACE:
        pos += 1
    return pos


def _previous_significant(text: str, index: int, floor: int) -> str:
    # Amortised linear: the whitespace run before a quote is walked only for that quote.
    j = index - 1
    while j >= floor and text[j] in _WHITESPACE:
        j -= 1
    return text[j] if j >= floor else ""


def scan_spans(
    text: str,
    start: int = 0,
    stop: int | None = None,
    *,
    first: bool = False,
) -> list[Span]:
    """Balanced ``{…}`` / ``[…]`` regions at every depth up to ``MAX_DEPTH``, plus unclosed
    openers, sorted by start, outermost first.

    With ``first`` the scan ends when the first top-level region closes, so reading one value
    costs only its length. Quotes are tracked only inside brackets and only where a value may
    start, so prose apostrophes and stray quotes do not hide the rest of the text. Linear:
    runs of brackets are taken in one step, nesting deeper than ``MAX_DEPTH`` is counted but
    not tracked, and at most ``MAX_TOKENS`` tokens are examined (hostile text only).
    """
    end_of_text = len(text) if stop is None else stop
    stack: list[int] = []
    ghost = 0  # openers nested deeper than MAX_DEPTH
    spans: list[Span] = []
    pos = start
    search = _TOKEN.search
    for _ in range(MAX_TOKENS):
        match = search(text, pos, end_of_text)
        if match is None:
            break
        i = match.start()
        char = text[i]
        if char in "{[":
            if ghost == 0 and len(stack) < MAX_DEPTH and text[i + 1 : i + 2] not in _OPENERS:
                stack.append(i)  # a single opener, the common case
                pos = i + 1
                continue
            run_end = _OPEN_RUN.match(text, i, end_of_text).end()  # type: ignore[union-attr]
            take = 0 if ghost else min(MAX_DEPTH - len(stack), run_end - i)
            stack.extend(range(i, i + take))
            ghost += run_end - i - take
            pos = run_end
        elif char in "}]":
            if ghost:
                run_end = _CLOSE_RUN.match(text, i, end_of_text).end()  # type: ignore[union-attr]
                taken = min(ghost, run_end - i)
                ghost -= taken
                pos = i + taken
                continue
            pos = i + 1
            want = _CLOSER_OF[char]
            # Look a few levels down only: a mismatched closer in prose is ignored, and the
            # bounded look keeps the pass linear on inputs like "[[[[...}}}}".
            if stack and text[stack[-1]] == want:  # the common case: it closes the top
                spans.append(Span(stack.pop(), i + 1, True))
                if first and not stack:
                    break
                continue
            depth = len(stack) - 1
            lowest = max(-1, depth - 3)
            while depth > lowest and text[stack[depth]] != want:
                depth -= 1
            if depth > lowest:
                while len(stack) - 1 > depth:
                    # Left open inside a region that closed: it ends there, unfinished.
                    spans.append(Span(stack.pop(), i, False))
                spans.append(Span(stack.pop(), i + 1, True))
                if first and not stack:
                    break
        else:
            pos = i + 1
            # A quote opens a string only inside brackets, where a value may start (see
            # _VALUE_START).
            if (stack or ghost) and _previous_significant(text, i, start) in _VALUE_START:
                string = _STRING[char].match(text, i, end_of_text)
                if string is not None:
                    pos = string.end()
    spans.extend(Span(opened, end_of_text, False) for opened in stack)
    spans.sort(key=lambda span: (span.start, -span.end))
    return spans


def inside_strings(text: str, positions: list[int]) -> set[int]:
    """Which of the sorted ``positions`` fall inside a quoted string within brackets, by the
    same rules as ``scan_spans`` (one linear pass)."""
    inside: set[int] = set()
    if not positions:
        return inside
    depth = 0
    probe = 0
    pos = 0
    end_of_text = len(text)
    for _ in range(MAX_TOKENS):
        match = _TOKEN.search(text, pos)
        if match is None:
            break
        i = match.start()
        char = text[i]
        pos = i + 1
        if char in "{[":
            depth += 1
        elif char in "}]":
            depth = max(0, depth - 1)
        elif depth and _previous_significant(text, i, 0) in _VALUE_START:
            end = string_end(text, i, end_of_text)
            if end is not None:
                while probe < len(positions) and positions[probe] < end:
                    if positions[probe] > i:
                        inside.add(positions[probe])
                    probe += 1
                pos = end
        while probe < len(positions) and positions[probe] < pos:
            probe += 1
        if probe >= len(positions):
            break
    return inside


def string_end(text: str, quote_at: int, stop: int) -> int | None:
    """Position after the string opened at ``quote_at``; None when it never ends (then the quote
    is punctuation, not the start of a string that swallows the rest of the text)."""
    string = _STRING[text[quote_at]].match(text, quote_at, stop)
    return string.end() if string is not None else None


def close_unclosed(chunk: str) -> str | None:
    """``chunk`` with the brackets it left open closed (a reply that simply stopped); None when
    it needs more than that. A string left open is never closed: its end is unknown. Whether
    the last value was complete is ``faithful.check``'s call."""
    stack: list[str] = []
    pos = 0
    for _ in range(MAX_TOKENS):
        match = _JSON_TOKEN.search(chunk, pos)
        if match is None:
            break
        i = match.start()
        char = chunk[i]
        if char == '"':
            end = string_end(chunk, i, len(chunk))
            if end is None:
                return None  # a string cut mid-way
            pos = end
        elif char in "{[":
            stack.append("}" if char == "{" else "]")
            pos = i + 1
        else:
            if not stack or stack.pop() != char:
                return None
            pos = i + 1
    else:
        return None
    return chunk + "".join(reversed(stack)) if stack else None

"""Shared machinery for finding calls in text: hits, budgets, the shared bracket scan, and
the JSON finder every other format builds on."""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from localhand.parsing.faithful import holds_closed
from localhand.parsing.json_load import (
    MAX_LENIENT_CHARS,
    Loaded,
    load_lenient,
    load_strict,
)
from localhand.parsing.json_scan import Span, scan_spans, skip_space
from localhand.parsing.shapes import (
    RawCall,
    ToolIndex,
    arguments_from,
    final_answer_of,
    interpret,
)

MAX_CALLS = 512
"""Calls a reply may yield before finders stop looking (a call found inside markup is counted
once for the body and once for the block, so about 256 calls)."""

# Priorities break ties between finders that report the very same span (otherwise the outermost
# hit wins, see parser._without_overlaps): markup in a model's own tool syntax, then a fence,
# then bare JSON, then a pythonic guess.
MARKUP, FENCE, JSON, PYTHONIC = 0, 1, 2, 3


@dataclass(slots=True)
class Hit:
    """Something in the text that is (or tried to be) one or more calls."""

    start: int
    end: int
    source: str
    calls: list[RawCall] = field(default_factory=list)
    strict: bool = False  # model's own call syntax: unknown names are still calls
    priority: int = JSON
    malformed: str | None = None  # the snippet, when it tried to be a call and failed
    incomplete: bool = False  # unclosed at the end of the text (maybe cut off)
    repaired: bool = False


class Budget:
    """Caps the work spent on candidates so hostile text stays linear and fast: strict parses
    (cheap, stop at the first error), cheap lenient loads (Python literals, closing brackets)
    and json-repair runs (pure Python, about 400 KB/s, so few and small)."""

    def __init__(self, text_length: int) -> None:
        self.attempts = 1_000 + text_length // 100
        self.lenient_chars = 4 * MAX_LENIENT_CHARS
        self.repairs = 24
        # No model makes this many calls in one turn; beyond it the text is noise or an attack.
        self.calls = MAX_CALLS
        self.repair_chars = MAX_LENIENT_CHARS + MAX_LENIENT_CHARS // 4

    def attempt(self) -> bool:
        self.attempts -= 1
        return self.attempts >= 0

    @property
    def exhausted(self) -> bool:
        return self.attempts <= 0 or self.calls <= 0

    def record(self, hit: Hit) -> None:
        """Charge one found hit: markup blocks count as attempts, calls against the cap."""
        self.attempts -= 1
        self.calls -= len(hit.calls)

    def lenient(self, chars: int) -> bool:
        if chars > self.lenient_chars:
            return False
        self.lenient_chars -= chars
        return True

    def repair(self, chars: int) -> bool:
        if self.repairs <= 0 or chars > self.repair_chars:
            return False
        self.repairs -= 1
        self.repair_chars -= chars
        return True


class Finder:
    """``str.find`` with memory: repeated forward queries for one needle cost linear time
    in total, even on text with thousands of unmatched openers."""

    __slots__ = ("_at", "_from", "needle", "text")

    def __init__(self, text: str, needle: str) -> None:
        self.text = text
        self.needle = needle
        self._from = -1
        self._at = -1

    def find(self, pos: int) -> int:
        if self._from != -1 and self._from <= pos and (self._at == -1 or self._at >= pos):
            return self._at
        self._from = pos
        self._at = self.text.find(self.needle, pos)
        return self._at


_MARKER_WORDS = ("name", "function", "tool", "action", "final_answer")


class Markers:
    """Positions of words every call object contains (a key like ``name`` or an offered tool
    name), so only brackets that contain one are parsed at all."""

    def __init__(self, text: str, index: ToolIndex) -> None:
        words = sorted({*_MARKER_WORDS, *index.params}, key=len, reverse=True)
        pattern = re.compile("|".join(re.escape(word) for word in words))
        self._positions = [m.start() for m in pattern.finditer(text)]

    @property
    def any(self) -> bool:
        return bool(self._positions)

    def within(self, start: int, end: int) -> bool:
        at = bisect.bisect_left(self._positions, start)
        return at < len(self._positions) and self._positions[at] < end


class Scan:
    """Everything the parser found in one text, and the caches and budget shared by the
    format finders."""

    def __init__(self, text: str, index: ToolIndex, *, truncated: bool = False) -> None:
        self.text = text
        self.index = index
        self.truncated = truncated  # the reply was cut off by the length limit
        self.budget = Budget(len(text))
        index.repair_gate = self.budget.repair
        self.markers = Markers(text, index)
        self.final_answer: str | None = None
        # Example code: fences in a programming language (```python, ```bash, ...) and call
        # markup quoted as inline code. What they hold is never a call (the finders fill this).
        self.examples: list[tuple[int, int]] = []
        self._spans: list[Span] | None = None
        self._starts: list[int] = []

    def keep(self, hits: list[Hit], hit: Hit) -> None:
        """Add ``hit`` to a finder's results and charge it to the budget."""
        hits.append(hit)
        self.budget.record(hit)

    def spans(self) -> list[Span]:
        """Every bracketed region of the whole text (one scan, shared by all finders)."""
        if self._spans is None:
            self._spans = scan_spans(self.text)
            self._starts = [span.start for span in self._spans]
        return self._spans

    def runs_past(self, pos: int, stop: int) -> Span | None:
        """The shared scan's region that starts at ``pos`` when it closes beyond ``stop``: a
        value that ran past a marker that was only text inside one of its strings. (One that
        never closes is just missing its last bracket.)"""
        spans = self.spans()
        at = bisect.bisect_left(self._starts, pos)
        if at < len(spans) and spans[at].start == pos and spans[at].closed and spans[at].end > stop:
            return spans[at]
        return None

    def spans_between(self, start: int, stop: int) -> list[Span]:
        """The shared scan's regions that start in ``[start, stop)``, cut at ``stop``: markup
        bodies reuse the one pass instead of scanning their text again."""
        spans = self.spans()
        first = bisect.bisect_left(self._starts, start)
        last = bisect.bisect_left(self._starts, stop)
        # Regions that closed past ``stop`` keep their end (a closing tag inside a string
        # value ended the body too early); unclosed ones are cut at ``stop``.
        return [
            span if span.closed or span.end <= stop else Span(span.start, stop, False)
            for span in spans[first:last]
        ]


Reader = Callable[[int, Finder], tuple[Hit | None, int]]
"""Reads the marker at a position (``Finder`` finds the next ones): the hit it makes (None:
text) and where the next marker may start."""


def marker_hits(scan: Scan, marker: str, read: Reader) -> list[Hit]:
    """The hits ``read`` makes of each ``marker`` in the text, in order: the loop every marker
    finder shares, linear (one memoised find per marker) and within the scan's budget."""
    if marker not in scan.text:
        return []
    markers = Finder(scan.text, marker)
    hits: list[Hit] = []
    pos = markers.find(0)
    while pos >= 0 and not scan.budget.exhausted:
        hit, resume = read(pos, markers)
        if hit is not None:
            scan.keep(hits, hit)
        pos = markers.find(resume)
    return hits


SNIPPET_CHARS = 500


def snippet(text: str, start: int, end: int) -> str:
    """A bounded copy of ``text[start:end]`` (malformed calls are reported, not kept whole)."""
    return text[start : min(end, start + SNIPPET_CHARS)]


def _looks_like_list_of_objects(text: str, start: int) -> bool:
    limit = min(len(text), start + 200)
    i = skip_space(text, start + 1, limit)
    return i < limit and text[i] == "{"


def json_hits(
    scan: Scan,
    start: int = 0,
    stop: int | None = None,
    *,
    source: str = "json",
    strict: bool = False,
    priority: int = JSON,
) -> list[Hit]:
    """Calls expressed as JSON (or Python-literal) values in ``text[start:stop]``."""
    text = scan.text
    if not scan.markers.any:
        return []  # no call can be written without one of the marker words
    whole = start == 0 and stop is None
    stop = len(text) if stop is None else stop
    spans = scan.spans() if whole else scan.spans_between(start, stop)
    hits: list[Hit] = []
    broken: list[Span] = []  # closed, call-like, unloadable: malformed unless a call is inside
    cursor = start
    for span in spans:
        if span.start < cursor:
            continue
        if not scan.markers.within(span.start, span.end):
            continue
        if text[span.start] == "[" and not _looks_like_list_of_objects(text, span.start):
            continue
        if scan.budget.exhausted:
            break
        loaded = load_strict(text, span)
        if loaded is None:
            scan.budget.attempt()  # only failures count: successes consume their text
        if loaded is None and scan.budget.lenient(span.end - span.start):
            loaded = load_lenient(text, span, allow_repair=scan.budget.repair)
        if loaded is None:
            if span.closed:
                if (not broken or broken[-1].end <= span.start) and _call_like(scan, span):
                    broken.append(span)
            elif _call_like(scan, span):
                scan.keep(hits, _malformed(text, span, source, strict, priority))
                cursor = span.end
            continue
        answer = final_answer_of(loaded.value)
        calls = interpret(loaded.value, scan.index) if answer is None else None
        end = max(loaded.end, span.start + 1)
        if calls and cut_calls(calls, loaded):
            # The text stopped inside an argument's value, or before the arguments began:
            # closing it would execute a call the model never finished writing.
            scan.keep(hits, _malformed(text, span, source, strict, priority))
            cursor = end
            continue
        if calls:
            scan.keep(
                hits,
                Hit(
                    span.start,
                    end,
                    source,
                    calls,
                    strict=strict,
                    priority=priority,
                    incomplete=not span.closed,
                    repaired=loaded.how != "json",
                ),
            )
        elif answer is not None and scan.final_answer is None:
            scan.final_answer = answer
            scan.keep(hits, Hit(span.start, end, "final_answer_json", priority=priority))
        cursor = end  # a valid value that is not a call: its parts are not calls either
    if broken:
        # Broken JSON that names an offered tool (``{"path": }``, ``3,,``) is a failed call, not
        # text: reported so that the loop asks again. A call found inside it wins.
        starts = sorted(hit.start for hit in hits)
        for span in broken:
            at = bisect.bisect_left(starts, span.start)
            if at == len(starts) or starts[at] >= span.end:
                scan.keep(hits, _malformed(text, span, source, strict, priority, incomplete=False))
    return hits


def _malformed(
    text: str, span: Span, source: str, strict: bool, priority: int, *, incomplete: bool = True
) -> Hit:
    return Hit(
        span.start,
        span.end,
        source,
        strict=strict,
        priority=priority,
        malformed=snippet(text, span.start, span.end),
        incomplete=incomplete,
    )


def cut_calls(calls: list[RawCall], loaded: Loaded) -> bool:
    """Whether closing what the text left open cut one of ``calls``: an argument's value was
    left open (it may be missing items), or a call object stopped before its arguments."""
    if not loaded.repair.closed_ids:
        return False
    return any(call.no_arguments or _holds_cut(call.arguments, loaded) for call in calls)


def _holds_cut(arguments: dict[str, Any] | None, loaded: Loaded) -> bool:
    return any(holds_closed(value, loaded.repair) for value in (arguments or {}).values())


def arguments_of(loaded: Loaded | None) -> dict[str, Any] | None:
    """The arguments object a format wrote as a JSON value (``[ARGS]{...}``, harmony, Kimi,
    DeepSeek): None when unusable, or when the text stopped inside one of its values."""
    if loaded is None:
        return None
    arguments = arguments_from(loaded.value)
    if arguments is None or _holds_cut(arguments, loaded):
        return None
    return arguments


def value_at(scan: Scan, pos: int, stop: int) -> tuple[Loaded | None, bool]:
    """The JSON-like value starting at the first non-space from ``pos``: (loaded, closed).

    Strict first (cost: the value's length); leniently only within budget."""
    text = scan.text
    pos = skip_space(text, pos, stop)
    if pos >= stop or text[pos] not in "{[":
        return None, True
    whole = scan.runs_past(pos, stop)
    if whole is not None:
        loaded = load_strict(text, whole)  # parse it whole
        if loaded is not None:
            return loaded, True
    loaded = load_strict(text, Span(pos, stop, False))
    if loaded is not None:
        return loaded, True
    spans = scan_spans(text, pos, stop, first=True)
    span = spans[0] if spans else Span(pos, stop, False)
    if not scan.budget.lenient(span.end - span.start):
        return None, span.closed
    return load_lenient(text, span, allow_repair=scan.budget.repair), span.closed


def _call_like(scan: Scan, span: Span) -> bool:
    """An unclosed object that starts like a call: a name key and, when tools were offered,
    one of their names near the start."""
    head = scan.text[span.start : min(span.end, span.start + 300)]
    if '"name"' not in head and "'name'" not in head and '"function"' not in head:
        return False
    if not scan.index.offered:
        return True
    return any(f'"{name}"' in head or f"'{name}'" in head for name in scan.index.params)

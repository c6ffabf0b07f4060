"""A call the length limit cut before any finder could see it.

When the server stopped at the token limit, a reply that ends in the first characters of call
markup (``<tool_``, ``[TOOL_CA``, a ```` ```json```` fence and nothing after it) or inside an
object that starts like a call (``{"na``, ``{"name": "read_fi``) was cut while writing a call.
It must not come back as a final answer made of the prose before it: it is reported as a
malformed call, so that the loop asks again instead of accepting half a turn.

Only the last few hundred characters are looked at: linear, whatever the reply.
"""

from __future__ import annotations

import re

from localhand.parsing.formats import TAGS
from localhand.parsing.json_scan import close_unclosed, scan_spans
from localhand.parsing.pythonic import starts_like_call
from localhand.parsing.shapes import LIST_KEYS, NAME_KEYS, ONE_KEYS

# How calls start in the formats the parser reads: every tag's opener, and the starts of the
# formats read without one (bodies, wrappers, channels and fences).
CALL_OPENERS = tuple(
    dict.fromkeys(
        [
            *(tag.opener for tag in TAGS if tag.distinctive),
            "<function=",
            "<function name=",
            "<invoke ",
            "[TOOL_CALLS]",
            "<|tool_calls_section_begin|>",
            "<｜tool▁calls▁begin｜>",
            "<|tool▁calls▁begin|>",
            "✿FUNCTION✿",
            "<|channel|>commentary",
            "to=functions.",
            "```json",
        ]
    )
)
_TAIL = 400
_MIN_PARTIAL = 3  # "<t" could be anything; "<to" of "<tool_call>" at the very end is not prose
_PYTHONIC_START = re.compile(r"\[\s*[A-Za-z_][\w.]*\(")
_CALL_KEYS = (*NAME_KEYS, *LIST_KEYS, *ONE_KEYS, "tool_call_id")  # Command R starts with its id


def _partial_opener(tail: str) -> bool:
    """Whether ``tail`` ends in an opener, or in the first characters of one."""
    for short in range(_MIN_PARTIAL):  # an opener, and maybe a character or two of the next
        if tail[: len(tail) - short].rstrip().endswith(CALL_OPENERS):
            return True
    for opener in CALL_OPENERS:
        # The longest proper prefix of the opener that the text ends with.
        for size in range(len(opener) - 1, _MIN_PARTIAL - 1, -1):
            if tail.endswith(opener[:size]):
                if opener == "```json" and size <= len("```"):
                    break  # "```" closes fences too
                return True
    return False


def _call_head(head: str) -> bool:
    """Whether an object (or list) cut at the end starts like a call: nothing written yet after
    its bracket, a first key that is (the start of) a key calls begin with, or a pythonic call
    (``[get_weather(location=``)."""
    rest = head.lstrip("{[ \t\r\n")
    if not rest:
        return True
    if head.startswith("[") and "{" not in head[: len(head) - len(rest)]:
        # "[get_weather(location=" or "[get_wea": a pythonic call list the end cut.
        word = rest.rstrip()
        if starts_like_call(rest, 0) or (word and all(c.isalnum() or c in "_." for c in word)):
            return word[:1].isalpha() or word[:1] == "_"
        return False
    if rest[0] not in "\"'":
        return False
    key = rest[1:]
    close = key.find(rest[0])
    if close >= 0:
        key = key[:close]
        return key in _CALL_KEYS
    return any(candidate.startswith(key) for candidate in _CALL_KEYS)


def cut_call_at_end(text: str, covered_until: int, *, truncated: bool) -> str | None:
    """The snippet of a call the end of ``text`` cut, or None. ``covered_until`` is where the
    hits the finders reported end: a cut they already reported is not reported twice.

    With ``truncated`` (the length limit stopped the reply) the first characters of call
    markup, or an object that starts like a call, at the very end are a cut call. Without it
    only an object that starts like a call and stops inside one of its strings is (a reply
    ending in ``{"name": "read_fi`` was cut whatever the server says; one ending in ``<tool_c``
    may just be text)."""
    start = max(covered_until, len(text) - _TAIL)
    if start >= len(text):
        return None
    if not truncated and (text[-1] in "}]>`" or text.find('"', start) < 0):
        return None  # the common case: a reply that ends closed, or holds no string to be in
    tail = text[start:]
    if truncated and _partial_opener(tail):
        line = tail.rfind("\n", 0, max(0, len(tail.rstrip()) - 1))
        return tail[line + 1 :].strip() or tail.strip()
    if truncated:
        # "[get_weather(location='Pa": a pythonic call list that never closed (its strings
        # may hold brackets, so the bracket scan alone cannot tell).
        found = _PYTHONIC_START.search(tail)
        while found is not None:
            if ")]" not in tail[found.start() :]:
                return tail[found.start() :]
            found = _PYTHONIC_START.search(tail, found.end())
    for span in scan_spans(tail):
        if not span.closed and span.end == len(tail) and tail[span.start] in "{[":
            cut = tail[span.start :]
            # Without the limit, only an object that stops inside one of its strings was cut.
            if _call_head(cut[:80]) and (truncated or ('"' in cut and close_unclosed(cut) is None)):
                return cut
            break  # only the outermost object left open at the end can be the cut call
    return None


def unclosed_markup(text: str, blocks: tuple[tuple[str, tuple[str, ...]], ...]) -> str | None:
    """The last call block of ``text`` that its closer never ended (``blocks`` pairs each
    opener with its closers), or a gpt-oss recipient with no ``<|call|>`` after it: for a
    reply the length limit cut, that block is a cut call."""
    for opener, closers in blocks:
        at = text.rfind(opener)
        if at >= 0 and not any(text.find(closer, at) >= 0 for closer in closers):
            return text[at:]
    at = text.rfind("to=functions.")
    if at >= 0 and text.find("<|call|>", at) < 0 and text.find("<|end|>", at) < 0:
        return text[at:]
    # Markers without a closer ([TOOL_CALLS]NAME[ARGS]{...): cut when their JSON never closed.
    at = max(text.rfind(opener) for opener in CALL_OPENERS)
    if at >= 0:
        spans = scan_spans(text, at)
        if any(not span.closed and span.end == len(text) for span in spans):
            return text[at:]
    return None

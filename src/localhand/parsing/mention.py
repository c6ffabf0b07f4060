"""Tell a call apart from prose that mentions call markup.

An answer that explains "Qwen wraps calls in ``<tool_call>`` tags" or "Mistral prefixes calls
with [TOOL_CALLS]" is not a broken call: cutting it at the marker corrupts the answer. A marker
is a mention when it is quoted as inline code, or when what follows it does not start the way
that format's calls start and the marker sits in the middle of a line of prose. A marker at the
start of a line (or of the reply) followed by something else is still a call attempt that
failed, and a marker the length limit cut the reply after is still a cut call.

All looks are bounded, so checking every marker of a hostile text stays linear.
"""

from __future__ import annotations

from localhand.parsing.extract import Scan
from localhand.parsing.json_scan import skip_space

_LOOK = 200
# What may follow a name at the start of a markup body: its arguments (JSON, pythonic, XML
# arguments, a separator token) or the end of the body (a call without arguments); after
# spaces, only what cannot start a word of prose.
_AFTER_NAME = frozenset("\r\n{(<[")
_AFTER_SPACE = frozenset("\r\n{<")
_BODY_STARTS = (
    "<function",
    "<invoke",
    "<｜DSML｜invoke",
    "call:",
    ":call:",
    "<arg_key>",
    "functions.",
)


def in_inline_code(text: str, pos: int) -> bool:
    """Whether ``pos`` sits inside a single-backtick code span on its line (bounded look)."""
    start = max(0, pos - _LOOK)
    tick = text.rfind("`", start, pos)
    if tick < 0:
        return False  # the common case, without copying anything
    line = text.rfind("\n", start, pos)
    if line > tick:
        return False
    window = text[line + 1 if line >= 0 else start : pos]
    ticks = window.count("`") - 3 * window.count("```")
    return ticks % 2 == 1


def inline_code_end(text: str, pos: int) -> int:
    """Where the inline code span around ``pos`` ends (after its closing backtick; the end of
    the line or of a bounded look when it is never closed)."""
    limit = min(len(text), pos + 4 * _LOOK)
    tick = text.find("`", pos, limit)
    line = text.find("\n", pos, limit)
    if tick >= 0 and (line < 0 or tick < line):
        return tick + 1
    return line if line >= 0 else limit


def mid_line(text: str, pos: int) -> bool:
    """Whether prose precedes ``pos`` on its line."""
    j = pos - 1
    floor = max(-1, pos - _LOOK)
    while j > floor and text[j] in " \t":
        j -= 1
    return j > floor and text[j] != "\n"


def at_line_start(text: str, pos: int) -> bool:
    """Whether only spaces and tabs precede ``pos`` on its line (however far back it starts)."""
    j = pos - 1
    while j >= 0 and text[j] in " \t":
        j -= 1
    return j < 0 or text[j] == "\n"


def name_end(text: str, at: int, stop: int, *, most: int = 128, chars: str = "_-.") -> int:
    """Where the tool name starting at ``at`` ends: letters, digits and ``chars``, at most
    ``most`` of them."""
    end, limit = at, min(stop, at + most)
    while end < limit and (text[end].isalnum() or text[end] in chars):
        end += 1
    return end


def call_like_body(text: str, at: int, stop: int) -> bool:
    """Whether a markup body starting at the first non-space from ``at`` starts like a call:
    JSON, a known inner tag, a pythonic call, or a name followed by its arguments (or by
    nothing but the end of the body)."""
    at = skip_space(text, at, stop)
    if at >= stop:
        return False
    if text[at] in "{[":
        return True
    if text.startswith(_BODY_STARTS, at):
        return True
    limit = min(stop, at + 130)
    end = name_end(text, at, limit, most=130, chars="_-.:")
    if end == at or not (text[at].isalpha() or text[at] == "_"):
        return False
    if end >= stop or text[end] in _AFTER_NAME:
        return True
    while end < limit and text[end] in " \t":
        end += 1
    if end >= stop or text[end] in _AFTER_SPACE:
        return True
    return _starts_keyword_argument(text, end, limit)


def _starts_keyword_argument(text: str, at: int, limit: int) -> bool:
    """``path=calc.py`` or ``path: calc.py`` after a name: arguments written as keywords, a
    botched call rather than a word of prose."""
    end = name_end(text, at, limit, most=limit, chars="_")
    return end > at and end < limit and text[end] in "=:" and text[at].isalpha()


def is_mention(text: str, pos: int, body: int, stop: int, *, truncated: bool) -> bool:
    """Whether the marker at ``pos`` (its body starting at ``body`` and ending by ``stop``) is
    prose about markup rather than a call attempt."""
    if in_inline_code(text, pos):
        return True
    if not mid_line(text, pos) or call_like_body(text, body, stop):
        return False
    # The length limit stopped the reply right after the marker: a cut call, not prose.
    return not (truncated and not text[body:stop].strip())


def failed_mention(scan: Scan, pos: int, start: int, stop: int, *, name_only: bool = False) -> bool:
    """A marker whose body did not parse is prose, not a failed call, when it sits mid-line
    and its body names none of the offered tools ("wraps calls in <tool_call>{...}</tool_call>
    tags"). Without a tool list nothing can tell (unless the body is a bare name, ``name_only``),
    so it stays a failed call; and a body the length limit cut is a cut call whatever it names."""
    text = scan.text
    if scan.truncated and stop >= len(text):
        return False
    if not (scan.index.offered or name_only) or not mid_line(text, pos):
        return False
    head = text[start : min(stop, start + 300)]
    return not any(name in head for name in scan.index.params)

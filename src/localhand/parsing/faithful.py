"""Prove that a lenient load only changed punctuation, or reject it.

"Broken JSON is repaired only when the repair is unambiguous." Lenient loaders (a Python
literal, closing what a stopped reply left open, ``json-repair``) propose a value; this module
decides whether the value is what the text says. The text is cut into tokens (strings, numbers,
literals, bare words, punctuation) and walked side by side with the tokens of the value written
back as JSON. The only differences allowed:

- a comma right before a closing bracket is dropped (``{"a": 1,}``);
- a bare identifier followed by ``:`` is a key (``{path: "a"}``);
- brackets left open at the very end are closed, when the last token completes a value (a
  string whose closing quote was written, ``true``/``false``/``null``, or a closing bracket):
  a string, number or word cut by the end of the text, a trailing ``,`` or ``:`` and a dangling
  key or opener all mean something is missing, and nothing is ever filled in;
- inside a double-quoted string, a quote directly followed by a character that cannot follow
  a closing quote is that character, as in ``"print("hi")"``.

Strings are read one way only: a double-quoted string as lenient JSON (``"C:\\dir"`` keeps its
backslash, ``\\'`` is a quote), a single-quoted one as Python; Python's reading of a
double-quoted string only when the text is Python elsewhere (``"C:\\apps"`` in JSON is not
``C:\\x07pps``). Everything else (a missing value, a bare word as a value, a doubled comma, a
missing comma, a mismatched bracket, a merged or split string, a dropped or invented token)
rejects the repair. Linear: one pass over the text and one over the value.
"""

from __future__ import annotations

import ast
import json
import re
import warnings
from dataclasses import dataclass
from typing import Any

_SPACE = " \t\r\n"
_PUNCT = "{}[]:,"
_WORD = re.compile(r"""[^ \t\r\n{}\[\]:,"']+""")
_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")
_KEY_WORD = re.compile(r"[A-Za-z_$][\w$.\-]*")
_QUOTE_OR_BACKSLASH = re.compile(r'["\\]')
_SINGLE_QUOTED = re.compile(r"'[^'\\\n]*+(?:\\.[^'\\\n]*+)*+'")
LITERALS: dict[str, Any] = {
    # JSON's and Python's names for the three constants.
    "true": True,
    "false": False,
    "null": None,
    "True": True,
    "False": False,
    "None": None,
}
# Token kinds: the punctuation characters themselves, and these.
_STRING, _NUM, _LIT, _WORDK, _PY = "s", "n", "l", "w", "py"
# Kinds in the value's stream.
_KEY, _VALUE = "k", "v"
MAX_NESTING = 10_000


@dataclass(frozen=True, slots=True)
class Repair:
    """What a faithful load needed: the containers (by ``id``) it closed because the text
    stopped inside them, and the deepest of their depths (0 is the outermost value; -1 when
    nothing was closed)."""

    closed_ids: frozenset[int] = frozenset()
    deepest: int = -1


NOTHING_CLOSED = Repair()


def _string_end(chunk: str, i: int) -> tuple[int, bool] | None:
    """End of the double-quoted string at ``i`` and whether it holds bare quotes; None when it
    never ends or cannot be read. A quote ends it when the next non-space is ``, : } ]`` or the
    end of the text (the end only for a string without bare quotes: ``"say "`` could be cut).
    A quote directly followed by anything else but a space or a quote is a bare quote, part of
    the string (``"print("hi")"``); any other quote is ambiguous (``"a" "b"``, ``"x""``)."""
    n = len(chunk)
    j = i + 1
    bare = False
    while True:
        match = _QUOTE_OR_BACKSLASH.search(chunk, j)
        if match is None:
            return None
        k = match.start()
        if chunk[k] == "\\":
            j = k + 2
            continue
        after = k + 1
        while after < n and chunk[after] in _SPACE:
            after += 1
        if after < n and chunk[after] in ",:}]":
            return k + 1, bare
        if after >= n:
            return None if bare else (k + 1, bare)
        if after != k + 1 or chunk[after] in "\"'":
            return None
        bare = True
        j = k + 1


def tokens(chunk: str) -> list[tuple[str, Any]] | None:
    """The chunk's tokens, or None when it holds something no repair may read: an unclosed
    string, or a word that is neither a number, a literal nor an identifier. A ``"py"`` token
    at the end marks text written in Python (a single-quoted string, True/False/None)."""
    out: list[tuple[str, Any]] = []
    pythonic = False
    n = len(chunk)
    i = 0
    while i < n:
        char = chunk[i]
        if char in _SPACE:
            i += 1
        elif char in _PUNCT:
            out.append((char, None))
            i += 1
        elif char == '"':
            found = _string_end(chunk, i)
            if found is None:
                return None
            end, bare = found
            out.append((_STRING, (i, end, bare)))
            i = end
        elif char == "'":
            match = _SINGLE_QUOTED.match(chunk, i)
            if match is None:
                return None
            out.append((_STRING, (i, match.end(), False)))
            i = match.end()
            pythonic = True
        else:
            match = _WORD.match(chunk, i)
            word = match.group() if match else char
            i += len(word)
            if word in LITERALS:
                out.append((_LIT, LITERALS[word]))
                pythonic = pythonic or word[0].isupper()
            elif _NUMBER.fullmatch(word):
                out.append((_NUM, word))
            elif _KEY_WORD.fullmatch(word):
                out.append((_WORDK, word))
            else:
                return None
    if pythonic:
        out.append((_PY, None))
    return out


# In a double-quoted string: an escape (``\\u`` with its four digits), or a bare quote.
_ESCAPE_OR_QUOTE = re.compile(r'\\(u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|U[0-9a-fA-F]{8}|N\{|.)|"', re.S)
_JSON_ESCAPES = frozenset('"\\/bfnrt')
# Escapes Python reads as something other than a backslash and a character (``\x41`` is
# "A"): the lenient JSON reading is then not the only one, so there is none.
_PYTHON_ONLY_ESCAPES = frozenset("av01234567")
_SURROGATES = re.compile("[\ud800-\udfff]")


def _json_reading(raw: str) -> str | None:
    """``raw`` (a string's text between its quotes) read as JSON, leniently: bare quotes and
    backslashes before ordinary characters (``C:\\dir``) are themselves, ``\\'`` is a quote.
    None when an escape would mean something else in Python (``\\x41``, ``\\U...``)."""
    ambiguous = False

    def fix(match: re.Match[str]) -> str:
        nonlocal ambiguous
        escaped = match.group(1)
        if escaped is None:
            return '\\"'  # a bare quote
        if (escaped[0] == "u" and len(escaped) == 5) or escaped in _JSON_ESCAPES:
            return match.group()
        if escaped == "'":
            return "'"
        if len(escaped) > 1 or escaped in _PYTHON_ONLY_ESCAPES:
            ambiguous = True
            return match.group()
        return "\\\\" + escaped  # an unknown escape: the backslash is a character

    body = _ESCAPE_OR_QUOTE.sub(fix, raw)
    if ambiguous:
        return None
    try:
        decoded: str = json.loads('"' + body + '"', strict=False)
        return decoded
    except ValueError:
        return None


def _string_matches(chunk: str, where: tuple[int, int, bool], value: str, pythonic: bool) -> bool:
    """Whether ``value`` is the reading of the quoted text: Python's for a single-quoted
    string, the lenient JSON one for a double-quoted string, or Python's when the text is
    written in Python elsewhere (``pythonic``): ``"C:\\apps"`` in JSON is not ``C:\\x07pps``.
    Lone surrogates (half an escaped emoji) are never a reading."""
    if _SURROGATES.search(value):
        return False
    start, end, bare = where
    raw = chunk[start + 1 : end - 1]
    if "\\" not in raw and '"' not in raw:
        return value == raw  # nothing to decode: the common case
    double = chunk[start] == '"'
    if double and _json_reading(raw) == value:
        return True
    if bare or (double and not pythonic):
        return False  # and Python would read "a"b" as two strings joined
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "invalid escape sequence": still a reading
            return bool(ast.literal_eval(chunk[start:end]) == value)
    except Exception:  # SyntaxError, ValueError, MemoryError: not a Python string either
        return False


def _number_matches(word: str, value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        if any(ch in word for ch in ".eE"):
            return float(word) == value
        return int(word) == value
    except (ValueError, OverflowError):
        return False


def _stream(value: Any) -> list[tuple[str, Any]] | None:
    """The value's tokens as JSON writes them; closers carry ``(id, depth)`` of their
    container. None for anything JSON cannot hold (tuples, sets, bytes, non-string keys)."""
    out: list[tuple[str, Any]] = []
    todo: list[tuple[str, Any, int]] = [(_VALUE, value, 0)]
    while todo:
        kind, item, depth = todo.pop()
        if kind != _VALUE:
            out.append((kind, item))
            continue
        if depth > MAX_NESTING:
            return None
        if isinstance(item, dict):
            out.append(("{", None))
            todo.append(("}", (id(item), depth), depth))
            entries = list(item.items())
            for position in range(len(entries) - 1, -1, -1):
                key, inner = entries[position]
                if not isinstance(key, str):
                    return None
                todo.append((_VALUE, inner, depth + 1))
                todo.append((":", None, depth))
                todo.append((_KEY, key, depth))
                if position:
                    todo.append((",", None, depth))
        elif isinstance(item, list):
            out.append(("[", None))
            todo.append(("]", (id(item), depth), depth))
            for position in range(len(item) - 1, -1, -1):
                todo.append((_VALUE, item[position], depth + 1))
                if position:
                    todo.append((",", None, depth))
        elif item is None or isinstance(item, bool | int | float | str):
            out.append((_VALUE, item))
        else:
            return None
    return out


def _completes(last: tuple[str, Any]) -> bool:
    # A closing quote, a literal or a closing bracket ends a value for sure; a number may
    # have been cut ("12" of "125"), and anything else leaves a value missing.
    return last[0] in (_STRING, _LIT, "}", "]")


def _value_matches(chunk: str, token: tuple[str, Any], value: Any, pythonic: bool) -> bool:
    kind, payload = token
    if kind == _STRING:
        return isinstance(value, str) and _string_matches(chunk, payload, value, pythonic)
    if kind == _NUM:
        return _number_matches(payload, value)
    if kind == _LIT:
        return value is payload
    return False


def check(chunk: str, value: Any) -> Repair | None:
    """The ``Repair`` that turns ``chunk`` into ``value`` under the rules above, or None when
    ``value`` is not faithful to ``chunk``."""
    found = tokens(chunk)
    stream = _stream(value)
    if found is None or stream is None:
        return None
    pythonic = bool(found) and found[-1][0] == _PY
    if pythonic:
        found.pop()
    count = len(found)
    i = 0
    closed: list[int] = []
    depths: list[int] = []
    for kind, payload in stream:
        if i >= count:
            # The text stopped here: only closers may follow, after a complete value.
            if kind not in "}]" or not found or not _completes(found[-1]):
                return None
            closed.append(payload[0])
            depths.append(payload[1])
            continue
        token = found[i]
        if token[0] == "," and kind in "}]" and i + 1 < count and found[i + 1][0] == kind:
            i += 1  # a trailing comma before the closer
            token = found[i]
        if kind in _PUNCT:
            if token[0] != kind:
                return None
        elif kind == _KEY:
            if token[0] == _STRING:
                if not _string_matches(chunk, token[1], payload, pythonic):
                    return None
            elif not (
                token[0] == _WORDK
                and token[1] == payload
                and i + 1 < count
                and found[i + 1][0] == ":"
            ):
                return None
        elif not _value_matches(chunk, token, payload, pythonic):
            return None
        i += 1
    if i != count:
        return None  # text the value does not account for
    if not closed:
        return NOTHING_CLOSED
    return Repair(frozenset(closed), max(depths))


def holds_closed(value: Any, repair: Repair, limit: int = 100_000) -> bool:
    """Whether ``value`` is, or contains, a container the repair closed: a value the text
    stopped inside of, so it may be missing items (``["a", "b"`` of ``["a", "b", "c"]``)."""
    if not repair.closed_ids:
        return False
    todo = [value]
    seen = 0
    while todo and seen < limit:
        item = todo.pop()
        seen += 1
        if isinstance(item, dict | list):
            if id(item) in repair.closed_ids:
                return True
            todo.extend(item.values() if isinstance(item, dict) else item)
    return bool(todo)  # too big to check: treat as cut

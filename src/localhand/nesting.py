"""How deeply a value nests, measured without recursion, and cutting it down to a limit.

A model can send tool arguments nested hundreds of levels deep (``{"path": [[[[...]]]]}``).
Much of what handles arguments recurses (pydantic, ``json.dumps``, ``copy.deepcopy``, the token
estimate), and Python's recursion limit turns that into a ``RecursionError`` that ends the
run with a traceback. So the parser cuts such a value where it stands (``cut_deep``: the
history that shares it is cut too) and the registry refuses the call with an error the model
can read (``depth``). Both walk with an explicit stack, never by recursion. A server's JSON
nested deeper than ``json`` itself can read is cut as it is read (``json_loads``,
``decode_too_deep``), without recursion either.

Values are trees, as JSON gives them: a structure that shares a sub-list many times over is
walked once per reference.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_DEPTH = 32
"""Deepest nesting accepted in a tool call's arguments; the arguments object is level 1."""

_COUNTED_UP_TO = 1_000_000
"""``depth`` stops counting here: only a structure that contains itself gets this far."""
_CONTAINERS = (dict, list, tuple)


class Cut(str):
    """What stands where a value was cut off for nesting too deep: text that says so, which
    keeps the depth of what it replaced. A ``str``, so JSON, copies and the history take it
    as it is."""

    depth: int

    def __new__(cls, depth: int) -> Cut:
        self = super().__new__(cls, f"[cut: {depth} more levels of nesting]")
        self.depth = depth
        return self

    def __reduce__(self) -> tuple[type[Cut], tuple[int]]:
        return Cut, (self.depth,)  # a copy is a Cut too, with its depth


def depth(value: Any) -> int:
    """Levels of nesting in ``value``: 0 for a scalar, 1 for a flat list or dict, and so on; a
    ``Cut`` counts as deep as what it replaced."""
    if isinstance(value, Cut):
        return value.depth
    if not isinstance(value, _CONTAINERS):
        return 0
    deepest = 1
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, level = stack.pop()
        for child in node.values() if isinstance(node, dict) else node:
            if isinstance(child, _CONTAINERS):
                if level >= deepest:
                    deepest = level + 1
                    if deepest >= _COUNTED_UP_TO:
                        return deepest
                stack.append((child, level + 1))
            elif isinstance(child, Cut) and level + child.depth > deepest:
                deepest = level + child.depth
    return deepest


def cut_deep(value: Any, limit: int = MAX_DEPTH) -> int:
    """The depth of ``value``; when that is more than ``limit``, every container at level
    ``limit + 1`` is replaced, in place, by a ``Cut`` that keeps its depth, so that the value
    nests at most ``limit`` levels plus the cuts. Tuples, which JSON never makes, are left
    as they are (they cannot be changed in place)."""
    total = depth(value)
    if total <= limit:
        return total
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, level = stack.pop()
        pairs = list(node.items() if isinstance(node, dict) else enumerate(node))
        for key, child in pairs:
            if not isinstance(child, _CONTAINERS):
                continue
            if level < limit:
                stack.append((child, level + 1))
            elif not isinstance(node, tuple):
                node[key] = Cut(depth(child))
    return total


def restore_cuts(value: Any, marker: str) -> Any:
    """``value`` with each string ``marker + digits`` (put in by a loader that could not read
    deeper) replaced by a ``Cut`` of that depth, in place; returns the value."""
    if isinstance(value, str):
        return _as_cut(value, marker)
    stack = [value] if isinstance(value, dict | list) else []
    while stack:
        node = stack.pop()
        pairs = list(node.items() if isinstance(node, dict) else enumerate(node))
        for key, child in pairs:
            if isinstance(child, str) and child.startswith(marker):
                node[key] = _as_cut(child, marker)
            elif isinstance(child, dict | list):
                stack.append(child)
    return value


def _as_cut(text: str, marker: str) -> Any:
    digits = text[len(marker) :]
    return Cut(int(digits)) if text.startswith(marker) and digits.isdigit() else text


def json_loads(text: str | bytes) -> Any:
    """``json.loads`` for what a server sends: a value nested too deep for ``json`` (about
    1,000 levels: a ``RecursionError``) comes back with its deep part cut instead (see
    ``Cut``), so a tool call that deep reaches the registry, which refuses it with words the
    model can read. ``ValueError`` when the text is not JSON."""
    try:
        return json.loads(text)
    except RecursionError:
        chunk = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
        found = decode_too_deep(chunk.strip())
        if found is None:
            raise ValueError("JSON nested too deep to read, and not well formed") from None
        return found[0]


# json's decoder recurses once per level and gives up near Python's recursion limit (about
# 1000 levels). A call nested deeper is still a call: it is read with its deepest containers
# replaced by a marker, which the registry turns into an error the model can read ("nested N
# levels deep"), where failing to read it would only say "malformed", or take it for prose.
_KEEP_LEVELS = 64
_CUT_MARKER = "\x00localhand-cut:"
_CUT_TOKEN = re.compile(r'[{}\[\]"]')
_CUT_STRING = re.compile(r'"[^"\\]*+(?:\\.[^"\\]*+)*+"', re.S)
# Raw control characters allowed, as the lenient loaders of ``parsing.json_load`` allow them.
_DECODER = json.JSONDecoder(strict=False)


def decode_too_deep(chunk: str) -> tuple[Any, int] | None:
    """``(value, end)`` for the JSON value at the start of ``chunk`` that nests too deep for
    ``json``: containers below ``_KEEP_LEVELS`` become ``Cut`` markers. None when it is not
    JSON (or does not close)."""
    cut = _cut_deep_text(chunk)
    if cut is None:
        return None
    try:
        value, end = _DECODER.raw_decode(cut)
    except Exception:
        return None
    # Everything cut lies inside the value, so the text after it is where it was, shifted.
    return restore_cuts(value, _CUT_MARKER), end + len(chunk) - len(cut)


def _cut_deep_text(text: str) -> str | None:
    """``text`` up to the end of its first value, every container nested deeper than
    ``_KEEP_LEVELS`` replaced by a marker string holding its depth; linear, no recursion."""
    pieces: list[str] = []
    kept = depth = deepest = 0
    start = -1
    position = 0
    while (token := _CUT_TOKEN.search(text, position)) is not None:
        at = token.start()
        if text[at] == '"':
            string = _CUT_STRING.match(text, at)
            if string is None:
                return None
            position = string.end()
            continue
        position = at + 1
        if text[at] in "{[":
            depth += 1
            if depth == _KEEP_LEVELS + 1:
                start, deepest = at, depth
            deepest = max(deepest, depth)
            continue
        depth -= 1
        if depth == _KEEP_LEVELS and start >= 0:
            marker = json.dumps(f"{_CUT_MARKER}{deepest - _KEEP_LEVELS}")
            pieces += (text[kept:start], marker)
            kept, start = position, -1
        if depth <= 0:
            return "".join(pieces) + text[kept:]
    return None

"""Lark grammars (llguidance's dialect) for the plain JSON schemas a per-turn reply schema uses
(the tiny policy's, ``localhand.run.tiny``), written here rather than by llguidance's JSON
compiler, for three reasons:

- the reply must come out exactly as ``json.dumps`` writes a call, which is how the history
  shows the model its earlier calls (``{"name": ..., "arguments": {...}}``, in that order,
  one space after ``:`` and ``,``): a tiny model follows what it has seen, and writing the
  tool's name first means it chooses the tool before its arguments;
- ``"not": {"enum": [...]}`` (a path that is none of the files that exist: a new file; a
  new text other than the old one: an edit that changes something) is a lexeme's negation
  here (llguidance's ``&`` and ``~``), which its JSON compiler does not take;
- strings of bounded length (1,500 characters): a tiny model sometimes repeats a word
  without end, and a bound closes the string with a call that can run, where the token limit
  would cut it off and cost a nudge.

The subset: ``anyOf``; objects whose properties are all required, written in the order given,
no others allowed; strings, string enums, and strings of ``PATH_PATTERN``, optionally with
``"not": {"enum": [...]}``. ``json_lark`` returns ``None`` for anything else, and the caller
uses llguidance's JSON compiler.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

PATH_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.-]*(/[A-Za-z0-9_][A-Za-z0-9_.-]*)*$"
"""A relative path of plain names: no absolute path, no ``..``, no spaces."""

STRING_MAX = 1500
_TERMINALS = rf"""
STRING: /"([^"\\\x00-\x1F\x7F]|\\(["\\\/bfnrt]|u[0-9a-fA-F]{{4}})){{0,{STRING_MAX}}}"/
PATH: /"[A-Za-z0-9_][A-Za-z0-9_.\-]*(\/[A-Za-z0-9_][A-Za-z0-9_.\-]*)*"/
"""


class Unsupported(ValueError):
    """The schema uses something outside the subset."""


def literal(text: str) -> str:
    """``text`` as a Lark string literal (JSON's escapes are Lark's)."""
    return json.dumps(text, ensure_ascii=False)


def json_lark(schema: Mapping[str, Any]) -> str | None:
    """The grammar of ``schema``, or ``None`` when it is outside the subset."""
    extra: list[str] = []
    try:
        root = _value(schema, extra)
    except Unsupported:
        return None
    return "\n".join([f"start: {root}", *extra]) + _TERMINALS


def _value(schema: Mapping[str, Any], extra: list[str]) -> str:
    if "anyOf" in schema:
        if set(schema) != {"anyOf"} or not schema["anyOf"]:
            raise Unsupported("anyOf with more keys")
        return "(" + " | ".join(_value(branch, extra) for branch in schema["anyOf"]) + ")"
    kind = schema.get("type")
    if kind == "object":
        return _object(schema, extra)
    if kind != "string":
        raise Unsupported(f"type {kind}")
    if "enum" in schema:
        values = schema["enum"]
        if not values or not all(isinstance(v, str) for v in values):
            raise Unsupported("an enum of other than strings")
        return "(" + " | ".join(literal(json.dumps(v, ensure_ascii=False)) for v in values) + ")"
    base = "STRING"
    if "pattern" in schema:
        if schema["pattern"] != PATH_PATTERN:
            raise Unsupported("a pattern")
        base = "PATH"
    elif set(schema) - {"type", "description", "not"}:
        raise Unsupported("a string constraint")
    if "not" not in schema:
        return base
    taken = schema["not"].get("enum") if set(schema["not"]) == {"enum"} else None
    if not isinstance(taken, list) or not all(isinstance(v, str) for v in taken):
        raise Unsupported("a negation other than of strings")
    if not taken:
        return base
    # A lexeme that is the base one and none of those: llguidance's lexeme algebra.
    name = f"EXCEPT{len(extra)}"
    others = " | ".join(literal(json.dumps(v, ensure_ascii=False)) for v in taken)
    extra.append(f"{name}: {base} & ~({others})")
    return name


def _object(schema: Mapping[str, Any], extra: list[str]) -> str:
    props: Mapping[str, Any] = schema.get("properties") or {}
    if (
        list(schema.get("required") or []) != list(props)
        or schema.get("additionalProperties", True) is not False
    ):
        raise Unsupported("optional or additional properties")
    parts = []
    for index, (key, value) in enumerate(props.items()):
        opening = "{" if index == 0 else ", "
        parts += [literal(f"{opening}{json.dumps(key)}: "), _value(value, extra)]
    parts.append(literal("}" if props else "{}"))
    return " ".join(parts)

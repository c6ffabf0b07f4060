"""GBNF for the plain JSON schemas of the tiny view (``_tiny``), written here rather than by
llama-cpp-python's converter, for three reasons:

- its converter escapes an enum value's quotes and backslashes wrongly (a line of code such as
  ``print("hi")`` as an ``old_text`` choice makes a grammar llama.cpp cannot parse);
- the reply must come out exactly as ``json.dumps`` writes a call, which is how the history
  shows the model its earlier calls (``{"name": ..., "arguments": {...}}``, in that order,
  one space after ``:`` and ``,``): a tiny model follows what it has seen, and writing the
  tool's name first means it chooses the tool before its arguments;
- no optional whitespace: one fewer choice at every step for a model that needs few;
- strings of bounded length (1,500 characters; an edit's new text, 300 past where it leaves
  the old): a tiny model sometimes repeats a word without end, and a bound closes the string
  with a call that can run, where the token limit would cut it off and cost a nudge.

The subset: ``anyOf``; objects whose properties are all required, written in the order given,
no others allowed; strings, string enums, and strings of ``PATH_PATTERN``, optionally with
``"not": {"enum": [...]}`` (a path that is none of those: a new file); a string other than one
given string (``"not": {"enum": [one]}``: an edit's new text, not its old text). ``json_gbnf``
returns ``None`` for anything else, and the caller uses the general converter.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

PATH_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.-]*(/[A-Za-z0-9_][A-Za-z0-9_.-]*)*$"
"""A relative path of plain names: no absolute path, no ``..``, no spaces."""

_RULES = r"""
string ::= "\"" char{0,1500} "\""
tail ::= char{0,300}
char ::= [^"\\\x00-\x1F\x7F] | "\\" escape
escape ::= ["\\/bfnrt] | "u" hex hex hex hex
hex ::= [0-9a-fA-F]
path ::= "\"" name ("/" name)* "\""
name ::= [A-Za-z0-9_] [A-Za-z0-9_.-]*
"""


class Unsupported(ValueError):
    """The schema uses something outside the subset."""


def literal(text: str) -> str:
    """``text`` as a GBNF string literal (llama.cpp's grammar parser reads ``\\\\`` and
    ``\\"`` as escapes; everything else, UTF-8 included, may stand as it is)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def json_gbnf(schema: Mapping[str, Any]) -> str | None:
    """The grammar of ``schema``, or ``None`` when it is outside the subset."""
    try:
        root = _value(schema)
    except Unsupported:
        return None
    return f"root ::= {root}\n{_RULES}"


def _value(schema: Mapping[str, Any]) -> str:
    if "anyOf" in schema:
        if set(schema) != {"anyOf"} or not schema["anyOf"]:
            raise Unsupported("anyOf with more keys")
        return "(" + " | ".join(_value(branch) for branch in schema["anyOf"]) + ")"
    kind = schema.get("type")
    if kind == "object":
        return _object(schema)
    if kind != "string":
        raise Unsupported(f"type {kind}")
    if "enum" in schema:
        values = schema["enum"]
        if not values or not all(isinstance(v, str) for v in values):
            raise Unsupported("an enum of other than strings")
        texts = (literal(json.dumps(v, ensure_ascii=False)) for v in values)
        return "(" + " | ".join(texts) + ")"
    if "pattern" in schema:
        if schema["pattern"] != PATH_PATTERN:
            raise Unsupported("a pattern")
        taken = (schema.get("not") or {}).get("enum") or []
        return f'"\\"" {_path_except(taken)} "\\""' if taken else "path"
    if "not" in schema:  # a string other than the given ones: an edit that changes something
        taken = schema["not"].get("enum") if set(schema["not"]) == {"enum"} else None
        if not isinstance(taken, list) or len(taken) != 1 or set(schema) != {"type", "not"}:
            raise Unsupported("a negation other than of one string")
        return f'"\\"" {_string_except(json.dumps(taken[0], ensure_ascii=False)[1:-1])} "\\""'
    if set(schema) - {"type", "description"}:
        raise Unsupported("a string constraint")
    return "string"


def _object(schema: Mapping[str, Any]) -> str:
    props: Mapping[str, Any] = schema.get("properties") or {}
    if (
        list(schema.get("required") or []) != list(props)
        or schema.get("additionalProperties", True) is not False
    ):
        raise Unsupported("optional or additional properties")
    parts = [literal("{")]
    for index, (key, value) in enumerate(props.items()):
        sep = ", " if index else ""
        parts += [literal(f"{sep}{json.dumps(key)}: "), _value(value)]
    parts.append(literal("}"))
    return " ".join(parts)


_PATH_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-/"


def _path_except(taken: list[str]) -> str:
    """A path other than each of ``taken``: a walk down the trie of the taken paths where,
    at each point, the path may leave the trie (any other character, then any path) or end,
    unless what it has spelled so far is a taken path."""
    trie: dict[str, Any] = {}
    for path in taken:
        node = trie
        for char in path:
            node = node.setdefault(char, {})
        node[""] = {}  # a taken path ends here
    return _node(trie, first=True)


def _node(node: dict[str, Any], *, first: bool = False) -> str:
    chars = _PATH_CHARS[:-3] if first else _PATH_CHARS  # a path starts with a plain character
    others = [c for c in chars if c not in node]
    options = [f"{literal(char)} {_node(child)}" for char, child in node.items() if char]
    if others:
        options.append(_char_class(others) + " [A-Za-z0-9_./-]*")
    body = "(" + " | ".join(options) + ")"
    return body if first or "" in node else body + "?"


def _char_class(chars: list[str]) -> str:
    return "[" + "".join("\\" + c if c in "-]\\^" else c for c in chars) + "]"


_UNIT = re.compile(r"\\u[0-9a-fA-F]{4}|\\.|.", re.DOTALL)


def _string_except(encoded: str) -> str:
    """The inside of a JSON string other than ``encoded`` (itself JSON-encoded): as it spells
    ``encoded``, at each point it may stop, or take another character and then any (an
    escape decoding to the same character is let through: rare, and the tool says so)."""
    units = _UNIT.findall(encoded)
    expr = "char tail"  # all of it spelled: at least one more character makes it another
    for unit in reversed(units):
        if unit.startswith("\\"):
            other = '[^"\\\\\\x00-\\x1F]'  # a plain character where the escape was
        else:
            other = f'([^"\\\\{_class_char(unit)}\\x00-\\x1F] | "\\\\" escape)'
        expr = f"({literal(unit)} {expr} | {other} tail)?"
    return expr


def _class_char(char: str) -> str:
    return "\\" + char if char in "-]\\^" else char

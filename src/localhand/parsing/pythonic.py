"""Python-style calls: ``[get_weather(city="Paris"), search(q='x')]``.

Llama 3.2 (1B/3B) and Llama 4 emit a Python list of calls (vLLM's ``pythonic`` parser);
Llama 3.1 built-in tools write ``brave_search.call(query="...")`` after ``<|python_tag|>``;
Gemma prompts commonly ask for calls in a ``tool_code`` block, sometimes as ``print(f(...))``.
The text is parsed with ``ast`` (a real grammar, linear), never evaluated.
"""

from __future__ import annotations

import ast
from typing import Any

from localhand.parsing.faithful import LITERALS
from localhand.parsing.shapes import RawCall

MAX_PYTHONIC_CHARS = 200_000


class _NotLiteral(Exception):
    pass


def _literal(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name) and node.id in LITERALS:
        return LITERALS[node.id]
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return [_literal(element) for element in node.elts]
    if isinstance(node, ast.Dict):
        if any(key is None for key in node.keys):
            raise _NotLiteral
        return {_key(k): _literal(v) for k, v in zip(node.keys, node.values, strict=True)}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        operand = _literal(node.operand)
        if isinstance(operand, int | float) and not isinstance(operand, bool):
            return -operand if isinstance(node.op, ast.USub) else operand
    raise _NotLiteral


def _key(node: ast.AST | None) -> Any:
    value = _literal(node) if node is not None else None
    if not isinstance(value, str | int | float | bool) and value is not None:
        raise _NotLiteral
    return value if isinstance(value, str) else str(value)


def _dotted(node: ast.AST) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    name = ".".join(reversed(parts))
    # Llama 3.1 built-ins: "brave_search.call(...)" calls the tool "brave_search".
    return name[: -len(".call")] if name.endswith(".call") else name


def _call(node: ast.AST) -> RawCall | None:
    # print(f(x)) is how Gemma-style tool_code blocks often wrap a call.
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "print"
        and len(node.args) == 1
        and not node.keywords
        and isinstance(node.args[0], ast.Call)
    ):
        node = node.args[0]
    if not isinstance(node, ast.Call):
        return None
    name = _dotted(node.func)
    if name is None:
        return None
    try:
        arguments: dict[str, Any] = {}
        for keyword in node.keywords:
            if keyword.arg is None:  # **kwargs
                spread = _literal(keyword.value)
                if not isinstance(spread, dict):
                    return None
                arguments.update(spread)
            else:
                arguments[keyword.arg] = _literal(keyword.value)
        positional = [_literal(arg) for arg in node.args]
    except _NotLiteral:
        return None
    return RawCall(name, arguments, positional=positional)


def parse_pythonic(source: str) -> list[RawCall] | None:
    """The calls in ``source`` when it is nothing but calls (a list of calls, or call
    statements one per line); None otherwise."""
    text = source.strip()
    if not text or len(text) > MAX_PYTHONIC_CHARS or "(" not in text:
        return None
    try:
        module = ast.parse(text, mode="exec")
    except Exception:  # SyntaxError, ValueError (NUL bytes), RecursionError, MemoryError
        return None
    nodes: list[ast.AST] = []
    for statement in module.body:
        if not isinstance(statement, ast.Expr):
            return None
        value = statement.value
        if isinstance(value, ast.List | ast.Tuple):
            nodes.extend(value.elts)
        else:
            nodes.append(value)
    calls: list[RawCall] = []
    for node in nodes:
        call = _call(node)
        if call is None:
            return None
        calls.append(call)
    return calls or None


def starts_like_call(text: str, pos: int) -> bool:
    """Whether ``text[pos:]`` begins with ``identifier(`` (bounded look, for candidates)."""
    limit = min(len(text), pos + 130)
    i = pos
    while i < limit and text[i] in " \t\n":
        i += 1
    if i >= limit or not (text[i].isalpha() or text[i] == "_"):
        return False
    while i < limit and (text[i].isalnum() or text[i] in "_."):
        i += 1
    return i < limit and text[i] == "("

"""The message side: accept the shapes a reply arrives in, read native ``tool_calls``, and
turn a found call into a ``ToolCall`` (name resolved, arguments coerced)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from localhand.parsing.coerce import coerce_arguments
from localhand.parsing.extract import SNIPPET_CHARS
from localhand.parsing.shapes import RawCall, ToolIndex, arguments_from
from localhand.types import ToolCall


def text_of(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # OpenAI content parts
        parts = [p.get("text", "") if isinstance(p, Mapping) else p for p in value]
        return "".join(p for p in parts if isinstance(p, str))
    return ""


def as_mapping(message: Any) -> Mapping[str, Any]:
    if isinstance(message, Mapping):
        return message
    if isinstance(message, str):
        return {"content": message}
    for method in ("to_message", "model_dump"):  # localhand Reply, ollama/openai pydantic
        convert = getattr(message, method, None)
        if callable(convert):
            converted = convert()
            if isinstance(converted, Mapping):
                extra = getattr(message, "done_reason", None)
                return {**converted, "done_reason": extra} if extra else converted
    return {}


def native_calls(tool_calls: Any, index: ToolIndex) -> tuple[list[ToolCall], list[str]]:
    calls: list[ToolCall] = []
    malformed: list[str] = []
    if not isinstance(tool_calls, Iterable) or isinstance(tool_calls, str | bytes | Mapping):
        return calls, malformed
    for item in tool_calls:
        if isinstance(item, ToolCall):
            calls.append(finish(RawCall(item.name, dict(item.arguments), item.id), index))
            continue
        entry = as_mapping(item)
        inner = entry.get("function")
        function = inner if isinstance(inner, Mapping) else entry
        name = function.get("name")
        raw = function.get("arguments", function.get("parameters"))
        arguments = arguments_from(raw)
        call_id = entry.get("id") if isinstance(entry.get("id"), str) else None
        if not isinstance(name, str) or not name.strip() or arguments is None:
            malformed.append(repr(dict(entry))[:SNIPPET_CHARS])
            continue
        calls.append(finish(RawCall(name.strip(), arguments, call_id), index))
    return calls, malformed


def finish(raw: RawCall, index: ToolIndex) -> ToolCall:
    """The call with its name resolved against the offered tools and its arguments coerced."""
    name = index.resolve(raw.name) or raw.name.strip()
    arguments = dict(raw.arguments or {})
    if raw.positional:
        # f("a.py", 3): map positional values onto the schema's parameter order.
        for key, value in zip(index.property_names(name), raw.positional, strict=False):
            arguments.setdefault(key, value)
    return ToolCall(name, coerce_arguments(arguments, index.schema(name)), raw.call_id)

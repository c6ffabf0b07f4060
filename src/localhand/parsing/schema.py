"""JSON schemas of "one valid call", for constrained decoding.

Ollama's ``format`` (and llama.cpp's ``json_schema``/grammar, and vLLM's guided decoding)
compile a JSON schema into a grammar, so the next reply is a valid call by construction. The
call shape is the one the parser reads first: ``{"name": ..., "arguments": {...}}``. Each tool
is its own branch so that a name can only come with its own arguments (``anyOf`` is supported by
llama.cpp's json-schema-to-grammar, which Ollama uses). Send ``format`` without ``tools``:
Ollama ignores ``format`` when tools are present. ``parse_tool_calls`` reads the reply back as
bare JSON (source ``json``), or ``{"final_answer": ...}`` as a final answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from localhand.parsing.shapes import ToolIndex

FINAL_ANSWER_KEY = "final_answer"


def _arguments_schema(parameters: Mapping[str, Any]) -> dict[str, Any]:
    schema = dict(parameters) if parameters else {}
    if schema.get("type") != "object":
        schema["type"] = "object"
    schema.setdefault("properties", {})
    return schema


def call_branch(name: str, parameters: Mapping[str, Any]) -> dict[str, Any]:
    """A call of ``name`` whose arguments follow ``parameters`` (an object schema)."""
    return {
        "type": "object",
        "properties": {
            # An enum of one rather than "const": every grammar converter supports enum.
            "name": {"type": "string", "enum": [name]},
            "arguments": _arguments_schema(parameters),
        },
        "required": ["name", "arguments"],
        "additionalProperties": False,
    }


def call_schema(tools: Iterable[Any] | None, *, allow_final_answer: bool = False) -> dict[str, Any]:
    """A JSON schema that only one valid call to one of ``tools`` satisfies.

    ``{"name": <enum>, "arguments": <that tool's parameters>}``, one ``anyOf`` branch per tool.
    With ``allow_final_answer`` a further branch ``{"final_answer": "<text>"}`` lets the model
    finish instead (for an embedded backend that always decodes under a grammar); the parser
    reads that object back as a final answer. With no tools and no final answer the schema is
    just a call with any name, so the caller always gets something usable.
    """
    index = ToolIndex(tools)
    branches = [call_branch(name, params) for name, params in index.params.items()]
    if allow_final_answer:
        branches.append(
            {
                "type": "object",
                "properties": {FINAL_ANSWER_KEY: {"type": "string"}},
                "required": [FINAL_ANSWER_KEY],
                "additionalProperties": False,
            }
        )
    if not branches:
        return {
            "type": "object",
            "properties": {"name": {"type": "string"}, "arguments": {"type": "object"}},
            "required": ["name", "arguments"],
        }
    if len(branches) == 1:
        return branches[0]
    return {"anyOf": branches}

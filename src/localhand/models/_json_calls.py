"""Tool calls as one JSON object decoded under a schema, for models and servers without native
tool calling (the embedded backend always; the OpenAI-compatible one in ``schema`` mode).

The reply is constrained to ``call_schema(tools, allow_final_answer=True)``: either
``{"name": <a tool's name>, "arguments": {...}}`` or ``{"final_answer": "..."}``. So that the
model sees one consistent format, the history is rewritten in that same format: earlier calls
as that JSON in the assistant's turn, tool results as user turns. Only ``system``, ``user``
and ``assistant`` roles remain, alternating, because many chat templates (Gemma's among them)
raise on any other role or on two turns of the same role in a row.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from localhand.models._ollama_wire import arguments
from localhand.parsing import call_schema
from localhand.types import Message, ToolCall

FINAL_ANSWER = "final_answer"
TOOL_TEXT_MARK = "The tools you can call (the server does not show them to you otherwise):"
"""Opens ``run.tool_text``'s description; ``plain_messages`` cuts it and writes its own."""


def reply_schema(tools: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The schema every constrained reply follows: one valid call, or a final answer."""
    return call_schema(tools, allow_final_answer=True)


def describe_tools(tools: Sequence[Mapping[str, Any]]) -> str:
    """The tools in a few lines, for the system prompt: the template will not render them."""
    lines = [
        "Reply with exactly one JSON object. To use a tool, write its name and arguments, "
        'for example {"name": "read_file", "arguments": {"path": "notes.txt"}}. When the '
        'task is done, write {"final_answer": "what you did"}. The tools:'
    ]
    for tool in tools:
        function = tool.get("function", tool)
        lines.append(f"- {signature(function)}: {function.get('description', '')}")
    return "\n".join(lines)


def signature(function: Mapping[str, Any]) -> str:
    """A tool's name and parameters, ``name(path: string, limit?: integer)``: ``?`` marks one
    that may be left out."""
    params = function.get("parameters") or {}
    required = set(params.get("required") or [])
    args = ", ".join(
        f"{name}{'' if name in required else '?'}: {spec.get('type', 'any')}"
        for name, spec in (params.get("properties") or {}).items()
    )
    return f"{function.get('name')}({args})"


def call_text(name: str, args: Any) -> str:
    return json.dumps({"name": name, "arguments": arguments(args)}, ensure_ascii=False)


def plain_messages(
    messages: Sequence[Message],
    tools: Sequence[Mapping[str, Any]] | None,
    doc: str | None = None,
) -> list[dict[str, str]]:
    """The conversation with only system/user/assistant text turns, merged to alternate; with
    tools, ``doc`` (by default ``describe_tools``) closes the system turn."""
    out: list[dict[str, str]] = []
    for message in messages:
        role = str(message.get("role") or "user")
        content = str(message.get("content") or "")
        if role == "system" and tools and TOOL_TEXT_MARK in content:
            # The prompt describes the tools for native calls; here they are JSON, said below.
            content = content.split(TOOL_TEXT_MARK)[0].rstrip()
        if role == "tool":
            name = message.get("tool_name") or "the tool"
            role, content = "user", f"Result of {name}:\n{content}"
        elif role == "assistant":
            calls = [
                raw.get("function", raw)
                for raw in message.get("tool_calls") or []
                if isinstance(raw, Mapping)
            ]
            if calls:
                texts = [call_text(str(c.get("name")), c.get("arguments")) for c in calls]
                content = "\n".join(texts)
            elif tools and content and not content.lstrip().startswith("{"):
                content = json.dumps({FINAL_ANSWER: content}, ensure_ascii=False)
        elif role != "system":
            role = "user"
        if out and out[-1]["role"] == role:
            out[-1]["content"] += "\n\n" + content
        else:
            out.append({"role": role, "content": content})
    if tools and doc != "":  # "": the system turn describes them already (a policy's)
        doc = describe_tools(tools) if doc is None else doc
        if out and out[0]["role"] == "system":
            out[0]["content"] += "\n\n" + doc
        else:
            out.insert(0, {"role": "system", "content": doc})
    return out


def decode(text: str) -> tuple[str, tuple[ToolCall, ...]]:
    """A constrained reply as (final text, calls). Anything else, such as JSON cut off at the
    token limit, comes back as it was for the parser to judge."""
    try:
        data = json.loads(text)
    except ValueError:
        return text, ()
    if isinstance(data, dict) and isinstance(data.get(FINAL_ANSWER), str) and len(data) == 1:
        return data[FINAL_ANSWER], ()
    names_a_tool = isinstance(data, dict) and isinstance(data.get("name"), str)
    if names_a_tool and set(data) <= {"name", "arguments"}:
        return "", (ToolCall(data["name"], arguments(data.get("arguments"))),)
    return text, ()

"""An MCP tool result as the text a local model reads.

Text blocks are kept as they are; structured content is added as compact JSON unless a text
block already says the same (servers usually send both); images, audio and binary resources
are described in a line, never dropped without a word, since the model should know that
something came back that it cannot see. ``isError`` makes a failed call, which the model
reads and can correct. The whole is capped like ``run_command``'s output (head and tail) so
one result cannot take a small model's context window.

Blocks are read by their ``type`` attribute, so this module needs nothing of the SDK.
"""

from __future__ import annotations

import json
from typing import Any

from localhand.tools.limits import ToolLimits
from localhand.types import ToolResult

_LIMITS = ToolLimits()
HEAD_CHARS = _LIMITS.command_tail_bytes
"""Characters kept from a result's start: where a tool's answer usually is."""
TAIL_CHARS = _LIMITS.command_head_bytes
"""Characters kept from its end. Together the same 16,000 as ``run_command`` keeps."""


def tool_result(result: Any, *, server: str, tool: str) -> ToolResult:
    """``result`` (an MCP ``CallToolResult``) as a localhand ``ToolResult``."""
    parts = [describe(block) for block in (getattr(result, "content", None) or [])]
    structured = getattr(result, "structured_content", None)
    if structured is not None and not _already_said(structured, result):
        shown = _json(structured)
        parts.append(f"[structured content]\n{shown}" if parts else shown)
    text = "\n".join(part for part in parts if part)
    failed = bool(getattr(result, "is_error", False))
    if not text:
        text = (
            f"{tool} (MCP server '{server}') failed without a message" if failed else "(no output)"
        )
    return ToolResult(cap(text), ok=not failed)


def describe(block: Any) -> str:
    """One content block as text (an image or a binary resource as a line about it)."""
    kind = getattr(block, "type", None)
    if kind == "text":
        return str(getattr(block, "text", ""))
    if kind in ("image", "audio"):
        mime = getattr(block, "mime_type", None) or "unknown type"
        size = _size(getattr(block, "data", "") or "")
        return f"[{kind}: {mime}, {size}; not shown, since the model here reads text only]"
    if kind == "resource_link":
        uri = getattr(block, "uri", "")
        named = (getattr(block, "name", None), getattr(block, "mime_type", None))
        about = ", ".join(str(item) for item in named if item)
        note = getattr(block, "description", None)
        return (
            f"[resource link: {uri}{f' ({about})' if about else ''}{f': {note}' if note else ''}]"
        )
    if kind == "resource":
        resource = getattr(block, "resource", None)
        uri = getattr(resource, "uri", "")
        mime = getattr(resource, "mime_type", None)
        text = getattr(resource, "text", None)
        if isinstance(text, str):
            return f"[resource {uri}{f' ({mime})' if mime else ''}]\n{text}"
        size = _size(getattr(resource, "blob", "") or "")
        return f"[resource {uri}: {mime or 'binary'}, {size}; binary data, not shown]"
    return f"[{kind or 'unknown'} content; not shown]"


def cap(text: str, head: int = HEAD_CHARS, tail: int = TAIL_CHARS) -> str:
    """``text`` cut to its first ``head`` and last ``tail`` characters, saying how much went."""
    if len(text) <= head + tail:
        return text
    cut = len(text) - head - tail
    return (
        f"{text[:head]}\n[... {cut:,} characters cut: the result had {len(text):,}. Ask the "
        f"tool for less, e.g. a narrower query or fewer items ...]\n{text[-tail:]}"
    )


def _already_said(structured: Any, result: Any) -> bool:
    """Whether a text block holds ``structured`` as JSON (the spec asks servers to send it)."""
    for block in getattr(result, "content", None) or []:
        if getattr(block, "type", None) != "text":
            continue
        try:
            if json.loads(getattr(block, "text", "")) == structured:
                return True
        except (ValueError, TypeError, RecursionError):
            continue
    return False


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    except (TypeError, ValueError, RecursionError):
        return str(value)


def _size(base64_data: str) -> str:
    size = len(base64_data) * 3 // 4
    if size < 1024:
        return f"{size} bytes"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KiB"
    return f"{size / 1024 / 1024:.1f} MiB"


__all__ = ["cap", "describe", "tool_result"]

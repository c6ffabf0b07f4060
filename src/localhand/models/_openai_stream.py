"""Reading a streamed answer from ``/v1/chat/completions`` into chunks, for
``OpenAICompatModel.stream`` and ``stream_reply``; the transport sends the request, splits the
server-sent events (``_lines.sse_events``) and retries (``models.transport``).

The wire: server-sent events, each ``data: {...}`` a ``chat.completion.chunk`` whose
``choices[0].delta`` has ``content`` (thinking as ``reasoning_content`` or ``reasoning``), a
``finish_reason`` on the last choice chunk (``length`` when cut off), with
``stream_options.include_usage`` one more chunk with ``usage`` and no choices, then
``data: [DONE]``. A failure after the 200 comes as an event ``{"error": {...}}`` (vLLM, newer
llama-server), an ``event: error``, or llama-server's own ``error: {...}`` line (a field the
SSE spec would ignore, so the SDK did): all are raised as errors. A stream that ends without
a finish reason was cut short, and is reported so, not taken as a complete answer.

Tool calls come in pieces: the first delta of a call brings its id and name, the next ones
more of its arguments' text, handed out as ``arguments`` so that a loop inside them can be
seen (``models.watch``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from localhand.errors import BadResponse
from localhand.models._common import Garbled
from localhand.models._openai_wire import (
    THINK_FIELDS,
    OpenAIWire,
    content_text,
    context_full,
    error_text,
)
from localhand.models._served_figures import openai_usage
from localhand.models.base import StreamChunk
from localhand.nesting import json_loads


def read_chunks(
    events: Iterator[tuple[str, str]],
    wire: OpenAIWire,
    calls: dict[int, dict[str, Any]] | None = None,
) -> Iterator[StreamChunk]:
    """The stream's events as chunks: deltas with text (and, when ``calls`` is given, pieces
    of tool calls' arguments, the calls put together in it by index), then the final one."""
    try:
        yield from _chunks(events, wire, calls)
    except ValueError as exc:  # an event that is not JSON, or not UTF-8
        why = f"The server at {wire.base_url} streamed something that is not JSON: {exc}"
        raise Garbled(why) from None


def _chunks(
    events: Iterator[tuple[str, str]],
    wire: OpenAIWire,
    calls: dict[int, dict[str, Any]] | None,
) -> Iterator[StreamChunk]:
    reason: str | None = None
    counts: dict[str, Any] = {}
    name = wire.model
    for kind, text in events:
        if text.startswith("[DONE]"):
            break
        if not text.strip():
            continue
        if kind == "error":
            raise _stopped(wire, error_text(_json_or_text(text), text))
        data = json_loads(text)  # a ValueError: read_chunks says what it is
        if isinstance(data, Mapping) and data.get("error"):
            raise _stopped(wire, error_text(data, text))
        if not isinstance(data, Mapping):
            raise ValueError(f"an event that is not an object: {text[:80]}")
        name = str(data.get("model") or name)
        for key in ("usage", "timings"):  # llama-server's timings: on the last chunks
            if isinstance(data.get(key), Mapping):
                counts[key] = data[key]
        for choice in (data.get("choices") or [])[:1]:
            if not isinstance(choice, Mapping):
                continue
            delta = choice.get("delta") or {}
            content = content_text(delta.get("content"))
            thinking = next((content_text(delta[k]) for k in THINK_FIELDS if delta.get(k)), "")
            if content or thinking:
                yield StreamChunk(content=content, thinking=thinking)
            pieces = _add_calls(calls, delta.get("tool_calls")) if calls is not None else ""
            if pieces:
                yield StreamChunk(arguments=pieces)
            reason = choice.get("finish_reason") or reason
    if reason is None:
        raise BadResponse(
            f"The server at {wire.base_url} ended the stream without a finish reason, so the "
            "answer may be incomplete (a proxy cutting long responses?)."
        )
    usage = openai_usage(counts) if counts else None
    yield StreamChunk(done=True, usage=usage, done_reason=reason, model=name)


def _add_calls(calls: dict[int, dict[str, Any]], deltas: Any) -> str:
    """Fold tool-call deltas into ``calls``: the first of a call (by ``index``) brings its id
    and name, the next ones more of its arguments' text. Returns the arguments' new text."""
    new = []
    for number, delta in enumerate(deltas if isinstance(deltas, list) else []):
        if not isinstance(delta, Mapping):
            continue
        index = delta.get("index", number)
        call = calls.setdefault(index, {"id": None, "type": "function", "function": {}})
        call["id"] = delta.get("id") or call["id"]
        function, into = delta.get("function") or {}, call["function"]
        if function.get("name"):
            into["name"] = into.get("name", "") + str(function["name"])
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            into["arguments"] = into.get("arguments", "") + arguments
            new.append(arguments)
        elif arguments is not None:  # an object: some servers send the call whole
            into["arguments"] = arguments
    return "".join(new)


def _json_or_text(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _stopped(wire: OpenAIWire, text: str) -> BadResponse:
    if context_full(text):
        return wire.too_long(text)
    return BadResponse(f"The server at {wire.base_url} stopped the answer with an error: {text}")

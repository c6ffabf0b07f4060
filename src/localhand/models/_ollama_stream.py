"""Reading a streamed answer from Ollama's native ``/api/chat`` into chunks, for
``OllamaModel.stream`` and ``stream_reply``; the transport sends the request, splits the NDJSON
into lines and retries (``models.transport``).

The wire (docs.ollama.com/api/streaming and /api/errors): one JSON object per line, each with
``message.content`` and/or ``message.thinking`` deltas and ``done: false``; the last has
``done: true``, ``done_reason`` and the counts (``prompt_eval_count``, ``eval_count``). An error
while generating cannot change the status any more (200 was sent), so it comes as a line
``{"error": "..."}`` of its own, without ``done``. Tool calls come whole, in a chunk of their
own, once Ollama's parser has read them.

This is what the ``ollama`` client's ``stream=True`` would hide: the raw lines (its models drop
fields) and the end of a stream that closes without ``done: true``, which must not pass for a
complete answer.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from localhand.errors import BadResponse
from localhand.models._served_figures import ollama_usage
from localhand.models.base import StreamChunk
from localhand.nesting import json_loads

if TYPE_CHECKING:
    from localhand.models._ollama_wire import OllamaWire


def read_chunks(
    lines: Iterator[str], wire: OllamaWire, calls: list[Any] | None = None
) -> Iterator[StreamChunk]:
    """The stream's lines as chunks: deltas with text, then the final one; the tool calls
    Ollama sends are appended to ``calls`` when it is given."""
    for line in lines:
        try:
            data = json_loads(line)
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise wire.garbled(f": {line[:80]}")
        if "error" in data:
            raise BadResponse(
                f"Ollama at {wire.host} stopped the answer with an error: {data['error']}"
            )
        message = data.get("message") or {}
        content, thinking = str(message.get("content") or ""), str(message.get("thinking") or "")
        if calls is not None and isinstance(message.get("tool_calls"), list):
            calls.extend(message["tool_calls"])
        if content or thinking:  # on the done line too: not Ollama's way, but a server's
            yield StreamChunk(content=content, thinking=thinking)
        if data.get("done"):
            yield StreamChunk(
                done=True,
                usage=ollama_usage(data),
                done_reason=data.get("done_reason"),
                model=str(data.get("model") or wire.model),
            )
            return
    raise BadResponse(
        f"Ollama at {wire.host} ended the stream without its final chunk (done: true), so the "
        "answer may be incomplete (a proxy cutting long responses?)."
    )

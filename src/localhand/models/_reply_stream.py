"""``stream_reply`` for the network backends: the tool loop's reply read as a stream.

The request is ``chat``'s with ``stream: true``; the deltas are handed out as they come, and
the last chunk carries the whole reply, put together from the deltas into the shape of an
unstreamed answer and converted by the same ``to_reply`` that ``chat`` uses, so that the
history and the Result are the same whichever way a reply was read. Only the tool loop asks
for this, and only with ``--watch-replies``: by default it keeps ``stream: false``, which is
simpler and avoids the streaming bugs some servers had with tool calls.

What the servers stream: Ollama sends a call whole, in a chunk of its own, once its parser has
read it (so a loop inside a call's arguments shows no text until the end, and only the reply
ceiling stops it); OpenAI-compatible servers send a call's arguments in pieces, which are
handed out as ``arguments`` so that a loop inside them can be seen.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from localhand.errors import ToolsUnsupported
from localhand.models._common import deadline_of
from localhand.models._ollama_wire import to_reply as ollama_to_reply
from localhand.models._openai_errors import FormatRefused
from localhand.models.base import ChatOptions, StreamChunk
from localhand.types import Message

if TYPE_CHECKING:
    from localhand.models.ollama import OllamaModel
    from localhand.models.openai_compat import OpenAICompatModel


def ollama_reply(
    model: OllamaModel,
    messages: Sequence[Message],
    tools: Sequence[dict[str, Any]] | None,
    options: ChatOptions | None,
) -> Iterator[StreamChunk]:
    from localhand.models._ollama_stream import stream_body

    body, estimate, num_ctx = model._chat_request(messages, tools, options, stream=True)
    calls: list[Any] = []
    text = _Text()
    for chunk in stream_body(model, body, deadline_of(options), estimate, num_ctx, calls):
        if not chunk.done:
            text.add(chunk)
            yield chunk
            continue
        usage = chunk.usage
        data = {
            "message": {"content": text.content, "thinking": text.thinking, "tool_calls": calls},
            "prompt_eval_count": usage.prompt_tokens if usage else 0,
            "eval_count": usage.completion_tokens if usage else 0,
            "done_reason": chunk.done_reason,
            "model": chunk.model,
        }
        yield replace(chunk, reply=ollama_to_reply(data, model.name))


def openai_reply(
    model: OpenAICompatModel,
    messages: Sequence[Message],
    tools: Sequence[dict[str, Any]] | None,
    options: ChatOptions | None,
) -> Iterator[StreamChunk]:
    from localhand.models._openai_stream import stream_body

    deadline = deadline_of(options)
    fmt = options.format if options is not None else None
    while True:  # a refusal comes before the first delta: ask again as ``chat`` would
        schema_mode = model.tool_mode == "schema"
        calls: dict[int, dict[str, Any]] = {}
        body = model._request(messages, tools, fmt, schema_mode, stream=True)
        chunks = stream_body(model, body, deadline, calls)
        try:
            first = next(chunks)
        except (FormatRefused, ToolsUnsupported) as exc:
            if model._fall_back(exc):
                continue
            raise
        break
    text = _Text()
    for chunk in _prepend(first, chunks):
        if not chunk.done:
            text.add(chunk)
            yield chunk
            continue
        usage = chunk.usage
        message: dict[str, Any] = {"content": text.content, "reasoning_content": text.thinking}
        if calls:
            message["tool_calls"] = [calls[index] for index in sorted(calls)]
        data = {
            "choices": [{"message": message, "finish_reason": chunk.done_reason}],
            "usage": {
                "prompt_tokens": usage.prompt_tokens if usage else 0,
                "completion_tokens": usage.completion_tokens if usage else 0,
            },
            "model": chunk.model,
        }
        reply = model._reply(data, schema_mode and bool(tools) and fmt is None)
        yield replace(chunk, reply=reply)


class _Text:
    """The text of a reply so far, answer and thinking apart."""

    def __init__(self) -> None:
        self._content: list[str] = []
        self._thinking: list[str] = []

    def add(self, chunk: StreamChunk) -> None:
        self._content.append(chunk.content)
        self._thinking.append(chunk.thinking)

    @property
    def content(self) -> str:
        return "".join(self._content)

    @property
    def thinking(self) -> str:
        return "".join(self._thinking)


def _prepend(first: StreamChunk, rest: Iterator[StreamChunk]) -> Iterator[StreamChunk]:
    """``first``, then ``rest``; closing this closes ``rest`` (and so the connection)."""
    try:
        yield first
        yield from rest
    finally:
        close = getattr(rest, "close", None)
        if close is not None:
            close()

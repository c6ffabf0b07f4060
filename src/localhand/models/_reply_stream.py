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

The backends open the stream (and, for OpenAI-compatible servers, ask again in another form
when the server refuses the first before its first delta, as ``chat`` does); the functions
here only put the reply together.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from typing import Any

from localhand.models._ollama_wire import to_reply as ollama_to_reply
from localhand.models.base import StreamChunk
from localhand.types import Reply, Usage


def ollama_reply(
    chunks: Iterator[StreamChunk], calls: list[Any], model: str
) -> Iterator[StreamChunk]:
    """``chunks`` of an ``/api/chat`` stream whose tool calls go to ``calls``, the last one
    with the whole reply."""
    deltas: list[StreamChunk] = []
    for chunk in chunks:
        if not chunk.done:
            deltas.append(chunk)
            yield chunk
            continue
        usage = chunk.usage
        content, thinking = _text(deltas)
        data = {
            "message": {"content": content, "thinking": thinking, "tool_calls": calls},
            "prompt_eval_count": usage.prompt_tokens if usage else 0,
            "eval_count": usage.completion_tokens if usage else 0,
            "done_reason": chunk.done_reason,
            "model": chunk.model,
        }
        reply = ollama_to_reply(data, model)
        # the server's figures (cache, timings) as the stream's last chunk carried them
        yield replace(chunk, reply=replace(reply, usage=usage) if usage else reply)


def openai_reply(
    first: StreamChunk,
    rest: Iterator[StreamChunk],
    calls: dict[int, dict[str, Any]],
    to_reply: Callable[[Mapping[str, Any]], Reply],
    estimate: Callable[[str], Usage],
) -> Iterator[StreamChunk]:
    """``first`` and the ``rest`` of a ``/chat/completions`` stream whose tool calls are put
    together in ``calls``, the last one with the whole reply, made by ``to_reply`` from a
    ``chat.completion``. A server that sends no usage in streams (llama-cpp-python's server
    ignores ``stream_options``) gets ``estimate`` of the reply's text instead of zeros: the
    budget, the ledger and the Result count what was spent either way."""
    deltas: list[StreamChunk] = []
    for chunk in _prepend(first, rest):
        if not chunk.done:
            deltas.append(chunk)
            yield chunk
            continue
        content, thinking = _text(deltas)
        usage = chunk.usage or estimate(content + thinking)
        message: dict[str, Any] = {"content": content, "reasoning_content": thinking}
        if calls:
            message["tool_calls"] = [calls[index] for index in sorted(calls)]
        data = {
            "choices": [{"message": message, "finish_reason": chunk.done_reason}],
            "usage": {
                "prompt_tokens": usage.prompt_tokens,
                "completion_tokens": usage.completion_tokens,
            },
            "model": chunk.model,
        }
        # the server's figures (cache, timings) as the stream's last chunk carried them
        yield replace(chunk, reply=replace(to_reply(data), usage=usage))


def _text(deltas: list[StreamChunk]) -> tuple[str, str]:
    """The text of a reply's deltas: its answer and its thinking, apart."""
    return "".join(d.content for d in deltas), "".join(d.thinking for d in deltas)


def _prepend(first: StreamChunk, rest: Iterator[StreamChunk]) -> Iterator[StreamChunk]:
    """``first``, then ``rest``; closing this closes ``rest`` (and so the connection)."""
    try:
        yield first
        yield from rest
    finally:
        close = getattr(rest, "close", None)
        if close is not None:
            close()

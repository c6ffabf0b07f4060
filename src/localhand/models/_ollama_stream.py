"""Streaming one answer from Ollama's native ``/api/chat``, NDJSON, for ``OllamaModel.stream``.

The wire (docs.ollama.com/api/streaming and /api/errors): one JSON object per line, each with
``message.content`` and/or ``message.thinking`` deltas and ``done: false``; the last has
``done: true``, ``done_reason`` and the counts (``prompt_eval_count``, ``eval_count``). An error
while generating cannot change the status any more (200 was sent), so it comes as a line
``{"error": "..."}`` of its own, without ``done``.

It needs what the ``ollama`` client's ``stream=True`` would hide: the response (to cut a
stalled stream from the watchdog), a timeout per request, the raw lines (its models drop
fields) and the end of a stream that closes without ``done: true`` (a cut answer must not pass
for a complete one).

Retries follow the backend's rules, but only until the first delta has been handed out: after
that a retry would make the model answer again from the start, and the text already shown
would be shown twice (and differ). A failure mid-answer is raised at once; the caller keeps
the partial text.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from localhand.errors import BadResponse, ModelError, ModelTimeout
from localhand.models._common import Retry, deadline_of
from localhand.models._http import ConnectFailed, ConnectionCut, HTTPError, Timeout
from localhand.models._ollama_wire import error_text, estimate_prompt_tokens, wire_message
from localhand.models._stream import Watchdog, backend_stream, timeout_text
from localhand.models.base import ChatOptions, StreamChunk
from localhand.nesting import json_loads
from localhand.types import Message, Usage

if TYPE_CHECKING:
    from localhand.models.ollama import OllamaModel


NDJSON = {"Accept": "application/x-ndjson"}


class _NotOllama(Exception):
    """A line that is not one of Ollama's JSON objects."""


def stream_chat(
    model: OllamaModel, messages: Sequence[Message], options: ChatOptions | None
) -> Iterator[StreamChunk]:
    deadline = deadline_of(options)
    wire = [wire_message(m) for m in messages]
    estimate = estimate_prompt_tokens(wire, [])
    num_ctx = model._size_context(estimate)
    body = model._request_body(wire, num_ctx, stream=True)
    yield from stream_body(model, body, deadline, estimate, num_ctx)


def stream_body(
    model: OllamaModel,
    body: dict[str, Any],
    deadline: float | None,
    estimate: int,
    num_ctx: int,
    calls: list[Any] | None = None,
) -> Iterator[StreamChunk]:
    """Stream the answer to a ``/api/chat`` ``body``; the tool calls Ollama sends (whole, in
    a chunk of their own) are appended to ``calls`` when it is given."""
    base, hint = model._timeout_and_hint()
    http = model._transport()

    def connect(timeout: float, stack: contextlib.ExitStack) -> tuple[Any, Any]:
        connect_s = min(timeout, model.connect_timeout)
        response = stack.enter_context(
            http.stream(
                "POST",
                "/api/chat",
                body,
                timeout=timeout,
                connect_timeout=connect_s,
                headers=NDJSON,
            )
        )
        if response.status != 200:
            response.read()
            raise model._status_error(response.status, error_text(response))
        return response, response

    def parse(response: Any, watchdog: Watchdog) -> Iterator[StreamChunk]:
        return _chunks(ndjson_lines(response.iter_bytes()), watchdog, model, calls)

    chunks = backend_stream(
        model, connect, parse, _error, base_timeout=base, hint=hint, deadline=deadline
    )
    for chunk in chunks:
        model._loaded = True  # a chunk came: the model is in memory
        if chunk.done and chunk.usage is not None:
            model._check_truncation(estimate, num_ctx, chunk.usage.prompt_tokens)
        yield chunk


def ndjson_lines(chunks: Iterable[bytes]) -> Iterator[str]:
    """The lines of an NDJSON byte stream, split at LF only. Not ``str.splitlines``: it
    splits at every line break Unicode knows, and Go's JSON encoder leaves some of them raw
    inside strings (U+0085, for one), which would cut a chunk of text in two."""
    buffer = bytearray()
    for chunk in chunks:
        start = len(buffer)  # the bytes before have no LF: search only the new ones
        buffer += chunk
        while (end := buffer.find(b"\n", start)) >= 0:
            yield buffer[:end].decode("utf-8", "replace")
            del buffer[: end + 1]
            start = 0
    if buffer:
        yield buffer.decode("utf-8", "replace")


def _chunks(
    lines: Iterator[str], watchdog: Watchdog, model: OllamaModel, calls: list[Any] | None = None
) -> Iterator[StreamChunk]:
    """The stream's lines as chunks: deltas with text, then the final one; tool calls go to
    ``calls``."""
    for line in lines:
        if not line.strip():
            continue
        try:
            data = json_loads(line)
        except ValueError:
            raise _NotOllama(line[:80]) from None
        if not isinstance(data, dict):
            raise _NotOllama(line[:80])
        watchdog.kick()
        if "error" in data:
            raise BadResponse(
                f"Ollama at {model.host} stopped the answer with an error: {data['error']}"
            )
        message = data.get("message") or {}
        content, thinking = str(message.get("content") or ""), str(message.get("thinking") or "")
        if calls is not None and isinstance(message.get("tool_calls"), list):
            calls.extend(message["tool_calls"])
        if data.get("done"):
            if content or thinking:  # not what Ollama does, but a server may fold them in
                yield StreamChunk(content=content, thinking=thinking)
            usage = Usage(int(data.get("prompt_eval_count") or 0), int(data.get("eval_count") or 0))
            yield StreamChunk(
                done=True,
                usage=usage,
                done_reason=data.get("done_reason"),
                model=str(data.get("model") or model.name),
            )
            return
        if content or thinking:
            yield StreamChunk(content=content, thinking=thinking)
    raise BadResponse(
        f"Ollama at {model.host} ended the stream without its final chunk (done: true), so the "
        "answer may be incomplete (a proxy cutting long responses?)."
    )


def _error(
    exc: Exception,
    model: OllamaModel,
    watchdog: Watchdog | None,
    chars: int,
    hint: str,
    timeout: float,
) -> Exception:
    """A transport failure as the ``ModelError`` to raise, wrapped in ``Retry`` when it came
    before any text (so retrying cannot show anything twice)."""
    where = f"Ollama at {model.host}"
    if isinstance(exc, ModelError | Retry):
        return exc
    if watchdog is not None and watchdog.fired is not None:
        return ModelTimeout(timeout_text(watchdog, where, chars, hint))
    if isinstance(exc, ConnectFailed):
        return Retry(model._unavailable())
    if isinstance(exc, Timeout):
        return ModelTimeout(
            f"{where} did not answer for '{model.name}' within {timeout:.3g} s ({hint}, or use "
            "a smaller model)."
        )
    if isinstance(exc, _NotOllama):
        error = BadResponse(
            f"{where} answered with something that is not Ollama's JSON (a proxy or another "
            f"server on that port?): {exc}",
            retryable=not chars,
        )
        return Retry(error) if not chars else error
    if isinstance(exc, ConnectionCut):
        if not chars:
            why = f"{where} cut the connection before the answer began ({exc})."
            return Retry(BadResponse(why, retryable=True))
        return BadResponse(
            f"{where} cut the connection mid-answer, after {chars} characters ({exc}). Not "
            "retried, so that the answer is not shown twice; the partial answer is kept."
        )
    if isinstance(exc, HTTPError):
        return BadResponse(f"Could not talk to Ollama at {model.host}: {exc}")
    return exc

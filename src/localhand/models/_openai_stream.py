"""Streaming one answer from ``/v1/chat/completions``, for ``OpenAICompatModel.stream``.

The wire: server-sent events, each ``data: {...}`` a ``chat.completion.chunk`` whose
``choices[0].delta`` has ``content`` (thinking as ``reasoning_content`` or ``reasoning``), a
``finish_reason`` on the last choice chunk (``length`` when cut off), with
``stream_options.include_usage`` one more chunk with ``usage`` and no choices, then
``data: [DONE]``. A failure after the 200 comes as an event ``{"error": {...}}`` (vLLM, newer
llama-server), an ``event: error``, or llama-server's own ``error: {...}`` line (a field the
SSE spec would ignore, so the SDK did): all are raised as errors. A stream that ends without
a finish reason was cut short, and is reported so, not taken as a complete answer.

Events are read as the SSE spec says (``sse_events``), not line by line with
``str.splitlines``: that splits on every line break Unicode knows, U+2028 and U+0085
included, which JSON may carry unescaped (llama-server's does).

Retries follow the backend's rules, but only until the first delta has been handed out (see
``_stream.reliable_stream``), so no text is ever shown twice.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from localhand.errors import BadResponse, ModelError, ModelTimeout
from localhand.models._common import Retry, deadline_of
from localhand.models._http import ConnectFailed, ConnectionCut, HTTPError, Timeout
from localhand.models._openai_wire import context_full, error_text
from localhand.models._stream import Watchdog, backend_stream, timeout_text
from localhand.models.base import ChatOptions, StreamChunk
from localhand.nesting import json_loads
from localhand.types import Message, Usage

if TYPE_CHECKING:
    from localhand.models.openai_compat import OpenAICompatModel

SSE = {"Accept": "text/event-stream"}
_THINK_FIELDS = ("reasoning_content", "reasoning", "thinking")
_LINE_END = re.compile(rb"\r\n|\r|\n")


def stream_chat(
    model: OpenAICompatModel, messages: Sequence[Message], options: ChatOptions | None
) -> Iterator[StreamChunk]:
    body = model._request(messages, None, None, False, stream=True)
    yield from stream_body(model, body, deadline_of(options))


def stream_body(
    model: OpenAICompatModel,
    body: dict[str, Any],
    deadline: float | None,
    calls: dict[int, dict[str, Any]] | None = None,
) -> Iterator[StreamChunk]:
    """Stream the answer to a ``/chat/completions`` ``body``; tool-call deltas are put
    together in ``calls`` (by index) when it is given, and their argument pieces handed out as
    ``arguments``."""
    base, hint = model._timeout_and_hint()
    http = model._transport()

    def connect(timeout: float, stack: contextlib.ExitStack) -> tuple[Any, Any]:
        connect_s = min(timeout, model.connect_timeout)
        response = stack.enter_context(
            http.stream(
                "POST",
                "/chat/completions",
                body,
                timeout=timeout,
                connect_timeout=connect_s,
                headers=SSE,
            )
        )
        if response.status >= 400:
            response.read()
            raise model._status_error(response.status, response)
        return response, response

    def parse(response: Any, watchdog: Watchdog) -> Iterator[StreamChunk]:
        return _chunks(sse_events(response.iter_bytes()), watchdog, model, calls)

    chunks = backend_stream(
        model, connect, parse, _error, base_timeout=base, hint=hint, deadline=deadline
    )
    for chunk in chunks:
        model._loaded = True  # a chunk came: the model is in memory
        yield chunk


def sse_lines(chunks: Iterable[bytes]) -> Iterator[str]:
    """The lines of a byte stream, ended by CRLF, LF or CR as the SSE spec says (a CR at the
    end of one chunk and an LF at the start of the next are one line end)."""
    partial = bytearray()
    skip_lf = False
    for chunk in chunks:
        if not chunk:
            continue
        start = 1 if skip_lf and chunk[0] == 0x0A else 0
        for match in _LINE_END.finditer(chunk, start):
            partial += chunk[start : match.start()]
            yield partial.decode()
            partial.clear()
            start = match.end()
        partial += chunk[start:]
        skip_lf = chunk[-1] == 0x0D
    if partial:
        yield partial.decode()


def sse_events(chunks: Iterable[bytes]) -> Iterator[tuple[str, str]]:
    """The server-sent events of a byte stream, as ``(type, data)``.

    Per the spec: ``data:`` lines of one event (up to a blank line) are joined with newlines,
    one space after the colon is dropped, comment lines (``:``) and ``id:``/``retry:`` are
    ignored, an event without data is not dispatched, nor is one the stream ends in the
    middle of. The type is ``event:``'s value, else ``message``; llama-server's ``error:``
    line, which the spec would ignore, makes an event of type ``error``.
    """
    kind = ""
    data: list[str] = []
    error: list[str] = []
    for line in sse_lines(chunks):
        if not line:
            if error:
                yield "error", "\n".join(error)
            elif data:
                yield kind or "message", "\n".join(data)
            kind, data, error = "", [], []
            continue
        if line[0] == ":":
            continue
        name, _, value = line.partition(":")
        if value[:1] == " ":
            value = value[1:]
        if name == "data":
            data.append(value)
        elif name == "event":
            kind = value
        elif name == "error":
            error.append(value)


def _chunks(
    events: Iterator[tuple[str, str]],
    watchdog: Watchdog,
    model: OpenAICompatModel,
    calls: dict[int, dict[str, Any]] | None = None,
) -> Iterator[StreamChunk]:
    reason: str | None = None
    usage: Usage | None = None
    name = model.name
    for kind, text in events:
        if text.startswith("[DONE]"):
            break
        watchdog.kick()
        if not text.strip():
            continue
        if kind == "error":
            raise _stopped(model, error_text(_json_or_text(text), text))
        data = json_loads(text)  # a ValueError is reported by _error
        if isinstance(data, Mapping) and data.get("error"):
            raise _stopped(model, error_text(data, text))
        if not isinstance(data, Mapping):
            raise ValueError(f"an event that is not an object: {text[:80]}")
        name = str(data.get("model") or name)
        if isinstance(data.get("usage"), Mapping):
            counts = data["usage"]
            usage = Usage(
                int(counts.get("prompt_tokens") or 0), int(counts.get("completion_tokens") or 0)
            )
        for choice in (data.get("choices") or [])[:1]:
            if not isinstance(choice, Mapping):
                continue
            delta = choice.get("delta") or {}
            content = _text(delta.get("content"))
            thinking = next((_text(delta[k]) for k in _THINK_FIELDS if delta.get(k)), "")
            if content or thinking:
                yield StreamChunk(content=content, thinking=thinking)
            pieces = _add_calls(calls, delta.get("tool_calls")) if calls is not None else ""
            if pieces:
                yield StreamChunk(arguments=pieces)
            reason = choice.get("finish_reason") or reason
    if reason is None:
        raise BadResponse(
            f"The server at {model.base_url} ended the stream without a finish reason, so the "
            "answer may be incomplete (a proxy cutting long responses?)."
        )
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


def _stopped(model: OpenAICompatModel, text: str) -> BadResponse:
    if context_full(text):
        return model._too_long(text)
    return BadResponse(f"The server at {model.base_url} stopped the answer with an error: {text}")


def _error(
    exc: Exception,
    model: OpenAICompatModel,
    watchdog: Watchdog | None,
    chars: int,
    hint: str,
    timeout: float,
) -> Exception:
    """As ``_ollama_stream._error``: retryable only before any text was handed out. The
    watchdog comes first: cutting a body that ends with the connection (no length, not
    chunked) looks like a stream that ended without its finish reason."""
    where = f"The server at {model.base_url}"
    if watchdog is not None and watchdog.fired is not None:
        return ModelTimeout(timeout_text(watchdog, where, chars, hint))
    if isinstance(exc, ModelError | Retry):
        return exc
    if isinstance(exc, ConnectFailed):
        return model._connect_error(exc)
    if isinstance(exc, Timeout):
        return ModelTimeout(
            f"{where} did not answer for '{model.name}' within {timeout:.3g} s ({hint}, or use "
            "a smaller model)."
        )
    if isinstance(exc, ConnectionCut):
        if not chars:
            why = f"{where} cut the connection before the answer began ({exc})."
            return Retry(BadResponse(why, retryable=True))
        return BadResponse(
            f"{where} cut the connection mid-answer, after {chars} characters ({exc}). "
            "Not retried, so that the answer is not shown twice; the partial answer is kept."
        )
    if isinstance(exc, HTTPError):
        return BadResponse(f"Could not talk to the server at {model.base_url}: {exc}")
    if isinstance(exc, ValueError):  # an event that is not JSON (or not UTF-8)
        error = BadResponse(f"{where} streamed something that is not JSON: {exc}")
        return error if chars else Retry(BadResponse(str(error), retryable=True))
    return exc


def _text(value: Any) -> str:
    if isinstance(value, list):  # content parts
        return "".join(p.get("text", "") for p in value if isinstance(p, Mapping))
    return "" if value is None else str(value)

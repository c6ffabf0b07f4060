"""OpenAI-compatible backend: ``/v1/chat/completions`` and ``/v1/models`` over ``_http``.

For llama.cpp's ``llama-server``, vLLM, LM Studio, ``python -m llama_cpp.server`` and Ollama's
``/v1``. What it takes care of, and why:

- **Messages.** localhand's history is Ollama-shaped; here calls get ids and JSON-string
  arguments and results are keyed by ``tool_call_id`` (see ``_openai_wire``).
- **Tool modes.** ``native`` sends ``tools`` and reads ``tool_calls``. Not every server can:
  llama-server without ``--jinja``, vLLM without ``--enable-auto-tool-choice``, and
  ``llama_cpp.server`` with most chat formats answer in plain text or refuse. ``schema`` sends
  no tools; the reply is constrained by ``response_format`` to one valid call or a final
  answer, which every one of those servers enforces with a grammar. ``auto`` (the default)
  starts native and switches to schema, with a warning, when the server refuses tools.
- **response_format.** The standard ``{"type": "json_schema", ...}`` first; servers that only
  know llama.cpp's older ``{"type": "json_object", "schema": ...}`` (``llama_cpp.server``)
  reject it with a 400/422, and from then on get that form.
- **Retries and errors** as the Ollama backend: ``max_attempts`` with doubling backoff on
  connection errors, 429/5xx, a connection cut mid-reply and a body that is not JSON; never on
  other 4xx. Errors name the host and say what to do.
- **Reply ceiling.** ``max_tokens`` on every request (4096 by default): the one field that
  llama-server, vLLM, LM Studio, ``llama_cpp.server`` and Ollama's ``/v1`` all take
  (``max_completion_tokens`` is newer and not read by all of them), and their default is
  unlimited. Each counts reasoning tokens against it; a reply that reaches it ends with
  ``finish_reason: length``.
- **Timeouts.** ``first_request_timeout`` until a reply arrives (the server may be loading the
  model), then ``request_timeout``; ``ChatOptions.timeout`` caps both, and the error names
  the limit that was hit. They are set per request on one ``_http.Client`` per model.
- **Streaming** (``stream``, for the simple path): server-sent events (``_openai_stream``),
  with ``stream_options.include_usage`` for the counts. The first chunk gets the timeouts
  above, then ``stream_idle_timeout`` of silence ends it; an ``error`` event mid-stream
  (llama-server sends them with status 200) is an error. Retried only before the first delta.
- **Why not the official ``openai`` SDK.** It was the first choice; importing it costs about
  half a second (its generated types), against a start-up target of 0.3 s for the whole CLI,
  and every request walks the whole history through its TypedDict transforms (about 18 ms a
  request at 60 messages, more than the round trip to a local server). The two endpoints are
  small and stable, so we speak them directly, as the SDK did on the wire: ``Authorization:
  Bearer`` with ``api_key``, ``OPENAI_API_KEY`` or a placeholder, JSON in and out,
  ``extra_body`` merged into the body, ``OPENAI_BASE_URL`` honoured, redirects followed.
  ``tests/test_fake_ollama_v1.py`` keeps the fake server honest against the SDK.

The context window is the server's business here (``llama-server -c``, vLLM
``--max-model-len``; Ollama's ``/v1`` uses the model's default, so prefer ``--backend ollama``
for Ollama): a request that does not fit is reported with that advice.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any, Literal

from localhand.errors import (
    BadResponse,
    ConfigError,
    ModelTimeout,
    ServerUnavailable,
    ToolsUnsupported,
)
from localhand.models._common import Retry, deadline_of, time_limit_hint, with_retries
from localhand.models._http import (
    Client,
    ConnectFailed,
    ConnectionCut,
    HTTPError,
    Response,
    Timeout,
)
from localhand.models._json_calls import decode, plain_messages, reply_schema
from localhand.models._openai_errors import FormatRefused, status_error, too_long
from localhand.models._openai_wire import (
    base_url,
    error_text,
    request_headers,
    to_openai_messages,
    to_reply,
)
from localhand.models.base import DEFAULT_MAX_REPLY_TOKENS, ChatOptions, StreamChunk
from localhand.types import Message, Reply

__all__ = ["DEFAULT_BASE_URL", "OpenAICompatModel", "ToolMode"]

_log = logging.getLogger("localhand")
DEFAULT_BASE_URL = "http://127.0.0.1:8080/v1"
"""llama-server's default address."""
ToolMode = Literal["auto", "native", "schema"]


class OpenAICompatModel:
    """A :class:`~localhand.models.base.ChatModel` talking to an OpenAI-compatible server.

    Args:
        model: the model's name on the server (llama-server accepts any name).
        host: the base URL, with or without ``/v1`` (``http://127.0.0.1:8080``); ``None``
            means ``OPENAI_BASE_URL`` or llama-server's default ``http://127.0.0.1:8080/v1``.
        api_key: sent as a bearer token; ``None`` means ``OPENAI_API_KEY`` or a placeholder
            (local servers ignore it unless started with a key).
        tool_mode: ``auto``, ``native`` or ``schema`` (see the module docstring).
        reasoning_effort: sent as ``reasoning_effort`` when set (``low``... or ``none``).
        max_tokens: the reply ceiling, thinking included (4096 by default); ``None`` leaves
            the server's default, which is unlimited on llama-server, vLLM and LM Studio.
        temperature: ``None`` leaves the server's default.
        extra_body: more fields for every request (``{"top_k": 20}``).
        context_length: the server's context window in tokens, if known (llama-server ``-c``,
            vLLM ``--max-model-len``); the loop then compacts the history before reaching it.
        on_warning: receives retry and mode-switch warnings; defaults to the ``localhand``
            logger.
        sleep: the backoff's sleep function, replaceable in tests.
        stream_idle_timeout: seconds of silence after the first chunk of a streamed answer
            before the server is taken as stuck.
    """

    watch_replies = False  # the tool loop streams replies to stop loops: see models.watch

    def __init__(
        self,
        model: str,
        host: str | None = None,
        *,
        api_key: str | None = None,
        tool_mode: ToolMode = "auto",
        reasoning_effort: str | None = None,
        max_tokens: int | None = DEFAULT_MAX_REPLY_TOKENS,
        temperature: float | None = None,
        extra_body: Mapping[str, Any] | None = None,
        context_length: int | None = None,
        request_timeout: float = 300.0,
        first_request_timeout: float = 900.0,
        connect_timeout: float = 10.0,
        metadata_timeout: float = 10.0,
        max_attempts: int = 3,
        backoff: float = 0.5,
        sleep: Callable[[float], None] = time.sleep,
        on_warning: Callable[[str], None] | None = None,
        stream_idle_timeout: float = 120.0,
    ) -> None:
        if not model:
            raise ConfigError("No model name given: pass the name the server serves with --model.")
        if tool_mode not in ("auto", "native", "schema"):
            raise ConfigError(f"tool_mode must be auto, native or schema, not {tool_mode!r}")
        self._model = model
        self.base_url = base_url(host or os.getenv("OPENAI_BASE_URL") or DEFAULT_BASE_URL)
        self.tool_mode: ToolMode = tool_mode
        self.reasoning_effort, self.max_tokens = reasoning_effort, max_tokens
        self.temperature, self.extra_body = temperature, dict(extra_body or {})
        self.context_length = context_length
        self.request_timeout, self.first_request_timeout = request_timeout, first_request_timeout
        self.connect_timeout, self.metadata_timeout = connect_timeout, metadata_timeout
        self.stream_idle_timeout = stream_idle_timeout
        self.max_attempts, self.backoff, self._sleep = max(1, max_attempts), backoff, sleep
        self._warn = on_warning or _log.warning
        self.format_style = "json_schema"
        """How ``response_format`` is sent: ``json_schema``, or llama.cpp's older ``json_object``
        with a ``schema`` once the server has refused the standard form."""
        self._loaded = False
        self._api_key = api_key or os.getenv("OPENAI_API_KEY") or "no-key-needed"
        self._http: Client | None = None
        self._lock = threading.Lock()

    # -- the ChatModel protocol ----------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._model

    @property
    def context_limit(self) -> int | None:
        """The window the loop keeps the history within: ``context_length``, if given."""
        return self.context_length

    def chat(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]] | None = None,
        options: ChatOptions | None = None,
    ) -> Reply:
        deadline = deadline_of(options)
        fmt = options.format if options is not None else None
        while True:
            schema_mode = self.tool_mode == "schema"
            try:
                data = self._send(self._request(messages, tools, fmt, schema_mode), deadline)
            except (FormatRefused, ToolsUnsupported) as exc:
                if self._fall_back(exc):
                    continue
                raise
            break
        self._loaded = True
        return self._reply(data, schema_mode and bool(tools) and fmt is None)

    def stream(
        self, messages: Sequence[Message], options: ChatOptions | None = None
    ) -> Iterator[StreamChunk]:
        """Stream one answer without tools (see ``StreamingChatModel`` for the contract)."""
        from localhand.models._openai_stream import stream_chat

        return stream_chat(self, messages, options)

    def stream_reply(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]] | None = None,
        options: ChatOptions | None = None,
    ) -> Iterator[StreamChunk]:
        """``chat``'s reply as a stream, to watch (see ``ReplyStreamingModel``)."""
        from localhand.models._reply_stream import openai_reply

        return openai_reply(self, messages, tools, options)

    def _fall_back(self, refusal: Exception) -> bool:
        """Whether to ask again after ``refusal``: a ``response_format`` the server refused
        (then in llama.cpp's older dialect), or tools it refused in ``auto`` mode (then in
        schema mode, with a warning)."""
        if isinstance(refusal, FormatRefused) and self.format_style != "json_object":
            self.format_style = "json_object"
            return True
        if isinstance(refusal, ToolsUnsupported) and self.tool_mode == "auto":
            self.tool_mode = "schema"
            self._warn(
                f"{str(refusal).split(' Pick')[0].rstrip('.')}. Switching to schema mode: tool "
                "calls are now asked for as JSON constrained by response_format."
            )
            return True
        return False

    def _reply(self, data: Mapping[str, Any], schema_calls: bool) -> Reply:
        """A completion as a Reply; with ``schema_calls`` its content is decoded as the JSON
        call (or final answer) that schema mode asked for."""
        reply = to_reply(data, self._model)
        if schema_calls and not reply.tool_calls:
            content, calls = decode(reply.content)
            reply = replace(reply, content=content, tool_calls=calls)
        return reply

    # -- discovery -------------------------------------------------------------------------------
    def list_models(self) -> list[str]:
        """The ids the server lists at ``/v1/models``."""

        def attempt(timeout: float, hint: str) -> list[str]:
            page = self._attempt("GET", "/models", None, timeout, hint)
            items = page.get("data") if isinstance(page, dict) else None
            # Ollama says "data": null when it has no models
            return [str(m["id"]) for m in items or [] if isinstance(m, dict) and m.get("id")]

        return self._retrying(attempt, self.metadata_timeout, None, "the server seems hung")

    def has_model(self, name: str | None = None) -> bool:
        wanted = name or self._model
        return any(m == wanted or m.split("/")[-1] == wanted for m in self.list_models())

    def close(self) -> None:
        with self._lock:
            http, self._http = self._http, None
        if http is not None:
            http.close()

    def __enter__(self) -> OpenAICompatModel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- requests --------------------------------------------------------------------------------
    def _request(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]] | None,
        fmt: dict[str, Any] | None,
        schema_mode: bool,
        *,
        stream: bool = False,
    ) -> dict[str, Any]:
        """The JSON body; ``extra_body`` is merged in last, so its keys win (as in the SDK)."""
        body: dict[str, Any] = {"model": self._model, "stream": stream}
        if stream:
            body["stream_options"] = {"include_usage": True}
        if schema_mode:
            body["messages"] = plain_messages(messages, tools)
            if tools and fmt is None:
                fmt = reply_schema(tools)
        else:
            body["messages"] = to_openai_messages(messages)
            if tools and fmt is None:  # with a format the reply is JSON: no tools then
                body["tools"] = list(tools)
        if fmt is not None:
            body["response_format"] = self._response_format(fmt)
        if self.reasoning_effort is not None:
            body["reasoning_effort"] = self.reasoning_effort
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        if self.temperature is not None:
            body["temperature"] = self.temperature
        return {**body, **self.extra_body} if self.extra_body else body

    def _response_format(self, schema: dict[str, Any]) -> dict[str, Any]:
        if self.format_style == "json_object":
            return {"type": "json_object", "schema": schema}
        return {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema}}

    def _timeout_and_hint(self) -> tuple[float, str]:
        timeout = self.request_timeout if self._loaded else self.first_request_timeout
        return timeout, time_limit_hint(self._loaded, "may load")

    def _send(self, body: dict[str, Any], deadline: float | None) -> dict[str, Any]:
        base, hint = self._timeout_and_hint()

        def attempt(timeout: float, why: str) -> dict[str, Any]:
            data = self._attempt("POST", "/chat/completions", body, timeout, why)
            if not isinstance(data, dict) or not isinstance(data.get("choices"), list):
                raise BadResponse(
                    f"The server at {self.base_url} answered JSON that is not a chat "
                    "completion. --host must be its OpenAI-compatible base URL (usually ending "
                    "in /v1)."
                )
            return data

        return self._retrying(attempt, base, deadline, hint)

    def _retrying(
        self, attempt: Callable[[float, str], Any], base: float, deadline: float | None, hint: str
    ) -> Any:
        return with_retries(
            attempt,
            base_timeout=base,
            deadline=deadline,
            hint=hint,
            max_attempts=self.max_attempts,
            backoff=self.backoff,
            sleep=self._sleep,
            warn=self._warn,
        )

    def _attempt(self, method: str, path: str, body: Any, timeout: float, hint: str) -> Any:
        """One request and its JSON; errors become ``ModelError``s, in ``Retry`` when
        retryable."""
        connect_s = min(timeout, self.connect_timeout)
        try:
            response = self._transport().request(
                method, path, body, timeout=timeout, connect_timeout=connect_s
            )
        except ConnectFailed as exc:
            raise self._connect_error(exc) from None
        except Timeout:
            raise ModelTimeout(
                f"The server at {self.base_url} did not answer for '{self._model}' within "
                f"{timeout:.3g} s ({hint}, or use a smaller model)."
            ) from None
        except ConnectionCut as exc:
            error = BadResponse(
                f"The server at {self.base_url} cut the connection mid-reply ({exc}).",
                retryable=True,
            )
            raise Retry(error) from None
        except HTTPError as exc:
            raise BadResponse(f"Could not talk to the server at {self.base_url}: {exc}") from None
        if response.status >= 400:
            raise self._status_error(response.status, response, path)
        try:
            return response.json()
        except ValueError:
            error = BadResponse(
                f"The server at {self.base_url} answered with something that is not JSON (a "
                "proxy, or another kind of server on that port?).",
                retryable=True,
            )
            raise Retry(error) from None

    def _connect_error(self, exc: Exception) -> Exception:
        if "CERTIFICATE_VERIFY_FAILED" in str(exc) and self.base_url.startswith("http:"):
            return BadResponse(
                f"The server at {self.base_url} redirected to https: give its https:// address "
                "with --host."
            )
        return Retry(self._unavailable())

    def _status_error(
        self, status: int, response: Response, path: str = "/chat/completions"
    ) -> Exception:
        try:
            text = error_text(response.json(), response.text)
        except ValueError:
            text = error_text(None, response.text)
        return status_error(self.base_url, self._model, status, text, path)

    def _too_long(self, text: str, status: int | None = None) -> BadResponse:
        return too_long(self.base_url, self._model, text, status)

    def _unavailable(self) -> ServerUnavailable:
        return ServerUnavailable(
            f"Cannot reach an OpenAI-compatible server at {self.base_url}. Start it (for "
            "example `llama-server -m model.gguf --jinja`, `vllm serve`, or LM Studio's server), "
            "or point localhand at it with --host."
        )

    def _transport(self) -> Client:
        """The one client for every request and stream (closed by ``close``). Timeouts are
        set per request: the first one may wait for the model to load, later ones not."""
        with self._lock:
            if self._http is None:
                self._http = Client(self.base_url, request_headers(self._api_key))
            return self._http

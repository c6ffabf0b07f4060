"""Ollama backend: Ollama's native REST API (``/api/chat``, ``/api/show``, ``/api/tags``).

What it takes care of, and why:

- **Context window.** Ollama silently drops the oldest messages (system prompt and tool
  descriptions first) when a prompt exceeds ``num_ctx``, and its default window is small
  (2048 before 0.6.7, then 4096, now 4k/32k/256k by VRAM). So every request carries
  ``options.num_ctx`` sized from the prompt plus a reply reserve, rounded up to a power of two
  (at least ``num_ctx_min``), bounded by ``num_ctx_max`` and the model's trained length from
  ``/api/show``. It only ever grows: a different ``num_ctx`` makes Ollama reload the model. For
  the same reason it starts from the window the model is already loaded with (``/api/ps``)
  when that is within bounds, so consecutive runs do not reload it.
- **Reply ceiling.** ``options.num_predict`` on every request (``max_reply_tokens``, 4096 by
  default): Ollama's own default is unlimited, so a model looping inside one reply would write
  until the window is full. It covers thinking and answer together; a reply that reaches it
  ends with ``done_reason: length`` and the loop never runs its call.
- **Truncation warning.** ``prompt_eval_count`` is the only signal. It can be *lower* than the
  prompt for harmless reasons (a prompt-cache hit: some builds count only newly evaluated
  tokens, old ones omitted the field), so a low count alone never warns. We warn when our own
  estimate exceeds ``num_ctx`` or the count fills the window.
- **Timeouts.** ``first_request_timeout`` (default 900 s) while the model loads, then
  ``request_timeout`` (300 s); ``ChatOptions.timeout`` (the task's wall clock) caps both, and
  the error names the limit that was hit. They are socket timeouts
  (``_http``), so a hung server really ends the request. Timeouts are not retried.
- **Retries.** ``max_attempts`` (default 3 in all) with exponential backoff (``backoff``,
  doubling) on connection errors, HTTP 500/502/503/504, a connection cut mid-reply and a body
  that is not JSON. Never on 400 or 404: sending them again cannot help.
- **Streaming** (``stream``, for the simple path): NDJSON on the same connection pool
  (``_ollama_stream``). The first chunk gets the timeouts above; after
  it, ``stream_idle_timeout`` (default 120 s) of silence ends the stream. Retried only before
  the first delta, so no text is ever shown twice.
- **Why not the official ``ollama`` client.** It was the first choice and the benchmarks removed
  it (docs/benchmarks.md, "Make it fast"): ``Client.chat`` rebuilds and validates a pydantic
  model of the whole history on every request and validates a reply model that drops tool-call
  ids and rejects string arguments (so the raw body had to be captured anyway), about 1 ms a
  request at 60 messages; its import builds a TLS context and a default client (~170 ms of
  start-up); it fixes the timeout per client, not per request; and its stream hides what a safe
  stream needs. The wire is small and documented, so we speak it directly, with the client's
  conventions: ``OLLAMA_HOST`` parsed the same way, the same headers, ``OLLAMA_API_KEY`` as a
  bearer token, redirects followed. ``tests/test_fake_ollama.py`` keeps the fake server honest
  against the official client.
- **Tool-call arguments** are kept as given when they are an object; a JSON string that parses
  to an object is parsed; anything else becomes ``{"__raw__": "<text>"}`` for the parser to
  repair later.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from localhand.errors import (
    BadResponse,
    ConfigError,
    ModelError,
    ModelTimeout,
    ServerUnavailable,
)
from localhand.models._common import Retry as _Retry
from localhand.models._common import deadline_of, time_limit_hint, with_retries
from localhand.models._http import Client, ConnectFailed, ConnectionCut, HTTPError, Timeout
from localhand.models._ollama_wire import (
    canonical,
    chat_body,
    error_text,
    estimate_prompt_tokens,
    parse_host,
    request_headers,
    status_error,
    to_reply,
    truncation,
    unavailable,
    wire_message,
)
from localhand.models.base import DEFAULT_MAX_REPLY_TOKENS, ChatOptions, StreamChunk
from localhand.types import Message, Reply

__all__ = ["OllamaModel", "estimate_prompt_tokens"]

_log = logging.getLogger("localhand")
_HUNG = "the server seems hung; restart `ollama serve`"


class OllamaModel:
    """A :class:`~localhand.models.base.ChatModel` talking to an Ollama server.

    Args:
        model: the model's name as Ollama knows it (``qwen3:8b``).
        host: the server; ``None`` honours ``OLLAMA_HOST`` exactly as the ``ollama`` client
            does (``0.0.0.0:11434`` without a scheme is fine), else ``127.0.0.1:11434``.
        think: ``None`` sends nothing (the server's default), else ``True``/``False`` or a
            level ``"low"``/``"medium"``/``"high"`` for models that take one.
        keep_alive: how long the server keeps the model loaded (``"30m"``, ``-1``); ``None``
            leaves the server's default.
        options: extra Ollama options (``temperature``...); ``num_ctx`` is always ours.
        max_reply_tokens: the reply ceiling, sent as ``options.num_predict`` (thinking and
            answer together); ``None`` sends none, and Ollama's default is unlimited.
        on_warning: receives retry and truncation warnings; defaults to the ``localhand``
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
        think: bool | str | None = None,
        keep_alive: float | str | None = None,
        options: Mapping[str, Any] | None = None,
        max_reply_tokens: int | None = DEFAULT_MAX_REPLY_TOKENS,
        num_ctx_min: int = 8192,
        num_ctx_max: int = 32768,
        reply_reserve: int = 4096,
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
            raise ConfigError("No model name given: pass one such as qwen3:8b (see `ollama list`).")
        self._model = model
        self.host: str = parse_host(host or os.getenv("OLLAMA_HOST"))
        self._host_given = host is not None
        self.think, self.keep_alive = think, keep_alive
        self.options = dict(options or {})
        self.max_reply_tokens = max_reply_tokens
        self.num_ctx_min, self.num_ctx_max = num_ctx_min, num_ctx_max
        self.reply_reserve = reply_reserve
        self.request_timeout, self.first_request_timeout = request_timeout, first_request_timeout
        self.connect_timeout, self.metadata_timeout = connect_timeout, metadata_timeout
        self.stream_idle_timeout = stream_idle_timeout
        self.max_attempts, self.backoff, self._sleep = max(1, max_attempts), backoff, sleep
        self._warn = on_warning or _log.warning
        self._num_ctx = 0
        self._loaded = False  # after the first reply the model is in memory: shorter timeout
        self._show: dict[str, Any] | None = None
        self._show_done = False
        self._warned_ctx: set[int] = set()
        self._http: Client | None = None
        self._lock = threading.Lock()

    # -- the ChatModel protocol ----------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._model

    @property
    def num_ctx(self) -> int:
        """The context window sent with the last request (0 before the first)."""
        return self._num_ctx

    def chat(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]] | None = None,
        options: ChatOptions | None = None,
    ) -> Reply:
        body, estimate, num_ctx = self._chat_request(messages, tools, options, stream=False)
        base, hint = self._timeout_and_hint()
        data = self._with_retries("POST", "/api/chat", body, base, deadline_of(options), hint)
        self._loaded = True
        reply = to_reply(data, self._model)
        self._check_truncation(estimate, num_ctx, reply.usage.prompt_tokens)
        return reply

    def stream(
        self, messages: Sequence[Message], options: ChatOptions | None = None
    ) -> Iterator[StreamChunk]:
        """Stream one answer without tools (see ``StreamingChatModel`` for the contract)."""
        from localhand.models._ollama_stream import stream_chat

        return stream_chat(self, messages, options)

    def stream_reply(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]] | None = None,
        options: ChatOptions | None = None,
    ) -> Iterator[StreamChunk]:
        """``chat``'s reply as a stream, to watch (see ``ReplyStreamingModel``)."""
        from localhand.models._reply_stream import ollama_reply

        return ollama_reply(self, messages, tools, options)

    def _chat_request(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]] | None,
        options: ChatOptions | None,
        *,
        stream: bool,
    ) -> tuple[dict[str, Any], int, int]:
        """The body for a reply with tools (or a ``format``), the prompt's estimated tokens
        and the window it gets (both for the truncation check)."""
        schema = options.format if options is not None else None
        sent_tools = [] if schema is not None else list(tools or [])  # format replaces tools
        wire = [wire_message(m) for m in messages]
        estimate = estimate_prompt_tokens(wire, sent_tools)
        num_ctx = self._size_context(estimate)
        body = self._request_body(wire, num_ctx, stream=stream)
        if sent_tools:
            body["tools"] = sent_tools
        if schema is not None:
            body["format"] = schema
        return body, estimate, num_ctx

    def _request_body(
        self, wire: list[dict[str, Any]], num_ctx: int, *, stream: bool
    ) -> dict[str, Any]:
        return chat_body(
            self._model,
            wire,
            num_ctx=num_ctx,
            stream=stream,
            options=self.options,
            num_predict=self.max_reply_tokens,
            think=self.think,
            keep_alive=self.keep_alive,
        )

    def _timeout_and_hint(self) -> tuple[float, str]:
        """How long until the reply (or a stream's first chunk) may take, and what to raise."""
        timeout = self.request_timeout if self._loaded else self.first_request_timeout
        return timeout, time_limit_hint(self._loaded)

    # -- discovery, for backend auto-selection ----------------------------------------------------
    def list_models(self) -> list[str]:
        """The names of the models the server has (``/api/tags``)."""
        data = self._with_retries("GET", "/api/tags", None, self.metadata_timeout, None, _HUNG)
        names = [m.get("model") or m.get("name") for m in data.get("models") or []]
        return [n for n in names if n]

    def has_model(self, name: str | None = None) -> bool:
        """Whether the server has ``name`` (default: this model); ``x`` matches ``x:latest``."""
        wanted = canonical(name or self._model)
        return any(canonical(n) == wanted for n in self.list_models())

    def context_length(self) -> int | None:
        """The model's trained context length from ``/api/show``, or None if unknown."""
        info = (self._model_details() or {}).get("model_info") or {}
        arch = info.get("general.architecture")
        value = info.get(f"{arch}.context_length")
        if value is None:
            value = next((v for k, v in info.items() if k.endswith(".context_length")), None)
        return int(value) if isinstance(value, int | float) and value > 0 else None

    def capabilities(self) -> list[str] | None:
        """What the model can do per ``/api/show`` (``completion``, ``tools``, ``thinking``...)."""
        caps = (self._model_details() or {}).get("capabilities")
        return list(caps) if isinstance(caps, list) else None

    def close(self) -> None:
        with self._lock:
            http, self._http = self._http, None
        if http is not None:
            http.close()

    def __enter__(self) -> OllamaModel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- context window --------------------------------------------------------------------------
    @property
    def context_limit(self) -> int:
        """The largest window this backend will ask for: ``num_ctx_max``, or the model's own
        trained length when that is smaller. The loop compacts the history before reaching it."""
        trained = self.context_length()
        return min(self.num_ctx_max, trained) if trained else self.num_ctx_max

    def _size_context(self, estimate: int) -> int:
        limit = self.context_limit
        if self._num_ctx == 0:
            self._adopt_loaded_window(limit)
        wanted = max(self.num_ctx_min, 1 << max(0, estimate + self.reply_reserve - 1).bit_length())
        with self._lock:  # only grow: a new num_ctx reloads the model
            self._num_ctx = max(self._num_ctx, min(wanted, limit))
            return self._num_ctx

    def _adopt_loaded_window(self, limit: int) -> None:
        """Start from the window the model is already loaded with (``/api/ps``), an earlier
        run's, when it is within our bounds: asking for another one would make Ollama reload
        the model (seconds) and lose its prompt cache, at the start of every run of a batch or
        a plan. Failing is fine: we size from scratch."""
        try:
            data = self._attempt("GET", "/api/ps", None, self.metadata_timeout, _HUNG)
        except (ModelError, _Retry):
            return
        wanted = canonical(self._model)
        for entry in data.get("models") or []:
            if not isinstance(entry, dict) or canonical(str(entry.get("model") or "")) != wanted:
                continue
            window = entry.get("context_length")
            if isinstance(window, int) and self.num_ctx_min <= window <= limit:
                with self._lock:
                    self._num_ctx = max(self._num_ctx, window)

    def _check_truncation(self, estimate: int, num_ctx: int, evaluated: int) -> None:
        why = truncation(estimate, num_ctx, evaluated)
        if why is None or num_ctx in self._warned_ctx:
            return
        self._warned_ctx.add(num_ctx)
        trained = self.context_length()
        self._warn(
            f"Ollama probably truncated the prompt for {self._model}: {why} but the context "
            f"window is num_ctx={num_ctx}, so the oldest messages (system prompt and tool "
            f"descriptions first) were silently dropped. Raise num_ctx_max (now "
            f"{self.num_ctx_max}; the model's trained length is {trained or 'unknown'}) if "
            "memory allows, or keep the conversation shorter."
        )

    def _model_details(self) -> dict[str, Any] | None:
        """``/api/show`` once, cached. Failing is fine: we size without the model's limit."""
        if self._show_done:
            return self._show
        try:
            body = {"model": self._model}
            self._show = self._attempt("POST", "/api/show", body, self.metadata_timeout, _HUNG)
            self._show_done = True
        except _Retry:  # server down or flaky: try again next time
            return None
        except ModelError:  # e.g. 404: chat will say so properly
            self._show_done = True
        return self._show

    # -- transport ---------------------------------------------------------------------------------
    def _with_retries(
        self,
        method: str,
        path: str,
        body: Any,
        base_timeout: float,
        deadline: float | None,
        hint: str,
    ) -> dict[str, Any]:
        return with_retries(
            lambda timeout, why: self._attempt(method, path, body, timeout, why),
            base_timeout=base_timeout,
            deadline=deadline,
            hint=hint,
            max_attempts=self.max_attempts,
            backoff=self.backoff,
            sleep=self._sleep,
            warn=self._warn,
        )

    def _attempt(
        self, method: str, path: str, body: Any, timeout: float, hint: str
    ) -> dict[str, Any]:
        """One request; errors become ``ModelError``s, wrapped in ``_Retry`` when retryable."""
        connect_s = min(timeout, self.connect_timeout)
        try:
            response = self._transport().request(
                method, path, body, timeout=timeout, connect_timeout=connect_s
            )
        except ConnectFailed as exc:
            if "CERTIFICATE_VERIFY_FAILED" in str(exc) and self.host.startswith("http:"):
                raise BadResponse(
                    f"Ollama at {self.host} redirected to https: give its https:// address "
                    "with --host or OLLAMA_HOST."
                ) from None
            raise _Retry(self._unavailable()) from None
        except Timeout:
            raise ModelTimeout(
                f"Ollama at {self.host} did not answer for '{self._model}' within "
                f"{timeout:.3g} s ({hint}, or use a smaller model)."
            ) from None
        except ConnectionCut as exc:
            error = BadResponse(
                f"Ollama at {self.host} cut the connection mid-reply ({exc}).", retryable=True
            )
            raise _Retry(error) from None
        except HTTPError as exc:
            raise BadResponse(f"Could not talk to Ollama at {self.host}: {exc}") from None
        if response.status >= 400:
            raise self._status_error(response.status, error_text(response))
        try:
            data = response.json()
        except ValueError:
            data = None
        if not isinstance(data, dict):
            error = BadResponse(
                f"Ollama at {self.host} answered with something that is not Ollama's JSON "
                "(a proxy or another server on that port?).",
                retryable=True,
            )
            raise _Retry(error)
        return data

    def _status_error(self, status: int, text: str) -> Exception:
        return status_error(self.host, self._model, status, text)

    def _unavailable(self) -> ServerUnavailable:
        return unavailable(self.host, self._host_given)

    def _transport(self) -> Client:
        """The one client for every request and stream (closed by ``close``). Timeouts are
        set per request: the first one may wait for the model to load, later ones not."""
        with self._lock:
            if self._http is None:
                self._http = Client(self.host, request_headers())
            return self._http

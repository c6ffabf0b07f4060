"""Ollama backend: Ollama's native REST API (``/api/chat``, ``/api/show``, ``/api/tags``), as a
wire adapter over ``models.transport``.

What it takes care of, and why (the timeouts, retries and streaming are the transport's, the
same for both network backends: see ``models.transport``):

- **Context window.** Ollama silently drops the oldest messages (system prompt and tool
  descriptions first) when a prompt exceeds ``num_ctx``, and its default window is small
  (2048 before 0.6.7, then 4096, now 4k/32k/256k by VRAM). So every request carries
  ``options.num_ctx`` sized from the prompt plus a reply reserve, rounded up to a power of two
  (at least ``num_ctx_min``), bounded by ``num_ctx_max`` and the model's trained length from
  ``/api/show``. The tool loop chooses it once, before its first request, for the whole run
  (``plan_context``); it grows mid-run only when a prompt would otherwise be cut, with a
  warning, since a different ``num_ctx`` makes Ollama reload the model. For
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
- **Errors.** A missing model (404) says to ``ollama pull`` it, a model without tools (400)
  names some that have them, an unreachable server says where its address came from (``--host``,
  ``OLLAMA_HOST`` or the default); see ``_ollama_wire.OllamaWire``.
- **Streaming** (``stream`` for the simple path, ``stream_reply`` with ``--watch-replies``):
  NDJSON read by ``_ollama_stream``; the final chunk gets the same truncation check.
- **Why not the official ``ollama`` client.** It was the first choice and the benchmarks removed
  it (docs/benchmarks.md, "Make it fast"): ``Client.chat`` rebuilds and validates a pydantic
  model of the whole history on every request and validates a reply model that drops tool-call
  ids and rejects string arguments (so the raw body had to be captured anyway), about 1 ms a
  request at 60 messages; its import builds a TLS context and a default client (~170 ms of
  start-up); it fixes the timeout per client, not per request; and its stream hides what a safe
  stream needs. The wire is small and documented, so we speak it directly, with the client's
  conventions: ``OLLAMA_HOST`` parsed the same way, the same headers, ``OLLAMA_API_KEY`` as a
  bearer token (unless ``api_key`` is given), redirects followed.
  ``tests/testing/test_fake_ollama.py``
  keeps the fake server honest against the official client.
- **Tool-call arguments** are kept as given when they are an object; a JSON string that parses
  to an object is parsed; anything else becomes ``{"__raw__": "<text>"}`` for the parser to
  repair later.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Unpack

from localhand.errors import ConfigError, ModelError
from localhand.models._common import Retry, deadline_of, logged
from localhand.models._network import NetworkBackend
from localhand.models._ollama_wire import (
    OllamaWire,
    canonical,
    chat_body,
    parse_host,
    request_headers,
    to_reply,
    trained_context,
    truncation,
    wire_message,
)
from localhand.models.base import ChatOptions, StreamChunk, Tools
from localhand.models.connection import Connection, ConnectionSettings, connection_from
from localhand.models.tokens import estimate_prompt_tokens
from localhand.models.transport import Transport
from localhand.profiles import Profile, profile_for, sampling_options, thinking_switch, wire_history
from localhand.types import Message, Reply

__all__ = ["OllamaModel"]


class OllamaModel(NetworkBackend):
    """A :class:`~localhand.models.base.ChatModel` talking to an Ollama server.

    Args:
        model: the model's name as Ollama knows it (``qwen3:8b``).
        host: the server; ``None`` honours ``OLLAMA_HOST`` exactly as the ``ollama`` client
            does (``0.0.0.0:11434`` without a scheme is fine), else ``127.0.0.1:11434``.
        connection: the address, key, timeouts, attempts and reply ceiling
            (:class:`~localhand.models.connection.Connection`); ``host`` and the keywords in
            ``settings`` override its fields.
        think: ``None`` sends nothing (the server's default), else ``True``/``False`` or a
            level ``"low"``/``"medium"``/``"high"`` for models that take one.
        keep_alive: how long the server keeps the model loaded (``"30m"``, ``-1``); ``None``
            leaves the server's default.
        options: extra Ollama options (``temperature``...); ``num_ctx`` is always ours. They
            win over the profile's sampling.
        profile: what the model's family needs (``localhand.profiles``): the sampling its
            makers recommend goes into ``options``, ``think`` is spelled as it takes it, and
            the history is sent as its template expects. Default: the profile of ``model``.
        num_ctx_min, num_ctx_max, reply_reserve: the context window's bounds, and the tokens
            kept free in it for the reply (see the module docstring).
        sleep: the backoff's sleep function, replaceable in tests.
        on_warning: receives retry and truncation warnings; defaults to the ``localhand``
            logger.
        settings: any field of ``Connection`` but ``host``: ``max_reply_tokens`` (the reply
            ceiling, sent as ``options.num_predict``; ``None`` sends none, and Ollama's
            default is unlimited), ``request_timeout``, ``stream_idle_timeout``...
    """

    profile: Profile
    plans_context = True

    server_kind = "ollama"

    def __init__(
        self,
        model: str,
        host: str | None = None,
        *,
        connection: Connection | None = None,
        think: bool | str | None = None,
        keep_alive: float | str | None = None,
        options: Mapping[str, Any] | None = None,
        num_ctx_min: int = 8192,
        num_ctx_max: int = 32768,
        reply_reserve: int = 4096,
        sleep: Callable[[float], None] = time.sleep,
        on_warning: Callable[[str], None] | None = None,
        profile: Profile | None = None,
        **settings: Unpack[ConnectionSettings],
    ) -> None:
        if not model:
            raise ConfigError("No model name given: pass one such as qwen3:8b (see `ollama list`).")
        self._name = model
        self.profile = profile or profile_for(model)
        given = connection_from(connection, host, settings)
        url = parse_host(given.host or os.getenv("OLLAMA_HOST"))
        self._wire = OllamaWire(url, model, host_given=given.host is not None)
        self._warn = on_warning or logged
        headers = request_headers(given.api_key or os.getenv("OLLAMA_API_KEY"))
        self.transport = Transport(url, headers, given, self._wire, warn=self._warn, sleep=sleep)
        self.think, self.keep_alive = think, keep_alive
        self.options = dict(options or {})
        self.num_ctx_min, self.num_ctx_max = num_ctx_min, num_ctx_max
        self.reply_reserve = reply_reserve
        self._num_ctx = 0
        self._show: dict[str, Any] | None = None
        self._show_done = False
        self._warned_ctx: set[int] = set()
        self._lock = threading.Lock()

    @property
    def host(self) -> str:
        """The server's base URL (``http://127.0.0.1:11434``)."""
        return self.transport.url

    @property
    def num_ctx(self) -> int:
        """The context window sent with the last request (0 before the first)."""
        return self._num_ctx

    # -- the ChatModel protocol ----------------------------------------------------------------
    def chat(
        self, messages: Sequence[Message], tools: Tools = None, options: ChatOptions | None = None
    ) -> Reply:
        body, estimate, num_ctx = self._chat_request(messages, tools, options, stream=False)
        data = self.transport.ask("/api/chat", body, deadline_of(options))
        reply = to_reply(data, self._name)
        self._check_truncation(estimate, num_ctx, reply.usage.prompt_tokens)
        return reply

    def stream_reply(
        self, messages: Sequence[Message], tools: Tools = None, options: ChatOptions | None = None
    ) -> Iterator[StreamChunk]:
        """``chat``'s reply as a stream, to watch (see ``ReplyStreamingModel``), checked for
        truncation at its end."""
        from localhand.models._ollama_stream import read_chunks  # off the first request's path
        from localhand.models._reply_stream import ollama_reply  # off the first request's path

        body, estimate, num_ctx = self._chat_request(messages, tools, options, stream=True)
        calls: list[Any] = []  # the tool calls Ollama sends, whole

        def read(lines: Iterator[str]) -> Iterator[StreamChunk]:
            return read_chunks(lines, self._wire, calls)

        chunks = self.transport.stream_ndjson("/api/chat", body, read, deadline_of(options))
        try:
            for chunk in ollama_reply(chunks, calls, self._name):
                if chunk.done and chunk.usage is not None:
                    self._check_truncation(estimate, num_ctx, chunk.usage.prompt_tokens)
                yield chunk
        finally:
            chunks.close()  # a reply stopped early: the connection goes, the server stops

    def _chat_request(
        self,
        messages: Sequence[Message],
        tools: Tools,
        options: ChatOptions | None,
        *,
        stream: bool,
    ) -> tuple[dict[str, Any], int, int]:
        """The body for a reply with tools (or a ``format``), the prompt's estimated tokens
        and the window it gets (both for the truncation check). The profile's sampling goes
        under the user's ``options``. ``think`` is sent only when asked for (``--think``, or
        this request's ``options.think``): as the family spells it (gpt-oss's levels); unasked,
        the model's own default stands, and a model that cannot think is never sent
        ``think: true``."""
        schema = options.format if options is not None else None
        sent_tools = [] if schema is not None else list(tools or [])  # format replaces tools
        wire = [wire_message(m) for m in wire_history(messages, self.profile)]
        estimate = estimate_prompt_tokens(wire, sent_tools)
        num_ctx = self._size_context(estimate)
        asked = options.think if options is not None and options.think is not None else self.think
        switch = thinking_switch(self.profile, asked)
        think = switch.ollama_think if switch.ollama_think is not None else asked
        sampling = sampling_options(self.profile, switch.thinks, "ollama")
        body = chat_body(
            self._name,
            wire,
            num_ctx=num_ctx,
            stream=stream,
            options={**sampling, **self.options},
            num_predict=self.max_reply_tokens,
            think=None if asked is None else think,
            keep_alive=self.keep_alive,
        )
        if sent_tools:
            body["tools"] = sent_tools
        if schema is not None:
            body["format"] = schema
        return body, estimate, num_ctx

    # -- discovery, for backend auto-selection ----------------------------------------------------
    def context_length(self) -> int | None:
        """The model's trained context length from ``/api/show``, or None if unknown."""
        return trained_context((self._model_details() or {}).get("model_info"))

    # -- context window --------------------------------------------------------------------------
    @property
    def context_limit(self) -> int:
        """The largest window this backend will ask for: ``num_ctx_max``, or the model's own
        trained length when that is smaller. The loop compacts the history before reaching it."""
        trained = self.context_length()
        return min(self.num_ctx_max, trained) if trained else self.num_ctx_max

    def plan_context(self, tokens: int) -> int:
        """Choose the window before the run's first request, for a conversation expected to
        reach ``tokens`` (``localhand.prompt.context.expected_tokens``: the first prompt, the
        iterations the task may take, its token budget). The window the model is already
        loaded with is kept when it is that large (no reload); otherwise the run starts with
        the window it will need, so that Ollama loads the model once, now, rather than again
        in the middle of the run, where a reload also throws away the prompt cache."""
        limit = self._adopt_loaded_window()
        with self._lock:
            self._num_ctx = max(self._num_ctx, self._window_for(tokens, limit))
            return self._num_ctx

    def _size_context(self, estimate: int) -> int:
        """The ``num_ctx`` of one request: the window chosen for the run, grown only when this
        prompt would not fit it (and then said, since Ollama reloads the model)."""
        limit = self._adopt_loaded_window()
        wanted = self._window_for(estimate, limit)
        with self._lock:  # only grow: a new num_ctx reloads the model
            before = self._num_ctx
            self._num_ctx = max(before, wanted)
            grown = self._num_ctx
        if before and grown > before:
            self._warn(
                f"the prompt (about {estimate} tokens) no longer fits num_ctx={before}: raised "
                f"to {grown}, which makes Ollama reload {self._name} (seconds for a large "
                "model) and start its prompt cache over"
            )
        return grown

    def _window_for(self, tokens: int, limit: int) -> int:
        """The power of two that holds ``tokens`` and a reply, within the bounds."""
        wanted = max(self.num_ctx_min, 1 << max(0, tokens + self.reply_reserve - 1).bit_length())
        return min(wanted, limit)

    def _adopt_loaded_window(self) -> int:
        """Before the first window is chosen (once a backend: a batch's tasks share it, and
        its window), start from the window the model is already loaded with (``/api/ps``), an
        earlier run's, when it is within our bounds: asking for another one would make Ollama
        reload the model (seconds) and lose its prompt cache, at the start of every run of a
        batch or a plan. Failing is fine: we size from scratch. Returns ``context_limit``."""
        limit = self.context_limit
        if self._num_ctx:
            return limit
        try:
            data = self.transport.probe("GET", "/api/ps")
        except (ModelError, Retry):
            return limit
        wanted = canonical(self._name)
        for entry in data.get("models") or []:
            if not isinstance(entry, dict) or canonical(str(entry.get("model") or "")) != wanted:
                continue
            window = entry.get("context_length")
            if isinstance(window, int) and self.num_ctx_min <= window <= limit:
                with self._lock:
                    self._num_ctx = max(self._num_ctx, window)
        return limit

    def _check_truncation(self, estimate: int, num_ctx: int, evaluated: int) -> None:
        why = truncation(estimate, num_ctx, evaluated)
        if why is None or num_ctx in self._warned_ctx:
            return
        self._warned_ctx.add(num_ctx)
        trained = self.context_length()
        self._warn(
            f"Ollama probably truncated the prompt for {self._name}: {why} but the context "
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
            self._show = self.transport.probe("POST", "/api/show", {"model": self._name})
            self._show_done = True
        except Retry:  # server down or flaky: try again next time
            return None
        except ModelError:  # e.g. 404: chat will say so properly
            self._show_done = True
        return self._show

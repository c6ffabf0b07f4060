"""OpenAI-compatible backend: ``/v1/chat/completions`` and ``/v1/models``, as a wire adapter
over ``models.transport``.

For llama.cpp's ``llama-server``, vLLM, LM Studio, ``python -m llama_cpp.server`` and Ollama's
``/v1``. What it takes care of, and why (the timeouts, retries and streaming are the
transport's, the same for both network backends: see ``models.transport``):

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
- **Errors** name the host and say what to do (``_openai_wire.OpenAIWire``): a missing
  model, a wrong base URL, refused tools, a prompt over the window, a missing API key.
- **Reply ceiling.** ``max_tokens`` on every request (4096 by default), the one field all of
  these servers take (``max_completion_tokens`` is newer), where the default is unlimited;
  reasoning counts against it, and a reply that reaches it ends ``finish_reason: length``.
- **Slot affinity** (llama-server): every request names the one slot this backend keeps
  (``id_slot``), so parallel tasks do not evict each other's prompt cache (``_slots``).
- **The server's own figures**: tokens prefilled and reused, prefill and generation time, from
  llama-server's ``timings`` or ``usage.prompt_tokens_details`` (``_served_figures``).
- **Streaming** (``stream`` for the simple path, ``stream_reply`` with ``--watch-replies``):
  server-sent events read by ``_openai_stream``, with ``stream_options.include_usage`` for the
  counts; an ``error`` event mid-stream (llama-server sends them with status 200) is an error.
  A refusal before the first delta is handled as ``chat`` handles it (tool mode, format).
- **Whether the template shows the tools**: llama-server's ``/apply-template``, asked once
  (``_template_probe``); where not, the loop describes them in its prompt.
- **Why not the official ``openai`` SDK.** Importing it costs about half a second (against a
  0.3 s start-up target for the whole CLI), and each request walks the history through its
  TypedDict transforms (about 18 ms at 60 messages). The two endpoints are small and stable,
  so we speak them as the SDK does on the wire: ``Authorization: Bearer`` with ``api_key``,
  ``OPENAI_API_KEY`` or a placeholder, ``extra_body`` merged into the body,
  ``OPENAI_BASE_URL`` honoured, redirects followed (``tests/testing/test_fake_ollama_v1.py``).

The context window is the server's (``llama-server -c``, vLLM ``--max-model-len``; prefer
``--backend ollama`` for Ollama), read before the first request (``_served_context``) so
that the loop compacts in time; a request that does not fit is reported with that advice.

The model's profile (``localhand.profiles``) adds the sampling its makers recommend (under
``temperature`` and ``extra_body``, which win), the template's thinking switch in
``chat_template_kwargs`` when thinking is asked for, and the history as its template expects.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any, Literal, TypeVar, Unpack

from localhand.errors import BadResponse, ConfigError, ToolsUnsupported
from localhand.models._common import deadline_of, logged
from localhand.models._json_calls import decode, plain_messages, reply_schema
from localhand.models._network import ConnectionSetting, NetworkBackend
from localhand.models._openai_stream import read_chunks
from localhand.models._openai_wire import (
    FormatRefused,
    OpenAIWire,
    base_url,
    request_headers,
    response_format,
    think_of,
    to_openai_messages,
    to_reply,
)
from localhand.models._reply_stream import openai_reply
from localhand.models._served_context import served_context, server_props
from localhand.models._slots import SlotFile, claim, release, root_of, slot_file
from localhand.models._template_probe import template_renders_tools as probe
from localhand.models.base import ChatOptions, StreamChunk, Tools
from localhand.models.connection import Connection, ConnectionSettings, connection_from
from localhand.models.tokens import CHARS_PER_TOKEN, estimate_prompt_tokens
from localhand.models.transport import Transport
from localhand.profiles import Profile, profile_for, sampling_options, thinking_switch, wire_history
from localhand.types import Message, Reply, Usage

__all__ = ["DEFAULT_BASE_URL", "OpenAICompatModel", "OpenAISettings", "ToolMode"]

DEFAULT_BASE_URL = "http://127.0.0.1:8080/v1"
"""llama-server's default address."""
ToolMode = Literal["auto", "native", "schema"]
T = TypeVar("T")


class OpenAISettings(ConnectionSettings, total=False):
    """The connection's settings as keywords, and this backend's own name for one of them."""

    max_tokens: int | None
    """``max_reply_tokens`` by the name of the field it is sent as."""


class OpenAICompatModel(NetworkBackend):
    """A :class:`~localhand.models.base.ChatModel` talking to an OpenAI-compatible server.

    Args:
        model: the model's name on the server (llama-server accepts any name).
        host: the base URL, with or without ``/v1`` (``http://127.0.0.1:8080``); ``None``
            means ``OPENAI_BASE_URL`` or llama-server's default ``http://127.0.0.1:8080/v1``.
        connection: the address, key, timeouts, attempts and reply ceiling
            (:class:`~localhand.models.connection.Connection`); ``host`` and the keywords in
            ``settings`` override its fields.
        tool_mode: ``auto``, ``native`` or ``schema`` (see the module docstring).
        reasoning_effort: sent as ``reasoning_effort`` when set (``low``... or ``none``).
        temperature: ``None`` leaves the server's default.
        extra_body: more fields for every request (``{"top_k": 20}``).
        context_length: the server's context window in tokens (llama-server ``-c``, vLLM
            ``--max-model-len``); ``None`` asks the server before the first request.
        think: ``True``/``False`` or a level: sent as the profile's template switch
            (``chat_template_kwargs``); ``None`` leaves the template's default.
        profile: the model's family (``localhand.profiles``); default: the profile of ``model``.
        pin_slot: keep one llama-server slot (``id_slot``) for every request of this backend,
            chosen among the server's ``total_slots`` (``_slots``); no effect elsewhere.
        sleep: the backoff's sleep function, replaceable in tests.
        on_warning: receives retry and mode-switch warnings; defaults to the ``localhand``
            logger.
        settings: any field of ``Connection`` but ``host``: ``api_key`` (a bearer token;
            ``None``: ``OPENAI_API_KEY`` or a placeholder), ``max_tokens`` or
            ``max_reply_tokens`` (4096 by default; ``None``: the server's, unlimited),
            ``request_timeout``, ``stream_idle_timeout``...
    """

    max_tokens = ConnectionSetting["int | None"]("max_reply_tokens")

    profile: Profile

    server_kind = "openai"

    @property
    def call_transport(self) -> str:  # type: ignore[override]  # a property: auto may fall back
        """``schema`` in schema mode (and once ``auto`` fell back to it), else ``native``."""
        return "schema" if self.tool_mode == "schema" else "native"

    def __init__(
        self,
        model: str,
        host: str | None = None,
        *,
        connection: Connection | None = None,
        tool_mode: ToolMode = "auto",
        reasoning_effort: str | None = None,
        temperature: float | None = None,
        extra_body: Mapping[str, Any] | None = None,
        context_length: int | None = None,
        think: bool | str | None = None,
        profile: Profile | None = None,
        pin_slot: bool = True,
        sleep: Callable[[float], None] = time.sleep,
        on_warning: Callable[[str], None] | None = None,
        **settings: Unpack[OpenAISettings],
    ) -> None:
        if not model:
            raise ConfigError("No model name given: pass the name the server serves with --model.")
        if tool_mode not in ("auto", "native", "schema"):
            raise ConfigError(f"tool_mode must be auto, native or schema, not {tool_mode!r}")
        if "max_tokens" in settings:
            if "max_reply_tokens" in settings:
                raise ConfigError("max_tokens and max_reply_tokens are one setting: give one.")
            settings["max_reply_tokens"] = settings.pop("max_tokens")
        self._name = model
        self.profile = profile or profile_for(model)
        self.think = think
        given = connection_from(connection, host, settings)
        url = base_url(given.host or os.getenv("OPENAI_BASE_URL") or DEFAULT_BASE_URL)
        self._wire = OpenAIWire(url, model)
        self._warn = on_warning or logged
        api_key = given.api_key or os.getenv("OPENAI_API_KEY") or "no-key-needed"
        headers = self._headers = request_headers(api_key)
        self.transport = Transport(url, headers, given, self._wire, warn=self._warn, sleep=sleep)
        self.tool_mode: ToolMode = tool_mode
        self.reasoning_effort = reasoning_effort
        self.temperature, self.extra_body = temperature, dict(extra_body or {})
        self.context_length = context_length
        self._asked_context = context_length is not None
        self.pin_slot = pin_slot
        self.slot: int | None = None
        """The llama-server slot every request names (``id_slot``), once claimed."""
        self._slot_asked = not pin_slot
        self.format_style = "json_schema"
        """How ``response_format`` is sent: ``json_schema``, or llama.cpp's older ``json_object``
        with a ``schema`` once the server has refused the standard form."""

    @property
    def base_url(self) -> str:
        """The URL the endpoints hang off (``http://127.0.0.1:8080/v1``)."""
        return self.transport.url

    @property
    def context_limit(self) -> int | None:
        """The window the loop keeps the history within: ``context_length``, else what the
        server says (asked once, before the first request), else unknown."""
        if not self._asked_context:
            self._asked_context = True
            props, timeout = self._server_props, self.connection.metadata_timeout
            self.context_length = served_context(self.base_url, self._name, props, timeout)
        return self.context_length

    @functools.cached_property
    def template_renders_tools(self) -> bool | None:  # type: ignore[override]
        """Whether the server's template shows the model the tools: llama-server's
        ``/apply-template``, asked once (``_template_probe``); None where it cannot say."""
        return probe(self.base_url, self._headers, self.connection.metadata_timeout)

    @functools.cached_property
    def _server_props(self) -> dict[str, Any] | None:
        """llama-server's ``/props``, asked once for the window and the slot count both."""
        return server_props(self.base_url, self.connection.metadata_timeout)

    # -- the ChatModel protocol ----------------------------------------------------------------
    def chat(
        self, messages: Sequence[Message], tools: Tools = None, options: ChatOptions | None = None
    ) -> Reply:
        deadline = deadline_of(options)
        fmt = options.format if options is not None else None

        def ask(schema_mode: bool) -> Any:
            body = self._request(messages, tools, fmt, schema_mode, think=think_of(options))
            return self.transport.ask("/chat/completions", body, deadline, self._completion)

        data, schema_mode = self._taken(ask)
        return self._reply(data, schema_mode and bool(tools) and fmt is None)

    def stream(
        self, messages: Sequence[Message], options: ChatOptions | None = None
    ) -> Iterator[StreamChunk]:
        """Stream one answer without tools (see ``StreamingChatModel`` for the contract)."""
        body = self._request(messages, None, None, False, stream=True, think=think_of(options))
        yield from self._streamed(body, deadline_of(options))

    def stream_reply(
        self, messages: Sequence[Message], tools: Tools = None, options: ChatOptions | None = None
    ) -> Iterator[StreamChunk]:
        """``chat``'s reply as a stream, to watch (see ``ReplyStreamingModel``)."""
        deadline = deadline_of(options)
        fmt = options.format if options is not None else None
        calls: dict[int, dict[str, Any]] = {}

        def ask(schema_mode: bool) -> tuple[StreamChunk, Iterator[StreamChunk]]:
            # a refusal comes before the first delta: asked again as ``chat`` would
            calls.clear()
            body = self._request(
                messages, tools, fmt, schema_mode, stream=True, think=think_of(options)
            )
            chunks = self._streamed(body, deadline, calls)
            return next(chunks), chunks

        (first, chunks), schema_mode = self._taken(ask)
        schema_calls = schema_mode and bool(tools) and fmt is None

        def reply(data: Mapping[str, Any]) -> Reply:
            return self._reply(data, schema_calls)

        def estimated(text: str) -> Usage:
            prompt = estimate_prompt_tokens(list(messages), tools)
            return Usage(prompt, max(1, len(text) // CHARS_PER_TOKEN) if text else 0)

        yield from openai_reply(first, chunks, calls, reply, estimated)

    def _streamed(
        self,
        body: dict[str, Any],
        deadline: float | None,
        calls: dict[int, dict[str, Any]] | None = None,
    ) -> Iterator[StreamChunk]:
        """The answer to a ``/chat/completions`` ``body`` with ``stream: true``; tool-call
        deltas are put together in ``calls`` (by index) when it is given."""

        def read(events: Iterator[tuple[str, str]]) -> Iterator[StreamChunk]:
            return read_chunks(events, self._wire, calls)

        return self.transport.stream_sse("/chat/completions", body, read, deadline)

    def _taken(self, ask: Callable[[bool], T]) -> tuple[T, bool]:
        """``ask(schema_mode)``'s answer and the schema mode it was asked in, asked again after
        a refusal: a ``response_format`` the server refused (then in llama.cpp's older
        dialect), or tools it refused in ``auto`` mode (then in schema mode, with a warning)."""
        while True:
            schema_mode = self.tool_mode == "schema"
            try:
                return ask(schema_mode), schema_mode
            except FormatRefused:
                if self.format_style == "json_object":
                    raise
                self.format_style = "json_object"
            except ToolsUnsupported as refusal:
                if self.tool_mode != "auto":
                    raise
                self.tool_mode = "schema"
                self._warn(
                    f"{str(refusal).split(' Pick')[0].rstrip('.')}. Switching to schema mode: "
                    "tool calls are now asked for as JSON constrained by response_format."
                )

    def _completion(self, data: Any) -> dict[str, Any]:
        """``data`` if it is a chat completion; else the address is not the API's."""
        if not isinstance(data, dict) or not isinstance(data.get("choices"), list):
            raise BadResponse(
                f"The server at {self.base_url} answered JSON that is not a chat "
                "completion. --host must be its OpenAI-compatible base URL (usually ending "
                "in /v1)."
            )
        return data

    def _reply(self, data: Mapping[str, Any], schema_calls: bool) -> Reply:
        """A completion as a Reply; with ``schema_calls`` its content is decoded as the JSON
        call (or final answer) that schema mode asked for."""
        reply = to_reply(data, self._name)
        if schema_calls and not reply.tool_calls:
            content, calls = decode(reply.content)
            reply = replace(reply, content=content, tool_calls=calls)
        return reply

    # -- requests --------------------------------------------------------------------------------
    def _request(
        self,
        messages: Sequence[Message],
        tools: Tools,
        fmt: dict[str, Any] | None,
        schema_mode: bool,
        *,
        stream: bool = False,
        think: bool | str | None = None,
    ) -> dict[str, Any]:
        """The JSON body; ``extra_body`` is merged in last, so its keys win (as in the SDK)."""
        body: dict[str, Any] = {"model": self._name, "stream": stream}
        asked = self.think if think is None else think
        switch = thinking_switch(self.profile, asked)
        if asked is not None and switch.template_kwargs:  # unasked: the template's default
            body["chat_template_kwargs"] = switch.template_kwargs
        body.update(sampling_options(self.profile, switch.thinks, "openai"))
        if stream:
            body["stream_options"] = {"include_usage": True}
        if schema_mode:
            body["messages"] = plain_messages(messages, tools)
            if tools and fmt is None:
                fmt = reply_schema(tools)
        else:
            body["messages"] = to_openai_messages(wire_history(messages, self.profile))
            if tools and fmt is None:  # with a format the reply is JSON: no tools then
                body["tools"] = list(tools)
        if fmt is not None:
            body["response_format"] = response_format(fmt, self.format_style)
        if self.reasoning_effort is not None:
            body["reasoning_effort"] = self.reasoning_effort
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if (slot := self._claimed_slot()) is not None:
            body["id_slot"] = slot
        return {**body, **self.extra_body} if self.extra_body else body

    def _claimed_slot(self) -> int | None:
        """This backend's llama-server slot, claimed at its first request (see ``_slots``)."""
        if not self._slot_asked:
            self._slot_asked = True
            self.slot = claim(self.base_url, lambda: self._server_props)
        return self.slot

    def slot_file(self, action: Literal["save", "restore"], filename: str) -> SlotFile | None:
        """The slot this backend holds, saved to or restored from ``filename`` (``_slots``)."""
        if (slot := self._claimed_slot()) is None:
            return None
        return slot_file(root_of(self.base_url), self._headers, slot, action, filename)

    def warm(self, messages: Sequence[Message], tools: Sequence[dict[str, Any]]) -> None:
        """A one-token reply to ``messages`` on this backend's slot, to cache them there."""
        if self._claimed_slot() is not None:
            body = self._request(messages, tools, None, self.tool_mode == "schema")
            self.transport.ask("/chat/completions", {**body, "max_tokens": 1}, None)

    def close(self) -> None:
        """Close the connection and give the slot back."""
        if self.slot is not None:
            release(self.base_url, self.slot)
            self.slot, self._slot_asked = None, not self.pin_slot
        super().close()

"""A fake Ollama server on a real loopback socket, for localhand's tests and for yours.

It speaks Ollama's native API the way a real server does (field names, status codes, error
bodies ``{"error": "..."}``, NDJSON streaming by default, durations in nanoseconds), so the
code under test runs its real HTTP client against it. Each ``POST /api/chat`` takes the next
item of a script::

    from localhand.testing import FakeOllama, Fault

    def test_agent_reads_a_file():
        script = [
            {"tool_calls": [{"function": {"name": "read_file", "arguments": {"path": "a.py"}}}]},
            Fault.status(503),                      # one transient failure
            "The file defines one function.",       # plain text: a final answer
        ]
        with FakeOllama(script, models={"qwen3:8b": {"context_length": 40960}}) as server:
            run_my_agent(host=server.url, model="qwen3:8b")
            assert server.chat_requests[0].body["options"]["num_ctx"] >= 8192
            assert server.remaining == 0

Script items: an assistant message dict (``content``, ``thinking``, ``tool_calls``, and
optionally ``done_reason``, ``prompt_eval_count``, ``prompt_eval_cached_count``, ``eval_count``
to override the accounting,
``chunk_delay``, seconds between the chunks of a streamed reply, for a slow model;
``token_rate``, tokens a second, for a model of that speed; ``loop``, a span the reply repeats
without end after its content, until the request's ``num_predict`` or the end of the window;
see ``_fake_generation``),
a plain string (the content), a :class:`~localhand.types.Reply`, a callable
``(request_body) -> item``, or a :class:`Fault`.
Requests that a real server would refuse (unknown model → 404, tools for a model without the
``tools`` capability → 400) are refused without consuming the script. When the script runs
out the server answers 500 with an error saying so, so a test cannot pass by accident.

Ollama's OpenAI-compatible ``POST /v1/chat/completions`` (and ``GET /v1/models``) take items
from the same script, as Ollama does by translating to and from ``/api/chat``: replies come
back as ``chat.completion`` objects (string arguments, call ids, ``finish_reason``, ``usage``,
thinking as ``reasoning``), errors as ``{"error": {"message", "type", ...}}``, and requests
Ollama would reject (arguments that are not JSON strings, say) get its 400. A callable item
receives the translated native body; ``openai_requests`` has the requests as sent.
"""

from __future__ import annotations

import contextlib
import json
import random
import socket
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from localhand.testing._fake_faults import Fault, Item
from localhand.testing._fake_generation import reply_tokens
from localhand.testing._fake_models import _canonical, _make_model, _Model
from localhand.testing._fake_wire import _Handler, _Server

__all__ = ["DEFAULT_MODELS", "FakeOllama", "Fault", "RecordedRequest"]


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request the fake received; ``body`` is the parsed JSON (or None)."""

    method: str
    path: str
    body: Any
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def options(self) -> dict[str, Any]:
        """The request's ``options`` object (``num_ctx``, ``temperature``...), or ``{}``."""
        return dict(self.body.get("options") or {}) if isinstance(self.body, dict) else {}


DEFAULT_MODELS: dict[str, dict[str, Any]] = {
    "qwen3:8b": {"context_length": 40960, "tools": True, "thinking": True},
    "llama3.1:8b": {"context_length": 131072, "tools": True},
    "gemma2:2b": {"context_length": 8192, "tools": False},
}


class FakeOllama:
    """An Ollama look-alike serving on ``127.0.0.1`` at a free port, in a daemon thread.

    Args:
        script: items consumed one per ``/api/chat`` request (see the module docstring).
        models: name → spec with ``context_length``, ``tools``, ``thinking``, ``family``,
            ``num_ctx`` (the model's own default), ``parameter_size``, ``quantization_level``.
        default_num_ctx: the context window when a request sets no ``options.num_ctx``
            (4096 since Ollama 0.6.7; newer builds pick 4k/32k/256k from the VRAM).
        truncation: how an over-long prompt is reported: ``"limit"`` (the count is capped at
            the window, as the older runner logged ``new=limit``) or ``"half"`` (the newer
            runner keeps about half the window).
        count_cached_tokens: if True (as Ollama does since it reports its cache),
            ``prompt_eval_count`` is the whole prompt and ``prompt_eval_cached_count`` the
            prefix shared with the previous request (left out when zero), and
            ``prompt_eval_duration`` times the rest only; if False, ``prompt_eval_count``
            leaves out that prefix and nothing says it, as some older builds did.
        openai_reasoning_field: where ``/v1`` replies put the thinking: Ollama says
            ``reasoning``; ``reasoning_content`` imitates llama-server and older vLLM.
        port: the port to listen on; 0 picks a free one (see ``url``).
        slots: chat requests generated at once, like ``OLLAMA_NUM_PARALLEL``; ``None``: no
            limit. Requests beyond it wait in the server's queue, as Ollama's do.
        latency: seconds each chat request holds its slot before it is answered (a model
            that takes that long to reply), so throughput can be measured against slots.
        max_queue: requests that may wait for a slot, like ``OLLAMA_MAX_QUEUE``; one more is
            answered 503 "server busy". ``None``: no limit.
        props: also answer llama-server's ``GET /props``, whose ``total_slots`` publishes
            ``slots`` (1 when None) as llama-server publishes its ``--parallel``. Ollama has
            no such endpoint (404), hence off by default; with it, the slot actions too.
        slot_save: the slot actions work, as with ``--slot-save-path`` (``saved_slots``).
        template_renders_tools: also answer llama-server's ``POST /apply-template``, with a
            prompt that names the tools sent (True) or leaves them out (False, as Gemma 3's
            template does); ``None``: no such endpoint (404), as on Ollama and vLLM.
        strict_format: hold a scripted reply to a request with a ``format`` to it, as
            Ollama's constrained decoding would: a reply that is not JSON is answered 500
            (the script is wrong). Off by default: some tests script a model that ignores
            the format. A ``format`` that is neither ``"json"`` nor a schema object is
            refused 400 either way, as Ollama refuses it.
    """

    def __init__(
        self,
        script: Iterable[Item] = (),
        *,
        models: Mapping[str, Mapping[str, Any]] | None = None,
        version: str = "0.12.6",
        default_num_ctx: int = 4096,
        truncation: Literal["limit", "half"] = "limit",
        count_cached_tokens: bool = True,
        openai_reasoning_field: str = "reasoning",
        port: int = 0,
        slots: int | None = None,
        latency: float = 0.0,
        max_queue: int | None = None,
        props: bool = False,
        slot_save: bool = False,
        strict_format: bool = False,
        template_renders_tools: bool | None = None,
    ) -> None:
        self._script: list[Item] = list(script)
        self._models = {
            _canonical(n): _make_model(n, s)
            for n, s in (DEFAULT_MODELS if models is None else models).items()
        }
        self.version = version
        self.default_num_ctx = default_num_ctx
        self.truncation = truncation
        self.count_cached_tokens = count_cached_tokens
        self.openai_reasoning_field = openai_reasoning_field
        self.requests: list[RecordedRequest] = []
        self._consumed = 0
        self._loaded: dict[str, int] = {}  # model name -> the window it is loaded with
        self._loads: list[tuple[str, int]] = []
        self._last_messages: list[Any] = []
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._connections: set[socket.socket] = set()
        self._random = random.Random(0)
        self.slots, self.latency, self.max_queue = slots, latency, max_queue
        self.props, self.slot_save = props, slot_save
        self.saved_slots: dict[str, int] = {}
        self.strict_format = strict_format
        self.template_renders_tools = template_renders_tools
        self._slots = threading.BoundedSemaphore(slots) if slots else None
        self._inside = self._peak = 0
        self._httpd = _Server(("127.0.0.1", port), _Handler)
        self._httpd.fake = self
        self.port: int = self._httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    # -- public helpers ---------------------------------------------------------------
    @property
    def chat_requests(self) -> list[RecordedRequest]:
        """The recorded ``/api/chat`` requests, in order."""
        return self._requests_to("/api/chat")

    @property
    def openai_requests(self) -> list[RecordedRequest]:
        """The recorded ``/v1/chat/completions`` requests, in order."""
        return self._requests_to("/v1/chat/completions")

    def _requests_to(self, path: str) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.path == path]

    @property
    def remaining(self) -> int:
        """Script items not yet consumed."""
        with self._lock:
            return len(self._script) - self._consumed

    @property
    def peak_requests(self) -> int:
        """The most chat requests the server held at once, generating or queued for a slot
        (counted only when ``slots`` or ``latency`` is set)."""
        with self._lock:
            return self._peak

    @property
    def loads(self) -> list[tuple[str, int]]:
        """Each time a chat request (re)loaded a model: ``(name, num_ctx)``. Ollama loads a
        model on its first request and again whenever a request asks for another window, which
        takes seconds on a real model and loses its prompt cache."""
        with self._lock:
            return list(self._loads)

    def preload(self, name: str, num_ctx: int) -> None:
        """Pretend ``name`` is already loaded with a ``num_ctx`` window (an earlier run's), as
        ``/api/ps`` will then report."""
        model = self._find(name)
        if model is None:
            raise KeyError(f"FakeOllama has no model {name!r}")
        with self._lock:
            self._loaded[model.name] = num_ctx

    def add(self, *items: Item) -> None:
        """Append items to the script."""
        with self._lock:
            self._script.extend(items)

    def close(self) -> None:
        """Stop serving and cut every open connection; returns promptly even mid-hang."""
        if self._closing.is_set():
            return
        self._closing.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        self._thread.join(timeout=2)

    def __enter__(self) -> FakeOllama:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals used by the handler ---------------------------------------------------
    def _record(self, method: str, path: str, body: Any, headers: dict[str, str]) -> None:
        with self._lock:
            self.requests.append(RecordedRequest(method, path, body, headers))

    def _take_turn(self) -> str:
        """Queue for a slot and hold it for ``latency``: ``"ok"``; ``"busy"`` when the queue
        is full (503); ``"closed"`` when the server closes meanwhile (the reply is cut)."""
        if self._slots is None and not self.latency:
            return "ok"
        with self._lock:
            queued = self._inside - (self.slots or self._inside)
            if self.max_queue is not None and queued >= self.max_queue:
                return "busy"
            self._inside += 1
            self._peak = max(self._peak, self._inside)
        try:
            if self._slots is not None:
                while not self._slots.acquire(timeout=0.05):
                    if self._closing.is_set():
                        return "closed"
            try:
                closed = self._closing.wait(self.latency)
            finally:
                if self._slots is not None:
                    self._slots.release()
        finally:
            with self._lock:
                self._inside -= 1
        return "closed" if closed else "ok"

    def _loaded_models(self) -> list[tuple[_Model, int]]:
        with self._lock:
            return [(self._models[name], window) for name, window in self._loaded.items()]

    def _find(self, name: Any) -> _Model | None:
        return self._models.get(_canonical(name)) if isinstance(name, str) and name else None

    def _next_item(self, body: dict[str, Any]) -> tuple[bool, Item]:
        with self._lock:
            if self._consumed >= len(self._script):
                return False, None
            item = self._script[self._consumed]
            self._consumed += 1
        while callable(item):
            item = item(body)
        return True, item

    def _prompt_tokens(self, messages: list[Any], tools: Any) -> int:
        # About four characters a token, plus a few for each message's template markup.
        chars = len(json.dumps(tools)) if tools else 0
        for m in messages:
            if isinstance(m, dict):
                chars += len(str(m.get("content") or "")) + len(str(m.get("thinking") or ""))
                chars += len(json.dumps(m["tool_calls"])) if m.get("tool_calls") else 0
        return chars // 4 + 4 * len(messages)

    def _account(self, model: _Model, body: dict[str, Any], reply: dict[str, Any]) -> dict:
        messages, options = body.get("messages") or [], body.get("options") or {}
        window = int(options.get("num_ctx") or model.num_ctx or self.default_num_ctx)
        window = min(window, model.context_length)  # Ollama caps num_ctx at the trained length
        prompt = self._prompt_tokens(messages, body.get("tools"))
        cached = 0  # the prefix shared with the previous request: in the cache
        if prompt > window:  # silently truncated: the count is all the server reports
            prompt = window if self.truncation == "limit" else window // 2 + 2
        else:
            with self._lock:
                shared = 0
                for old, new in zip(self._last_messages, messages, strict=False):
                    if old != new:
                        break
                    shared += 1
            cached = max(0, min(prompt - 1, self._prompt_tokens(messages[:shared], None)))
            if not self.count_cached_tokens:
                prompt, cached = prompt - cached, 0
        with self._lock:
            self._last_messages = list(messages)
            first_load = self._loaded.get(model.name) != window  # a new window reloads it
            if first_load:
                self._loaded[model.name] = window
                self._loads.append((model.name, window))
        prompt = int(reply.get("prompt_eval_count", prompt))
        cached = min(int(reply.get("prompt_eval_cached_count", cached)), prompt)
        evals = int(reply.get("eval_count", reply_tokens(reply["message"])))
        load = 1_500_000_000 if first_load else 2_000_000
        prompt_ns, eval_ns = (prompt - cached) * 300_000, evals * 25_000_000
        metrics = {
            "total_duration": load + prompt_ns + eval_ns + 1_000_000,
            "load_duration": load,
            "prompt_eval_count": prompt,
            "prompt_eval_duration": prompt_ns,
            "eval_count": evals,
            "eval_duration": eval_ns,
        }
        if cached:  # Ollama's `omitempty`: absent when nothing came from the cache
            metrics["prompt_eval_cached_count"] = cached
        return metrics

    def _reply_message(self, item: Item, think: Any) -> dict[str, Any]:
        data = {"content": item} if isinstance(item, str) else dict(item)
        message: dict[str, Any] = {"role": "assistant", "content": str(data.get("content") or "")}
        if data.get("thinking") and think is not False:  # think=false: the model did not think
            message["thinking"] = str(data["thinking"])
        calls = []
        for index, raw in enumerate(data.get("tool_calls") or []):
            function = raw.get("function", raw)
            with self._lock:
                call_id = raw.get("id") or "call_" + "".join(
                    self._random.choices("abcdefghijklmnopqrstuvwxyz0123456789", k=8)
                )
            said = {"name": function.get("name", ""), "arguments": function.get("arguments", {})}
            calls.append({"id": call_id, "function": {"index": index, **said}})
        if calls:
            message["tool_calls"] = calls
        keys: tuple[str, ...] = ("prompt_eval_count", "prompt_eval_cached_count", "eval_count")
        keys += ("chunk_delay", "loop", "token_rate")
        extra = {k: data[k] for k in keys if k in data}
        return {"message": message, "done_reason": data.get("done_reason") or "stop", **extra}

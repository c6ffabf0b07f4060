"""A ChatModel that keeps one task on one endpoint of the pool, and moves it when that dies.

The agent sees one model. Underneath, the task holds a slot on one endpoint from ``open()``
to ``close()``. When the endpoint stops answering (connection refused, or cut and then not
answering a probe), it is marked dead in the pool and the same request goes to another
endpoint with the model: the conversation goes on where it was, only the new server's prompt
cache starts cold. A 503 "server busy" (Ollama's queue is full: someone else is using that
server too) is waited out with a growing pause, on the same endpoint, within the task's time.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any

from localhand.batch.endpoints import Endpoint
from localhand.batch.pool import EndpointPool
from localhand.errors import BadResponse, ModelError, ServerUnavailable
from localhand.models._common import deadline_of
from localhand.models.base import (
    BaseChatModel,
    ChatModel,
    ChatOptions,
    StreamChunk,
    Tools,
    declared,
)
from localhand.types import Closing, Message, Reply

ModelFactory = Callable[[Endpoint], ChatModel]


def is_busy(error: BadResponse) -> bool:
    """A 503: the server's queue is full, so wait and ask again rather than give up. (A
    stream's error line has no status, only Ollama's text.)"""
    return error.status == 503 or "server busy" in str(error).lower()


class _Bound:
    """A ``PooledModel`` attribute that is the bound endpoint's model's (taking a slot if the
    task has none yet)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, pooled: PooledModel | None, owner: type | None = None) -> Any:
        return self if pooled is None else getattr(pooled._bound(None), self.name)


class PooledModel(BaseChatModel, Closing):
    """:class:`~localhand.models.base.ChatModel` for one task on an :class:`EndpointPool`.

    Args:
        pool: where the endpoints and their slots are.
        model: the model's name; only endpoints that have it are used.
        factory: builds the backend for an endpoint (an ``OllamaModel`` for its URL...).
        backend: only endpoints of this backend (``None``: any).
        on_warning: told of failovers and busy servers.
        on_endpoint: told of each endpoint the task is put on.
        busy_backoff: the first pause after a 503, doubling up to ``max_busy_backoff``.
        close_models: close each backend the factory made when done with it (off when the
            factory shares them between tasks), or which of them to close.
    """

    def __init__(
        self,
        pool: EndpointPool,
        model: str,
        factory: ModelFactory,
        *,
        backend: str | None = None,
        on_warning: Callable[[str], None] | None = None,
        on_endpoint: Callable[[Endpoint], None] | None = None,
        busy_backoff: float = 1.0,
        max_busy_backoff: float = 30.0,
        max_busy_waits: int = 30,
        sleep: Callable[[float], None] = time.sleep,
        close_models: bool | Callable[[ChatModel], bool] = True,
    ) -> None:
        self._pool, self._name, self._factory, self._backend = pool, model, factory, backend
        self._warn = on_warning or (lambda message: None)
        self._on_endpoint = on_endpoint or (lambda endpoint: None)
        self.busy_backoff, self.max_busy_backoff = busy_backoff, max_busy_backoff
        self.max_busy_waits, self._sleep = max_busy_waits, sleep
        self._close_models = close_models
        self.endpoint: Endpoint | None = None
        """The endpoint the task is on now."""
        self.endpoints_used: list[str] = []
        """Every endpoint the task was on, in order (more than one after a failover)."""
        self._model: ChatModel | None = None

    # What the loop asks of the backend besides ``chat`` (the family's profile, the window,
    # the reply ceiling, whether to watch replies, the think budget), and the server's facts
    # (what it is, how calls travel, whether its template shows the tools; without them a task
    # on llama-server would be prompted as for an unknown server): the bound endpoint's.
    context_limit = _Bound()
    profile = _Bound()
    reply_ceiling = _Bound()
    watch_replies = _Bound()
    think_budget = _Bound()
    streams_replies = _Bound()
    plans_context = _Bound()
    plan_context = _Bound()
    slot_file = _Bound()  # a task's cache kept and restored on its endpoint's llama-server
    warm = _Bound()  # and its prefix warmed there (``session.kept_cache.warm_prefix``)
    server_kind = _Bound()
    call_transport = _Bound()
    template_renders_tools = _Bound()
    tiny = _Bound()

    def open(self, timeout: float | None = None) -> Endpoint:
        """Take a slot now (waiting for one), so the task's clock starts when it can run."""
        self._bound(timeout)
        assert self.endpoint is not None
        return self.endpoint

    def chat(
        self, messages: Sequence[Message], tools: Tools = None, options: ChatOptions | None = None
    ) -> Reply:
        deadline = deadline_of(options)
        pause, waits = self.busy_backoff, 0
        while True:
            model = self._bound(None if deadline is None else deadline - time.monotonic())
            try:
                return model.chat(messages, tools, _within(options, deadline))
            except ServerUnavailable as exc:
                self._fail_over(exc)
            except BadResponse as exc:
                if is_busy(exc):
                    waits += 1
                    pause = min(pause, self.max_busy_backoff)
                    out_of_time = deadline is not None and time.monotonic() + pause >= deadline
                    if waits > self.max_busy_waits or out_of_time:
                        raise
                    self._warn(f"{self._url()} is busy (HTTP 503); asking again in {pause:.0f} s")
                    self._sleep(pause)
                    pause *= 2
                elif exc.retryable and self.endpoint and not self._pool.answers(self.endpoint):
                    self._fail_over(exc)
                else:
                    raise

    def stream(
        self, messages: Sequence[Message], options: ChatOptions | None = None
    ) -> Iterator[StreamChunk]:
        """``chat``'s reply, waited out and failed over, handed out as ``BaseChatModel`` streams
        a model that cannot: the simple path's answer moves to another endpoint as ``chat``'s
        does, which the bound endpoint's own stream would not."""
        whole = BaseChatModel.stream_reply(self, messages, None, options)
        return (replace(chunk, reply=None) if chunk.done else chunk for chunk in whole)

    def stream_reply(
        self, messages: Sequence[Message], tools: Tools = None, options: ChatOptions | None = None
    ) -> Iterator[StreamChunk]:
        """The bound endpoint's reply as a stream (``--watch-replies``, the think budget).
        Unlike ``chat``, a busy or dead endpoint is not waited out or failed over here: the
        error reaches the loop, as it would from one server."""
        model = self._bound(options.timeout if options is not None else None)
        return model.stream_reply(messages, tools, options)

    def close(self) -> None:
        """Give the slot back (closing the model the factory made, when it is the task's own);
        the next request takes a slot again."""
        model, endpoint = self._model, self.endpoint
        self._model = self.endpoint = None
        close = self._close_models
        owned = close(model) if callable(close) and model is not None else close
        if model is not None and owned and hasattr(model, "close"):
            model.close()
        if endpoint is not None:
            self._pool.release(endpoint)

    # -- internals ------------------------------------------------------------------------
    def _bound(self, timeout: float | None) -> ChatModel:
        if self._model is None:
            endpoint = self._pool.acquire(self._name, backend=self._backend, timeout=timeout)
            try:
                self._model = self._factory(endpoint)
            except BaseException:
                self._pool.release(endpoint)
                raise
            self.endpoint = endpoint
            self.endpoints_used.append(endpoint.url)
            self._on_endpoint(endpoint)
        return declared(self._model)

    def _fail_over(self, error: ModelError) -> None:
        assert self.endpoint is not None
        dead = self.endpoint
        self._pool.mark_dead(dead, str(error))
        self.close()
        self._warn(
            f"endpoint {dead.url} stopped answering ({str(error).split('. ')[0]}); "
            f"the task goes on on another endpoint that has {self._name}"
        )

    def _url(self) -> str:
        return self.endpoint.url if self.endpoint else "the endpoint"


def _within(options: ChatOptions | None, deadline: float | None) -> ChatOptions | None:
    if options is None or deadline is None:
        return options
    return replace(options, timeout=max(deadline - time.monotonic(), 0.001))

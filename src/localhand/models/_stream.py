"""Streams for the transport: a watchdog that cuts a stream gone quiet, and retries up to the
first delta only.

A socket read timeout cannot express what a stream needs. Before the first chunk the server
may be loading the model and evaluating a long prompt (minutes); between chunks a healthy
server sends a token every fraction of a second, so a long silence there means it is stuck;
and the task's deadline bounds the whole reply however steadily it trickles. A request has
one read timeout, so the reading thread gets the longest (the first-chunk allowance) and this
watchdog, a small thread, enforces the rest: when a limit passes it aborts the response (shuts
its socket down), which wakes the blocked read at once with a transport error, and records
why, so the reader can report a timeout rather than a dropped connection.

Only the watchdog's thread touches the socket, and only to shut it down; reading, parsing
and closing stay on the caller's thread, so Ctrl-C there interrupts the read as usual.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Literal

from localhand.models._common import Retry, with_retries
from localhand.models.base import StreamChunk

Why = Literal["first", "idle", "deadline"]
Connect = Callable[[float, contextlib.ExitStack], tuple[Any, Any]]
"""Open the stream within a timeout, its cleanup pushed on the stack; return the response
(whose ``abort()`` the watchdog calls to cut it) and the source that ``Parse`` reads."""
Parse = Callable[[Any, "Watchdog"], Iterator[StreamChunk]]
"""The source as chunks: deltas with text, then the final one; kicks the watchdog per chunk."""
Failure = Callable[[Exception, "Watchdog | None", int, str, float], Exception]
"""``(error, watchdog, characters handed out, hint, timeout)`` to the ``ModelError`` to raise,
in ``Retry`` if it may be retried: only when no character was handed out yet."""


class Watchdog:
    """Calls ``cut`` once if no chunk comes within ``first_s`` (for the first) or ``idle_s``
    (after the last), or when ``deadline`` (a ``time.monotonic()``) passes.

    Use as a context manager around the reading loop and call :meth:`kick` for each chunk;
    :attr:`fired` then says why the stream was cut, or is None.
    """

    def __init__(
        self, first_s: float, idle_s: float, deadline: float | None, cut: Callable[[], None]
    ) -> None:
        self.first_s, self.idle_s, self.deadline = first_s, idle_s, deadline
        self.fired: Why | None = None
        self.chunks = 0
        self._cut = cut
        self._last = time.monotonic()
        self._stopped = False
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._watch, name="localhand-watchdog", daemon=True)

    def __enter__(self) -> Watchdog:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def kick(self) -> None:
        """A chunk arrived: the idle clock starts again."""
        with self._cond:
            self._last = time.monotonic()
            self.chunks += 1
            if self.chunks == 1:
                self._cond.notify()  # the allowance shrinks from the first chunk's to idle_s

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=1)

    def _due(self) -> tuple[float, Why]:
        why: Why = "idle" if self.chunks else "first"
        due = self._last + (self.idle_s if self.chunks else self.first_s)  # the allowance now
        if self.deadline is not None and self.deadline <= due:
            return self.deadline, "deadline"
        return due, why

    def _watch(self) -> None:
        with self._cond:
            while not self._stopped:
                due, why = self._due()
                wait = due - time.monotonic()
                if wait <= 0:
                    self.fired = why
                    break
                # Later kicks only push the due time back: waking at the old one to look
                # again is enough, and spares a wake-up per token.
                self._cond.wait(wait)
        if self.fired is not None:
            self._cut()


def timeout_text(watchdog: Watchdog, server: str, chars: int, hint: str) -> str:
    """Why a stream was cut, for a ``ModelTimeout``; ``hint`` says what to raise for the first
    chunk's allowance."""
    if watchdog.fired == "deadline":
        return (
            f"{server} was still answering when the task's wall clock ran out ({chars} characters "
            "so far); give the task a longer --timeout."
        )
    if watchdog.fired == "first":
        return (
            f"{server} sent nothing of its answer within {watchdog.first_s:.3g} s ({hint}, or "
            "use a smaller model)."
        )
    return (
        f"{server} went quiet mid-answer: nothing for {watchdog.idle_s:.3g} s after "
        f"{chars} characters. The server seems stuck (restart it), or raise "
        "stream_idle_timeout."
    )


def reliable_stream(
    connect: Connect,
    parse: Parse,
    failure: Failure,
    *,
    idle_s: float,
    base_timeout: float,
    hint: str,
    deadline: float | None,
    retries: dict[str, Any],
) -> Iterator[StreamChunk]:
    """A stream with the transport's retries up to its first delta, and none after it.

    Opening the stream and reading up to its first chunk is one attempt under
    ``with_retries`` (``retries``: its ``max_attempts``, ``backoff``, ``sleep``, ``warn``), so
    a server that is down, answers 5xx or drops the connection before saying anything is
    tried again. From the first delta on, a failure is raised at once: a retry would start the
    answer over and show its beginning twice.
    """

    def attempt(timeout: float, why: str) -> tuple[contextlib.ExitStack, Watchdog, Any, Any]:
        stack = contextlib.ExitStack()
        watchdog = None
        try:
            response, source = connect(timeout, stack)
            watchdog = stack.enter_context(Watchdog(timeout, idle_s, deadline, response.abort))
            chunks = parse(source, watchdog)
            return stack, watchdog, chunks, next(chunks)
        except BaseException as exc:
            stack.close()
            if isinstance(exc, Exception):
                raise failure(exc, watchdog, 0, why, timeout) from None
            raise  # Ctrl-C: as it is

    stack, watchdog, chunks, chunk = with_retries(
        attempt, base_timeout=base_timeout, deadline=deadline, hint=hint, **retries
    )
    chars = 0
    with stack:
        while not chunk.done:
            chars += len(chunk.content) + len(chunk.thinking) + len(chunk.arguments)
            yield chunk
            try:
                chunk = next(chunks)
            except StopIteration:
                raise AssertionError("a Parse function must end with a done chunk") from None
            except Exception as exc:
                error = failure(exc, watchdog, chars, hint, base_timeout)
                raise (error.error if isinstance(error, Retry) else error) from None
        yield chunk

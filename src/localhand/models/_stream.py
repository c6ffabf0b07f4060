"""Streams for the transport: a watchdog that cuts a stream gone quiet.

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

import threading
import time
from collections.abc import Callable
from typing import Literal

Why = Literal["first", "idle", "deadline"]


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

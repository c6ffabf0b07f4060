"""Cancellation as a value: one switch per run that every way of stopping it flips.

Ctrl-C, an MCP client's ``notifications/cancelled`` and the dashboard's Stop all call
``Cancellation.cancel``; the run's own thread notices at its next check (before each model
turn, between tool calls, between the chunks of a streamed reply, before each plan step) and
stops with ``errors.Cancelled``, so the run ends ``cancelled`` with its partial Result
verified and recorded like any other end.

A run started in another process (``localhand run`` in a terminal, watched on the dashboard)
is cancelled through a file: ``request_cancel(run_id)`` writes ``cancel/RUN`` in localhand's
data directory, and the run whose store id that is sees it at its next check (the file is
looked at most every ``POLL_S`` seconds, so checking stays cheap). The data directory is never
visible to the model's commands, so the model cannot cancel or keep alive its own run.

A command in flight does not wait for the next check: the loop puts the switch ``in_force``
around its tool calls, and ``run_shell`` waits on the command's output and on ``wake_fd`` at
once, so Stop ends the command (its whole process tree) at once rather than when it is done.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from pathlib import Path

from localhand.errors import Cancelled, ConfigError
from localhand.paths import data_dir

POLL_S = 0.25
"""How often, at most, a check looks for a cancel request file."""


class Cancellation:
    """The cancel switch of one run (see the module docstring)."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.reason = ""
        self._request: Path | None = None
        self._looked = 0.0
        self._wake: tuple[int, int] | None = None

    def cancel(self, reason: str = "cancelled by the user") -> None:
        """Ask the run to stop at its next check; safe from any thread (or a signal handler)."""
        if not self._event.is_set():
            self.reason = reason
        self._event.set()
        self._ring()

    def wake_fd(self) -> int:
        """A file descriptor that becomes readable when the switch is flipped, for a
        ``select`` that waits on a command and on Stop at once (a request file is noticed only
        by ``requested``, so such a wait should also call that every ``POLL_S``)."""
        if self._wake is None:
            read, write = os.pipe()
            os.set_blocking(write, False)  # cancel() may run in a signal handler: never block
            self._wake = (read, write)
            weakref.finalize(self, _close, read, write)
            if self._event.is_set():  # flipped while the pipe was being made
                self._ring()
        return self._wake[0]

    def _ring(self) -> None:
        if self._wake is not None:
            with suppress(OSError):  # a full pipe is readable already
                os.write(self._wake[1], b"!")

    @contextmanager
    def in_force(self) -> Iterator[None]:
        """Commands started in this block by this thread (``current``) end when it is flipped."""
        token = _in_force.set(self)
        try:
            yield
        finally:
            _in_force.reset(token)

    def watch(self, request: Path) -> None:
        """Also stop when the file ``request`` appears (a request from another process)."""
        self._request = request

    @property
    def requested(self) -> bool:
        """Whether the run was asked to stop, by this process or (through the file) another."""
        if self._event.is_set():
            return True
        if self._request is not None and time.monotonic() - self._looked >= POLL_S:
            self._looked = time.monotonic()
            if self._request.exists():
                self.cancel("cancelled from another process (localhand's cancel request)")
        return self._event.is_set()

    def check(self) -> None:
        """Raise ``Cancelled`` when the run was asked to stop."""
        if self.requested:
            raise Cancelled(self.reason or "cancelled")


_in_force: ContextVar[Cancellation | None] = ContextVar("localhand_cancellation", default=None)


def current() -> Cancellation | None:
    """The switch whose ``in_force`` block this thread is in: the run's, during its tool calls."""
    return _in_force.get()


def _close(*fds: int) -> None:
    for fd in fds:
        os.close(fd)


def request_file(run_id: str, data: Path | None = None) -> Path:
    """Where a cancel request for the store's run ``run_id`` is written."""
    if not run_id or not run_id.isalnum():  # a store id; never a path
        raise ConfigError(f"not a run id: {run_id!r}")
    return (data or data_dir()) / "cancel" / run_id


def request_cancel(run_id: str, data: Path | None = None) -> Path:
    """Ask the run ``run_id`` (in this process or another) to stop; returns the request file.
    The running process removes it when the run ends."""
    path = request_file(run_id, data)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("cancel\n", encoding="utf-8")
    return path


def forget_request(run_id: str, data: Path | None = None) -> None:
    """Remove a cancel request once its run has ended."""
    request_file(run_id, data).unlink(missing_ok=True)

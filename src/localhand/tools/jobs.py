"""Background commands: ``run_command`` with ``background: true`` starts a job that runs on
while the model goes on (a dev server, a watcher, a long test suite), and ``wait`` watches it.

A job is a command started as every command is (the same risk check, approval and sandbox:
``shell.command_started``), whose output a thread of its own reads into a head-and-tail buffer
until it exits, outlives its lifetime cap or is stopped. ``wait`` returns when a line of its
output matches, when it exits (with its exit code) or when the timeout passes, with what it
printed since the last look; without a job it lists them all. Every job is stopped, with all
it started, when the run's tools close (however the run ends), and the Result lists them.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterable
from contextlib import AbstractContextManager, ExitStack
from typing import Any

from localhand.cancel import POLL_S, Cancellation, current
from localhand.errors import ToolError
from localhand.safety.box.supervise import Supervised
from localhand.tools.deadline import mark_reached, remaining_s
from localhand.tools.headtail import HeadTail
from localhand.tools.limits import ToolLimits
from localhand.types import ToolResult

FIRST_LOOK_S = 1.0
"""How long starting a job waits for its first lines (or its exit) before returning."""
MAX_WAIT_S = 600.0
"""The longest one ``wait`` call waits (the run's wall clock may end it sooner)."""
_LINE_MAX = 4096
"""How much of an unfinished line is kept for ``until`` to match."""
Running = AbstractContextManager[tuple[Supervised, list[str]]]
"""A command started for the block, ended with all it started at its end (``command_started``)."""


class Job:
    """One background command: its output pumped by a thread until it ends."""

    def __init__(
        self, number: int, command: str, running: Running, lifetime_s: float, sizes: tuple[int, int]
    ) -> None:
        self.number, self.command, self.sizes = number, command, sizes
        self.unread = HeadTail(*self.sizes)
        self.changed = threading.Condition()
        self.until: re.Pattern[str] | None = None
        self.matched = False
        self.ended: str | None = None
        """None while it runs; then "exited", "stopped" or "timed out"."""
        self.exit_code: int | None = None
        self._line = b""
        self._stop = Cancellation()
        with ExitStack() as stack:  # started here, so that a refusal reaches the caller
            supervised, notes = stack.enter_context(running)
            held = stack.pop_all()  # the thread ends it
        pumping = (held, supervised, notes, lifetime_s)
        self.thread = threading.Thread(target=self._pump, args=pumping, daemon=True)
        self.thread.start()

    def _pump(
        self, held: ExitStack, supervised: Supervised, notes: list[str], lifetime_s: float
    ) -> None:
        why = "stopped"
        try:
            with held:  # leaving it ends the command and all it started
                sinks = {supervised.output_fd: self._add}
                why = supervised.pump(sinks, time.monotonic() + lifetime_s, self._stop) or ""
        finally:
            with self.changed:
                for note in notes:
                    self.unread.add(note.encode())
                self.exit_code = supervised.exit_code
                self.ended = {"cancelled": "stopped", "timed out": "timed out"}.get(why, "exited")
                self.changed.notify_all()

    def _add(self, chunk: bytes) -> None:
        with self.changed:
            self.unread.add(chunk)
            text = (self._line + chunk).decode("utf-8", "replace")
            self._line = (self._line + chunk).rpartition(b"\n")[2][-_LINE_MAX:]
            if self.until is not None and self.until.search(text):
                self.matched = True
            self.changed.notify_all()

    def look(
        self, until: re.Pattern[str] | None, timeout_s: float, peek: bool = False
    ) -> tuple[str, str]:
        """Wait up to ``timeout_s`` for a line matching ``until``, or the job's end; then
        (what it printed since the last look, why the wait ended). A ``peek`` (the first
        lines, shown as it starts) leaves them to the next look, for its ``until`` too."""
        stop, ends = current(), time.monotonic() + timeout_s
        with self.changed:
            self.until = until
            self.matched = until is not None and bool(until.search(self.unread.text()))
            while not (self.matched or self.ended) and (left := ends - time.monotonic()) > 0:
                if stop is not None and stop.requested:
                    break
                self.changed.wait(min(left, POLL_S))
            self.until, text = None, self.unread.text()
            if not peek:
                self.unread = HeadTail(*self.sizes)
            if self.ended:
                why = f"ended: {_ending(self)}"
            elif self.matched:
                why = "printed a line that matches; it runs on"
            else:
                why = f"is still running after {timeout_s:.3g} s"
        return text, f"[job {self.number} {why}.]"


class Jobs:
    """The background jobs of one run's ``run_command``, at most ``max_jobs`` at once."""

    def __init__(self, max_jobs: int = 4, limits: ToolLimits | None = None) -> None:
        self.max_jobs, limits = max_jobs, limits or ToolLimits()
        self.sizes = (limits.command_head_bytes, limits.command_tail_bytes)  # as run_command's
        self._jobs: dict[int, Job] = {}

    def refusal(self) -> str | None:
        """Why no job may start now, or None."""
        running = [job for job in self._jobs.values() if job.ended is None]
        if len(running) < self.max_jobs:
            return None
        return (
            f"Not started: {len(running)} background jobs run already, the most at once "
            "([run] max_jobs). Wait for one to end, or run the command without background."
        )

    def start(self, command: str, running: Running, lifetime_s: float) -> ToolResult:
        """Start ``command`` (``running`` starts and ends it) as the next job; its first
        lines, or its end where it ends at once."""
        number = len(self._jobs) + 1
        self._jobs[number] = Job(number, command, running, lifetime_s, self.sizes)
        text, why = self._jobs[number].look(None, FIRST_LOOK_S, peek=True)
        return ToolResult(f"job {number} started; wait shows what it prints\n{text}{why}")

    def wait(
        self, job: int | None = None, until: str | None = None, timeout: float = 30
    ) -> ToolResult:
        """Wait for a job's line matching until, or its exit; no job: list jobs.

        Args:
            job: Job number.
            until: Regex.
            timeout: Seconds.
        """
        if job is None:
            return ToolResult(self.listing())
        found = self._jobs.get(job)
        if found is None:
            raise ToolError(f"there is no job {job}. {self.listing()}")
        try:
            pattern = re.compile(until, re.MULTILINE) if until else None
        except re.error as error:
            raise ToolError(f"until is not a valid regular expression: {error}") from None
        timeout_s, left = min(max(timeout, 0.0), MAX_WAIT_S), remaining_s()
        cut = left is not None and left < timeout_s
        text, why = found.look(pattern, max(left, 0.0) if cut and left is not None else timeout_s)
        if cut and not (found.matched or found.ended):
            mark_reached()  # stopped by the run's wall clock: the run is out of time
        return ToolResult(f"{text.rstrip()}\n{why}".lstrip(), ok=found.exit_code in (None, 0),
                          progress=bool(text))  # fmt: skip

    def listing(self) -> str:
        """The jobs view: each job, whether it runs, and its command."""
        if not self._jobs:
            return "No background jobs (run_command with background: true starts one)."
        lines = (f"job {job.number}: {_ending(job) if job.ended else 'running'} · {job.command}"
                 for job in self._jobs.values())  # fmt: skip
        return "\n".join(lines)

    def close(self) -> None:
        """Stop every job (the registry's ``close()``, at the run's end however it ends)."""
        for job in self._jobs.values():  # all at once, then each waited for
            job._stop.cancel()
        for job in self._jobs.values():
            job.thread.join()


def _ending(job: Job) -> str:
    if job.ended == "exited":
        return "exit code unknown" if job.exit_code is None else f"exit code {job.exit_code}"
    return f"{job.ended} (exit code {job.exit_code})"


def jobs_of(tools: Iterable[Any]) -> list[dict[str, Any]] | None:
    """What the background jobs of a run's ``tools`` did (the Result's ``jobs``), or None
    where it started none."""
    owner = next(
        (getattr(tool.function, "__self__", None) for tool in tools if tool.name == "wait"), None
    )
    jobs = owner._jobs.values() if isinstance(owner, Jobs) else ()
    entries = [{"job": job.number, "command": job.command, "ended": job.ended,
                "exit_code": job.exit_code} for job in jobs]  # fmt: skip
    return entries or None

"""One run for ``localhand mcp``: a ``Session`` on a thread of its own, with progress and
cancellation, recorded in the run store like any other run.

The run is synchronous and the MCP server async, so the run gets a thread and the server's
task awaits it. Each model request (one per iteration) becomes a progress notification. A
client's cancellation (``notifications/cancelled``) flips the run's cancel switch
(``Session.cancel``), as Ctrl-C does for ``localhand run``: the run stops at its next check
(before the next model turn or tool call, between a streamed reply's chunks, before a plan
step; a reply in flight that is not streamed is waited for, as long as the request's time
limit at most), so the Result, the store and the follow-up task say ``cancelled`` and the
workspace is verified as after any other end.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from anyio.from_thread import BlockingPortal

from localhand.errors import ConfigError
from localhand.events import Event

if TYPE_CHECKING:
    from localhand.session.door import Session

Report = Callable[[float, float | None, str], Awaitable[None]]
"""Sends one progress notification: (progress, total, message)."""


class RunJob:
    """``session.run()`` for an MCP client (see the module docstring)."""

    def __init__(self, session: Session, *, db: Path | None = None) -> None:
        self.session = session
        self.task = session.task
        self.db = db
        self.result: Any = None
        """The Result (a ``PlanResult`` for a plan), once the job has ended."""
        self.error: str | None = None
        """Why the run could not start (a ``ConfigError``), when it could not."""
        self._total: int | None = None
        self._last_tool = ""

    def cancel(self) -> None:
        """Stop the run at its next check (see the module docstring)."""
        self.session.cancel("cancelled by the MCP client")

    def run(self, progress: Callable[[float, float | None, str], None]) -> None:
        """Run the task here (the job's thread), reporting each iteration to ``progress``."""
        self.session.bus.subscribe(lambda event: self._progress(event, progress))
        try:
            with self.session.recording(db=self.db):
                self.result = self.session.run()
        except ConfigError as exc:
            self.error = str(exc)
        except Exception as exc:  # reported to the client, never a crash of the server
            self.error = f"the run failed: {type(exc).__name__}: {exc}"

    def _progress(self, event: Event, progress: Callable[[float, float | None, str], None]) -> None:
        data = event.to_dict()
        if event.type == "task_started":
            self._total = data.get("max_iterations")
        elif event.type == "tool_call":
            mark = "ok" if data.get("ok") else "failed"
            self._last_tool = f"; last call: {data.get('tool_name')} ({mark})"
        elif event.type == "model_request":
            iteration = int(data.get("iteration") or 0)
            total = f" of {self._total}" if self._total else ""
            progress(iteration, self._total, f"iteration {iteration}{total}{self._last_tool}")
        elif event.type == "step_started":  # plan mode: one notification per step run
            index = int(data.get("index") or 0) + 1
            progress(index, self._total, f"step {data.get('step_id')}: {data.get('command')}")


async def run_job(job: RunJob, report: Report) -> Any:
    """Run ``job`` on a thread and wait for it; progress goes to ``report``. Cancelling the
    awaiting task cancels the run, and waits for it to end (recorded as cancelled)."""
    done = anyio.Event()
    async with BlockingPortal() as portal:

        def progress(value: float, total: float | None, message: str) -> None:
            with suppress(RuntimeError):  # the portal is closing: the run is over
                portal.start_task_soon(_quietly, report, value, total, message)

        def work() -> None:
            try:
                job.run(progress)
            finally:
                with suppress(RuntimeError):
                    portal.start_task_soon(_set, done)

        threading.Thread(target=work, name=f"localhand-run-{job.task.id}", daemon=True).start()
        try:
            await done.wait()
        except anyio.get_cancelled_exc_class():
            job.cancel()
            with anyio.CancelScope(shield=True):  # the run records its end before we go
                await done.wait()
            raise
    if job.error is not None:
        raise ConfigError(job.error)
    return job.result


async def _quietly(report: Report, value: float, total: float | None, message: str) -> None:
    with suppress(Exception):  # a client that went away must not fail the run
        await report(value, total, message)


async def _set(event: anyio.Event) -> None:
    event.set()


__all__ = ["RunJob", "run_job"]

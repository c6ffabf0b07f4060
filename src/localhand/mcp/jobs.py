"""One run for ``localhand mcp``: ``run_task`` on a thread of its own, with progress and
cancellation, recorded in the run store like any other run.

The run is synchronous and the MCP server async, so the run gets a thread and the server's
task awaits it. Each model request (one per iteration) becomes a progress notification. A
client's cancellation (``notifications/cancelled``) makes the run stop as Ctrl-C stops
``localhand run``: a ``KeyboardInterrupt`` raised in the run's own thread at its next step
(the next model request or reply, or tool call: the reply in flight is waited for, as long as
the request's time limit at most), so the Result, the store and the follow-up task say
``cancelled`` and the workspace is verified as after any other end.
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
from localhand.events import Event, EventBus
from localhand.types import Result

if TYPE_CHECKING:
    from localhand.config import Settings
    from localhand.run.task import Task
    from localhand.store import Store

Report = Callable[[float, float | None, str], Awaitable[None]]
"""Sends one progress notification: (progress, total, message)."""

INTERRUPTIBLE = frozenset(
    "model_request model_reply model_progress tool_call nudge answer_delta "
    "step_started step_finished agent_thinking retry_attempt".split()
)
"""Events emitted inside the loop (``Run.drive``, plan mode's executor), where a
``KeyboardInterrupt`` ends the run as ``cancelled``; anywhere else (start, verification, the
end) it would escape the run."""
Work = Callable[[EventBus, "Store | None"], Any]
"""What a job runs, given its event bus and the run store: ``run_task`` or ``run_plan``."""


class RunJob:
    """``run_task(task, settings)`` for an MCP client (see the module docstring)."""

    def __init__(
        self, task: Task, settings: Settings, *, db: Path | None = None, work: Work | None = None
    ) -> None:
        self.task = task
        self.settings = settings
        self.db = db
        self.work = work or self._run_task
        """Runs the job (default: ``run_task``); a plan job gives ``run_plan`` here."""
        self.result: Any = None
        """The Result (a ``PlanResult`` for a plan), once the job has ended."""
        self.error: str | None = None
        """Why the run could not start (a ``ConfigError``), when it could not."""
        self._cancel = threading.Event()
        self._interrupted = False
        self._total: int | None = None
        self._last_tool = ""

    def cancel(self) -> None:
        """Stop the run at its next step (see the module docstring)."""
        self._cancel.set()

    def run(self, progress: Callable[[float, float | None, str], None]) -> None:
        """Run the task here (the job's thread), reporting each iteration to ``progress``."""
        from localhand.run.recording import RunRecording

        bus = EventBus()
        bus.subscribe(lambda event: self._progress(event, progress))
        try:
            with RunRecording(self.task, bus, settings=self.settings, db=self.db) as recording:
                bus.subscribe(self._interrupt)  # after the store's recorder: it has each event
                self.result = self.work(bus, recording.store)
        except KeyboardInterrupt:
            self.result = self._cancelled()
        except ConfigError as exc:
            self.error = str(exc)
        except Exception as exc:  # reported to the client, never a crash of the server
            self.error = f"the run failed: {type(exc).__name__}: {exc}"

    def _run_task(self, bus: EventBus, store: Store | None) -> Result:
        from localhand.run.runner import run_task
        from localhand.safety.approval import DenyAll

        # Nobody is at a terminal here: what needs a person's yes is refused, with a reason.
        return run_task(self.task, self.settings, bus=bus, store=store, approver=DenyAll())

    def _interrupt(self, event: Event) -> None:
        if self._cancel.is_set() and not self._interrupted and event.type in INTERRUPTIBLE:
            self._interrupted = True
            raise KeyboardInterrupt  # as Ctrl-C: Run.drive ends the run as cancelled

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

    def _cancelled(self) -> Result:
        """The Result of a run cancelled before its loop began (or after it ended)."""
        return Result(
            task_id=self.task.id,
            status="error",
            output="",
            model_used=self.task.model or self.settings.model,
            tokens_in=0,
            tokens_out=0,
            termination_reason="cancelled",
            iterations_used=0,
            error="cancelled by the MCP client",
        )


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


__all__ = ["INTERRUPTIBLE", "RunJob", "run_job"]

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


class _Progress:
    """Each model request (each step, for a plan) of the run as a progress notification."""

    def __init__(self, send: Callable[[float, float | None, str], None]) -> None:
        self.send = send
        self.total: int | None = None
        self.last_tool = ""

    def __call__(self, event: Event) -> None:
        data = event.to_dict()
        if event.type == "task_started":
            self.total = data.get("max_iterations")
        elif event.type == "tool_call":
            mark = "ok" if data.get("ok") else "failed"
            self.last_tool = f"; last call: {data.get('tool_name')} ({mark})"
        elif event.type == "model_request":
            iteration = int(data.get("iteration") or 0)
            total = f" of {self.total}" if self.total else ""
            self.send(iteration, self.total, f"iteration {iteration}{total}{self.last_tool}")
        elif event.type == "step_started":  # plan mode: one notification per step run
            index = int(data.get("index") or 0) + 1
            self.send(index, self.total, f"step {data.get('step_id')}: {data.get('command')}")


async def run_job(session: Session, report: Report, *, db: Path | None = None) -> Any:
    """Run ``session`` on a thread, recorded, and wait for its Result (a ``PlanResult`` for a
    plan); progress goes to ``report``. Cancelling the awaiting task cancels the run, and waits
    for it to end (recorded as cancelled). A run that could not start is a ``ConfigError``."""
    done = anyio.Event()
    ended: dict[str, Any] = {}
    async with BlockingPortal() as portal:

        def progress(value: float, total: float | None, message: str) -> None:
            with suppress(RuntimeError):  # the portal is closing: the run is over
                portal.start_task_soon(_quietly, report, value, total, message)

        def work() -> None:
            try:
                with session.recording(db=db):
                    ended["result"] = session.run()
            except ConfigError as exc:
                ended["error"] = str(exc)
            except Exception as exc:  # reported to the client, never a crash of the server
                ended["error"] = f"the run failed: {type(exc).__name__}: {exc}"
            finally:
                with suppress(RuntimeError):
                    portal.start_task_soon(_set, done)

        session.bus.subscribe(_Progress(progress))
        threading.Thread(target=work, name=f"localhand-run-{session.task.id}", daemon=True).start()
        try:
            await done.wait()
        except anyio.get_cancelled_exc_class():
            session.cancel("cancelled by the MCP client")  # see the module docstring
            with anyio.CancelScope(shield=True):  # the run records its end before we go
                await done.wait()
            raise
    if "error" in ended:
        raise ConfigError(ended["error"])
    return ended.get("result")


async def _quietly(report: Report, value: float, total: float | None, message: str) -> None:
    with suppress(Exception):  # a client that went away must not fail the run
        await report(value, total, message)


async def _set(event: anyio.Event) -> None:
    event.set()


__all__ = ["run_job"]

"""A plan step that Stop ends says so: its output ends "stopped" (as a timed-out one's ends
"timed out"), its error says it was stopped, and the plan ends ``cancelled`` at once."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from localhand.config.settings import Settings
from localhand.events import Event, EventBus, EventLog
from localhand.run.task import Task
from localhand.session.door import Session
from localhand.session.plans import PlanRequest


def test_a_step_stopped_by_stop_says_stopped_and_the_plan_ends_cancelled(tmp_path: Path) -> None:
    plan = {
        "goal": "wait, then write",
        "steps": [
            {"id": "wait", "description": "wait a minute", "command": "sleep 60"},
            {"id": "write", "description": "write", "command": "touch written"},
        ],
    }
    bus, log = EventBus(), EventLog()
    bus.subscribe(log)
    task = Task("wait, then write", workspace=tmp_path, mode="planner")
    session = Session(task, Settings(sandbox="off"), bus=bus, plan=PlanRequest(plan))

    def stop_once_it_runs(event: Event) -> None:
        if event.type == "step_started":  # Stop, from another thread, while the command runs
            threading.Timer(0.5, session.cancel, args=("stopped by a test",)).start()

    bus.subscribe(stop_once_it_runs)
    started = time.monotonic()
    result = session.run()

    assert time.monotonic() - started < 10, "the command was not ended by the Stop"
    assert (result.status, result.termination_reason) == ("fail", "cancelled")
    wait, write = result.steps  # type: ignore[union-attr]
    assert (wait["status"], wait["error"]) == ("failed", "was stopped")
    assert write["status"] == "pending" and not (tmp_path / "written").exists()
    [finished] = [e.to_dict() for e in log.events if e.type == "step_finished"]
    assert "stopped" in finished["output_tail"] and "timed out" not in finished["output_tail"]
    assert (finished["stopped"], finished["timed_out"]) == (True, False)

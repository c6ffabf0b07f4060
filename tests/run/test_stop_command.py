"""Stop stops the command in flight: a run whose model runs ``sleep 60`` (or a plan whose step
does) ends within seconds of ``Session.cancel`` (the dashboard's Stop for a run it started, an
editor's or MCP client's cancel) or of a cancel request file (the dashboard's Stop for a run of
another process), ``cancelled`` with status ``fail``; the tool result says the command was
stopped, and nothing the command started is left running."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from localhand.cancel import request_cancel
from localhand.config.settings import Settings
from localhand.models.scripted import ScriptedModel, call
from localhand.run.task import Task
from localhand.session.door import Session
from localhand.store import Store
from localhand.testing import FakeOllama
from stop_helpers import SLEEPERS, once_started, survivors, wait_until_started

Stop = Callable[[Session, str], object]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


def stopped(session: Session, db: Path, stop: Stop) -> tuple[Any, str, float]:
    """Run ``session`` and ``stop`` it (from another thread) once its command has started.
    Returns its result, its run's id and the seconds from the stop to the run's end, having
    checked that it ended cancelled and left no process of its command running."""
    workspace = session.task.workspace
    stopped_at: list[float] = []

    def stop_now() -> None:
        stopped_at.append(time.monotonic())
        stop(session, run_id)

    with session.recording(db=db) as recording:
        run_id = recording.run_id
        assert run_id is not None
        once_started(workspace, stop_now)
        result = session.run()
    took = time.monotonic() - stopped_at[0]
    assert took < 3, f"the run went on for {took:.1f} s after Stop"
    assert (result.status, result.termination_reason) == ("fail", "cancelled")
    recorded = Store(db).run(run_id)
    assert (recorded.status, recorded.termination_reason) == ("fail", "cancelled")
    assert survivors(workspace) == [], "a process of the run survived"
    return result, run_id, took


def by_session(session: Session, _: str) -> None:
    session.cancel()


def by_request_file(_: Session, run_id: str) -> None:
    request_cancel(run_id)  # what the dashboard's Stop does for a run of another process


@pytest.mark.parametrize("stop", [by_session, by_request_file])
def test_stop_ends_the_models_command_in_flight(
    workspace: Path, tmp_path: Path, stop: Stop
) -> None:
    model = ScriptedModel([call("run_command", command=SLEEPERS), "Slept."])
    session = Session(Task("Sleep", workspace=workspace, agentic=True), Settings(), model=model)
    _, run_id, _ = stopped(session, tmp_path / "runs.db", stop)
    assert len(model.calls) == 1, "the model was not asked again"
    (event,) = [e.data for e in Store(tmp_path / "runs.db").events(run_id, types=("tool_call",))]
    assert not event["ok"] and "Stopped: the run was cancelled" in event["result_summary"]


def test_stop_ends_a_plan_steps_command_in_flight(workspace: Path, tmp_path: Path) -> None:
    plan = {"goal": "Sleep", "steps": [{"id": "nap", "description": "d", "command": SLEEPERS}]}
    task = Task("Sleep", workspace=workspace, plan=plan, mode="planner")
    stopped(Session(task, Settings()), tmp_path / "runs.db", by_session)


CLI = "from localhand.cli import main; raise SystemExit(main())\n"


def by_request_from_this_process(child: subprocess.Popen[str]) -> None:
    (run,) = Store(os.environ["LOCALHAND_DB"]).runs()  # the dashboard's Stop, in effect
    request_cancel(run.id)


def by_ctrl_c(child: subprocess.Popen[str]) -> None:
    child.send_signal(signal.SIGINT)


@pytest.mark.usefixtures("sigint_reaches_children")
@pytest.mark.parametrize("stop", [by_request_from_this_process, by_ctrl_c])
def test_the_cli_run_stops_with_its_command_and_exits_130(
    workspace: Path, tmp_path: Path, stop: Callable[[subprocess.Popen[str]], None]
) -> None:
    sleep = {"function": {"name": "run_command", "arguments": {"command": SLEEPERS}}}
    script = [{"content": "", "tool_calls": [sleep]}, {"content": "Slept."}]
    with FakeOllama(script=script, models={"qwen3:8b": {}}) as server:
        env = {**os.environ, "OLLAMA_HOST": server.url, "NO_COLOR": "1"}
        argv = ["run", "Sleep", "-w", str(workspace), "-m", "qwen3:8b", "--agentic", "--json"]
        child = subprocess.Popen(
            [sys.executable, "-c", CLI, *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            start_new_session=True,
        )
        try:
            wait_until_started(workspace)
            stopped_at = time.monotonic()
            stop(child)
            out, err = child.communicate(timeout=30)
        finally:
            if child.poll() is None:
                child.kill()
    took = time.monotonic() - stopped_at
    assert took < 3, f"the run went on for {took:.1f} s after Stop"
    result = json.loads(out.strip().splitlines()[-1])
    assert (result["status"], result["termination_reason"]) == ("fail", "cancelled"), err
    assert child.returncode == 130
    assert survivors(workspace) == [], "a process of the run survived"

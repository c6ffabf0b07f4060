"""What keeps a dashboard left open honest, through its API on a real server and a real SQLite
store: approvals waiting for an answer (counted from the store, so a run in any process counts),
Stop for a run this server did not start, and a run's status from its end, never "running" for
a run that is over."""

from __future__ import annotations

import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from dashboard_helpers import client, served_dashboard, tool_call
from localhand.cancel import request_file
from localhand.config.settings import Settings
from localhand.dashboard import start_dashboard
from localhand.dashboard.launcher import Launcher, StartRequest
from localhand.session.door import Session
from localhand.store import Store


def approval(kind: str, **fields: Any) -> dict[str, Any]:
    """An approval event as the run's timeline records it (``session.approvals``)."""
    data: dict[str, Any] = {"type": kind, "task_id": "t", "ts": 1.0, "step_id": "run_command"}
    return {**data, "command": "rm -rf build", **fields}


def a_dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_unanswered_approvals_are_counted_per_running_run_whoever_asked(store: Store) -> None:
    asking, answered, killed = (store.begin_run(f"task{n}") for n in range(3))
    for run_id in (asking, answered, killed):
        store.append_event(run_id, approval("approval_needed", risk="dangerous"))
    store.append_event(answered, approval("approval_decided", approved=True, by="terminal"))
    with sqlite3.connect(store.path) as db:  # the process that ran it is gone
        db.execute("UPDATE runs SET pid = ?, pid_token = '' WHERE id = ?", (a_dead_pid(), killed))

    assert store.waiting_approvals() == {asking: 1}
    with start_dashboard(store, port=0) as server, client(server) as api:
        assert api.get("api/waiting").json() == {"total": 1, "runs": {asking: 1}}
        listed = {run["id"]: run for run in api.get("api/runs").json()["runs"]}
        assert api.get("api/runs").json()["waiting"] == 1
        assert (listed[asking]["status"], listed[asking]["waiting"]) == ("running", 1)
        assert listed[answered]["waiting"] == 0
        assert (listed[killed]["status"], listed[killed]["waiting"]) == ("interrupted", 0)

        store.append_event(asking, approval("approval_decided", approved=False, by="page"))
        assert api.get("api/waiting").json() == {"total": 0, "runs": {}}


def test_a_run_whose_end_is_recorded_is_never_listed_as_running(store: Store) -> None:
    run_id = store.begin_run("t")
    store.append_event(run_id, approval("approval_needed"))
    result = {"status": "error", "termination_reason": "error", "error": "no such model"}
    store.append_event(
        run_id, {"type": "task_finished", "task_id": "t", "ts": 2.0, "result": result}
    )
    # Its row was never closed (nothing called finish_run): the end event still counts.
    with start_dashboard(store, port=0) as server, client(server) as api:
        (listed,) = api.get("api/runs").json()["runs"]
    assert (listed["status"], listed["error"], listed["waiting"]) == ("error", "no such model", 0)


def test_stop_for_a_run_started_elsewhere_leaves_it_a_cancel_request(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOCALHAND_HOME", str(tmp_path / "home"))
    running, finished = store.begin_run("a"), store.begin_run("b")
    store.finish_run(finished, {"status": "pass", "termination_reason": "final_answer"})
    with start_dashboard(store, port=0) as server, client(server) as api:
        stopped = api.post(f"api/runs/{running}/cancel")
        assert stopped.json() == {"run_id": running, "cancel": "requested"}
        assert request_file(running).is_file(), "the run's process sees this at its next check"
        late = api.post(f"api/runs/{finished}/cancel")
        assert late.status_code == 409
        assert late.json()["detail"] == f"run {finished} is not running (pass)"
        assert not request_file(finished).exists()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_page_run_that_ends_without_a_result_is_closed_as_an_error(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def dies(self: Session) -> None:
        raise SystemExit(3)  # past what ``Session.outcome`` turns into a failed Result

    monkeypatch.setattr(Session, "outcome", dies)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    launcher = Launcher(store, Settings(), roots=[tmp_path])
    run_id = launcher.start(StartRequest(description="anything", workspace=str(workspace)))
    launcher.threads[run_id].join(10)
    run = store.run(run_id)
    assert (run.status, run.error) == ("error", "the run ended without a result")


def test_stop_refuses_what_a_page_run_waits_for_so_it_ends_at_once(
    store: Store, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    (workspace / "victim").mkdir(parents=True)
    script = [tool_call("run_command", command="rm -rf *"), "Removed it."]
    with served_dashboard(store, script, [tmp_path]) as (server, _), client(server) as api:
        body = {"description": "Clean up", "workspace": str(workspace), "agentic": True}
        run_id = api.post("api/runs", json=body).json()["run_id"]
        deadline = time.monotonic() + 20
        while not api.get("api/approvals").json()["approvals"]:
            assert time.monotonic() < deadline, "the command never waited for the page"
            time.sleep(0.1)
        assert api.post(f"api/runs/{run_id}/cancel").status_code == 200
        deadline = time.monotonic() + 10  # well before the 5-minute approval timeout
        while store.run(run_id).status == "running":
            assert time.monotonic() < deadline, "the stopped run still waits"
            time.sleep(0.1)
    run = store.run(run_id)
    assert (run.status, run.termination_reason) == ("fail", "cancelled")
    decided = [e.data for e in store.events(run_id, types=("approval_decided",))]
    assert [(e["approved"], e["by"]) for e in decided] == [(False, "stop")]
    assert (workspace / "victim").is_dir(), "the refused command never ran"

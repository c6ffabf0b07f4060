"""Run history you can rely on: a replay compares modulo the workspace path, and a run that
fails before its first request keeps its reason, which ``show`` prints."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli_helpers import localhand
from localhand.config.settings import Settings
from localhand.events import EventBus, summarize
from localhand.models.scripted import ScriptedModel, call
from localhand.replay import written
from localhand.run.task import Task
from localhand.session.api import run_task
from localhand.session.door import Session
from localhand.store import Store

LONG = "x" * 100


def record(store: Store, workspace: Path, steps: list) -> str:
    task = Task("Look around", workspace=workspace, agentic=True)
    run_id = store.begin_run(task, model="m")
    bus = EventBus()
    bus.subscribe(store.recorder())
    model = ScriptedModel(steps, name="m")
    run_task(task, Settings(), bus=bus, model=model, follow_up_dir=workspace.parent / "f")
    return run_id


@pytest.fixture(params=["short", "long"])
def recorded_in(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Path]:
    """A workspace whose path is shorter, or longer, than the replay's temporary folder."""
    top = Path(tempfile.mkdtemp(dir="/tmp", prefix="a")) if request.param == "short" else tmp_path
    workspace = top / ("w" if request.param == "short" else "a/much/longer/path/than/that/ws")
    workspace.mkdir(parents=True)
    yield workspace
    shutil.rmtree(top, ignore_errors=True)


def test_a_run_whose_output_holds_its_workspace_path_replays_equal(
    recorded_in: Path, tmp_path: Path
) -> None:
    workspace = recorded_in
    (workspace / "a.txt").write_text("hello\n")
    steps = [
        call("run_command", command=f"pwd && echo {LONG}"),  # cut after the path
        call("read_file", path=str(workspace / "a.txt")),  # the model wrote the whole path
        call("run_command", command=f"echo {LONG} && pwd"),  # cut where the path is
        call("run_command", command=f"pwd; pwd; echo {LONG}"),
        f"Done in {workspace}.",
    ]
    db = tmp_path / "runs.db"
    store = Store(db)
    run_id = record(store, workspace, steps)
    recorded = [e.data for e in store.events(run_id) if e.type == "tool_call"]
    assert all(r["ok"] for r in recorded), recorded
    assert recorded[0]["result_summary"].endswith("…")

    done = localhand("replay", run_id, "--db", str(db), cwd=tmp_path)

    assert done.returncode == 0, done.stdout + done.stderr
    assert "✓ same timeline and result" in done.stdout
    assert "!" not in done.stdout and not done.stderr, done.stdout + done.stderr


def test_a_summary_is_cut_as_if_the_path_were_written_workspace() -> None:
    one, two = "/tmp/a/ws", "/tmp/a/much/longer/folder/ws"
    cut = [summarize(f"{path} {LONG} {path}", 50, path) for path in (one, two)]
    assert [written(text, path) for text, path in zip(cut, (one, two), strict=True)] == [
        f"<workspace> {LONG[:37]}…"
    ] * 2
    assert summarize(f"{LONG} {two}", 105, two) == f"{LONG} {two}…"  # the path is never cut
    assert summarize(f"short {one}", 20, one) == f"short {one}"
    assert summarize(LONG, 10) == "x" * 9 + "…"


def test_a_run_that_fails_before_its_first_request_keeps_its_reason(tmp_path: Path) -> None:
    env = {**os.environ, "OLLAMA_HOST": "127.0.0.1:9", "NO_COLOR": "1", "COLUMNS": "200"}
    missing = tmp_path / "nowhere"
    done = localhand("run", "fix it", "-w", str(missing), env=env, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.count("is not a directory") == 1, done.stderr  # said once

    shown = localhand("show", "last", env=env, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert f"workspace {missing} is not a directory" in shown.stdout
    document = json.loads(localhand("show", "last", "--json", env=env, cwd=tmp_path).stdout)
    assert document["run"]["status"] == "error"
    [finished] = [e for e in document["events"] if e["type"] == "task_finished"]
    assert "is not a directory" in finished["result"]["error"]


def test_ctrl_c_before_the_loop_keeps_cancelled_and_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(task: Task) -> Task:
        raise KeyboardInterrupt

    monkeypatch.setattr("localhand.session.door.with_detected_checks", interrupted)
    session = Session(Task("x", workspace=tmp_path), Settings(), model=ScriptedModel(["ok"]))
    db = tmp_path / "runs.db"
    with pytest.raises(KeyboardInterrupt), session.recording(db=db):
        session.run()
    [run] = Store(db).runs()
    assert (run.status, run.termination_reason) == ("error", "cancelled")
    assert run.error == "cancelled by the user (Ctrl-C)"


def test_show_prints_the_reason_of_a_run_recorded_without_its_result(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    store = Store(db)
    run_id = store.begin_run(Task("x", workspace=tmp_path), model="m")
    store.finish_run(run_id, {"status": "error", "error": "the model server went away"})
    shown = localhand("show", run_id, "--db", str(db), cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "■ error: the model server went away" in shown.stdout

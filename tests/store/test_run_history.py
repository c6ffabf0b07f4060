"""Run history you can rely on: a replay compares modulo the workspace path, and a run that
fails before its first request keeps its reason, which ``show`` prints."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from cli_helpers import localhand
from localhand.config.settings import Settings
from localhand.events import EventBus
from localhand.models.scripted import ScriptedModel, call
from localhand.replay import replay_dir, replay_run, written
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


@pytest.mark.parametrize("depth", ["a", "a/much/longer/path/than/any/temporary/directory/has"])
def test_a_run_whose_output_holds_its_workspace_path_replays_equal(
    tmp_path: Path, depth: str
) -> None:
    workspace = tmp_path / depth / "ws"
    workspace.mkdir(parents=True)
    (workspace / "a.txt").write_text("hello\n")
    steps = [
        call("run_command", command="pwd && ls"),
        call("read_file", path=str(workspace / "a.txt")),  # the model wrote the whole path
        call("run_command", command=f"echo {LONG} && pwd"),  # the summary is cut in the path
        f"Done in {workspace}.",
    ]
    store = Store()
    run_id = record(store, workspace, steps)
    recorded = [e.data for e in store.events(run_id) if e.type == "tool_call"]
    assert all(r["ok"] for r in recorded), recorded

    report = replay_run(store, run_id)

    assert report.ok, report.differences
    assert (report.replies_recorded, report.replies_used) == (4, 4)
    assert not any("shorter" in note for note in report.notes)


def test_the_replay_directory_is_as_long_as_the_original(tmp_path: Path) -> None:
    for original in (tmp_path / "ws", tmp_path / ("n" * 240) / ("m" * 240) / "ws", Path("/w")):
        top, target = replay_dir("r1", original)
        try:
            assert top.name.startswith("lh") and top in target.parents
            assert len(str(target)) == len(str(original)) or original == Path("/w")
            target.mkdir(parents=True)
            (target / "a.txt").write_text("made")  # every name in it is a name a disk takes
        finally:
            shutil.rmtree(top)


def test_a_cut_inside_the_path_reads_the_same_on_both_sides() -> None:
    one, two = "/tmp/tmpabcdef/ws", "/tmp/lhqwerty1/ws"
    assert written(f"{LONG} /tmp/tmpab…", one) == written(f"{LONG} /tmp/lhqwe…", two)
    assert written(f"ok {one}/a.txt", one) == "ok <workspace>/a.txt"
    assert written(f"{LONG} other…", one) == f"{LONG} other…"


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

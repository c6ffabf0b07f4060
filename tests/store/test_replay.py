"""Replay: recorded runs as regression tests, through the current loop and the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from localhand.cli import main
from localhand.config.settings import Settings
from localhand.events import EventBus, ModelReply, TaskFinished, TaskStarted
from localhand.evidence.verify import CommandCheck
from localhand.models.scripted import ScriptedModel, call
from localhand.replay import compare, replay_run
from localhand.run.task import Task
from localhand.session.api import run_task
from localhand.store import Store, StoreError
from workspaces import BUGGY, CHECK, workspace_with

FIX = [
    {
        "content": "",
        "thinking": "Look first.",
        "tool_calls": [{"function": {"name": "read_file", "arguments": {"path": "calc.py"}}}],
    },
    call("edit_file", path="calc.py", old_text="return a - b", new_text="return a + b"),
    call("run_command", command="python3 check_calc.py"),
    "Fixed add().",
]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return workspace_with(tmp_path / "ws", {"calc.py": BUGGY, "check_calc.py": CHECK})


def record(store: Store, workspace: Path, steps: list, **recorder: int) -> str:
    task = Task("Fix add", workspace=workspace, checks=(CommandCheck("python3 check_calc.py"),))
    run_id = store.begin_run(task, model="qwen3:8b")
    bus = EventBus()
    bus.subscribe(store.recorder(**recorder))
    run_task(
        task,
        Settings(),
        bus=bus,
        model=ScriptedModel(steps, name="qwen3:8b"),
        follow_up_dir=workspace.parent / "follow-ups",
    )
    return run_id


def test_a_recorded_run_replays_identically_from_its_kept_workspace(workspace: Path) -> None:
    store = Store()
    run_id = record(store, workspace, FIX)
    assert store.run(run_id).status == "pass"

    report = replay_run(store, run_id)

    assert report.ok, report.differences
    assert report.workspace_source == "snapshot"
    assert (report.replies_recorded, report.replies_used) == (4, 4)
    assert report.result.status == "pass" and report.result.files_modified == ["calc.py"]
    assert report.result.model_used == "qwen3:8b"
    replayed = store.run(report.replay_run_id or "")
    assert (replayed.kind, replayed.replay_of, replayed.status) == ("replay", run_id, "pass")
    assert "return a + b" in (workspace / "calc.py").read_text(), "the original is untouched"
    assert not report.workspace.exists(), "the temporary copy is removed"


def test_a_changed_starting_point_is_reported_step_by_step(workspace: Path, tmp_path: Path) -> None:
    store = Store()
    run_id = record(store, workspace, FIX)
    fixed = tmp_path / "already-fixed"
    fixed.mkdir()
    (fixed / "calc.py").write_text(BUGGY.replace("-", "+"))
    (fixed / "check_calc.py").write_text(CHECK)

    report = replay_run(store, run_id, workspace=fixed)

    assert not report.ok
    assert report.workspace_source == f"copy of {fixed}"
    [diff] = [d for d in report.differences if d.recorded and "edit_file" in d.recorded]
    assert "→ ok" in diff.recorded and diff.replayed is not None and "→ error" in diff.replayed
    assert (fixed / "calc.py").read_text() == BUGGY.replace("-", "+"), "DIR itself is untouched"


def test_a_loop_that_asks_for_more_replies_ends_in_an_error_not_a_crash() -> None:
    store = Store()
    run_id = store.begin_run("synthetic")
    recorder = store.recorder(archive_bytes=0)
    # It ran the tool loop: say so, or today's router would answer "List files" in one reply.
    recorder(
        TaskStarted(
            task_id="synthetic",
            description="List files",
            model="m",
            workspace="/nonexistent",
            max_iterations=5,
            routing={"agentic": True, "reason": "set explicitly"},
        )
    )
    # A run whose single recorded reply called a tool and which then ended (say, by a
    # guardrail that no longer exists): today's loop asks for a second reply.
    recorder(
        ModelReply(
            task_id="synthetic",
            iteration=1,
            content="",
            tool_calls=[{"function": {"name": "list_directory", "arguments": {}}}],
        )
    )
    recorder(TaskFinished(task_id="synthetic", result={"status": "fail"}))
    with pytest.raises(StoreError, match=r"workspace .* is gone"):
        replay_run(store, run_id)

    report = replay_run(store, run_id, workspace=Path(__file__).parents[1] / "parser_corpus")

    assert report.result.status == "error"
    assert "recorded only 1" in (report.result.error or "")
    assert not report.ok
    assert any("the task's spec was not stored" in note for note in report.notes)


def test_without_a_kept_workspace_it_replays_in_a_copy_of_the_current_one(
    workspace: Path,
) -> None:
    store = Store()
    run_id = record(store, workspace, FIX, archive_bytes=0)
    report = replay_run(store, run_id, keep=True)
    assert any("as it is now" in note for note in report.notes)
    assert report.kept and (report.workspace / "calc.py").exists()
    assert not report.ok, "the run already fixed the file, so the edit now fails"


def test_runs_with_nothing_to_replay_are_refused() -> None:
    store = Store()
    run_id = store.begin_run("empty")
    with pytest.raises(StoreError, match="no model replies"):
        replay_run(store, run_id)
    with pytest.raises(StoreError, match="no run"):
        replay_run(store, "abcdef")


def test_compare_aligns_an_inserted_step() -> None:
    diffs = compare(["a", "b", "c"], ["a", "x", "b", "c"])
    assert [(d.recorded, d.replayed) for d in diffs] == [(None, "x")]


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    """``localhand ARGS`` in this process: the exit code, and stdout and stderr together."""
    capsys.readouterr()
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out + err


def test_cli_runs_show_and_replay(
    workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "runs.db"
    store = Store(db)
    run_id = record(store, workspace, FIX)

    code, listed = cli(capsys, "runs", "--db", str(db))
    assert code == 0, listed
    assert run_id in listed and "pass" in listed

    code, shown = cli(capsys, "show", run_id[:5], "--db", str(db))
    assert code == 0, shown
    assert "read_file" in shown and "edit_file" in shown
    assert "Fixed add()." in shown

    code, as_json = cli(capsys, "show", "last", "--db", str(db), "--json")
    run = json.loads(as_json)
    assert run["run"]["id"] == run_id and run["events"][0]["type"] == "task_started"

    code, same = cli(capsys, "replay", run_id, "--db", str(db))
    assert code == 0, same
    assert "same timeline and result" in same

    fixed = tmp_path / "fixed"
    fixed.mkdir()
    (fixed / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (fixed / "check_calc.py").write_text(CHECK)
    code, differs = cli(capsys, "replay", run_id, "--db", str(db), "--workspace", str(fixed))
    assert code == 1, differs
    assert "- recorded: tool edit_file" in differs

    code, unknown = cli(capsys, "show", "nope", "--db", str(db))
    assert code == 2
    assert "no run 'nope'" in unknown and "Traceback" not in unknown

"""What a Result keeps of a run: the git state before it, its diff, and a follow-up task."""

from __future__ import annotations

import subprocess
from pathlib import Path

from localhand import Agent
from localhand.config.settings import Settings
from localhand.evidence.verify import CommandCheck, FileContains, FileExists
from localhand.models.scripted import ScriptedModel, call
from localhand.run.task import Task
from localhand.session.api import run_task
from localhand.taskfile import load_task_file
from workspaces import BUGGY

FIX = [
    call("edit_file", path="calc.py", old_text="return a - b", new_text="return a + b"),
    call("write_file", path="notes.md", content="fixed\n"),
    "Fixed.",
]


def git(workspace: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=workspace,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def test_git_workspace_records_the_state_before_and_the_diff(tmp_path: Path) -> None:
    (tmp_path / "calc.py").write_text(BUGGY)
    (tmp_path / "untracked.txt").write_text("mine\n")
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "calc.py")
    git(tmp_path, "commit", "-qm", "start")
    index_before = git(tmp_path, "ls-files", "--stage")

    result = Agent(ScriptedModel(FIX), tmp_path).run("Fix add")

    assert result.git is not None
    assert "-    return a - b" in result.git["diff"]
    assert "+    return a + b" in result.git["diff"]
    assert "+++ b/notes.md" in result.git["diff"]
    assert "untracked.txt" not in result.git["diff"], "unchanged files are not in the diff"
    assert git(tmp_path, "ls-files", "--stage") == index_before, "the user's index is untouched"
    assert git(tmp_path, "status", "--porcelain").count("\n") == 3  # calc.py, notes.md, untracked
    before = result.git["before"]
    assert git(tmp_path, "rev-parse", result.git["ref"]).strip() == before
    assert git(tmp_path, "show", f"{before}:untracked.txt") == "mine\n"
    subprocess.run(result.git["restore"], shell=True, cwd=tmp_path, check=True)
    assert (tmp_path / "calc.py").read_text() == BUGGY


def test_no_git_state_outside_a_repository(tmp_path: Path) -> None:
    (tmp_path / "calc.py").write_text(BUGGY)
    result = Agent(ScriptedModel(FIX), tmp_path).run("Fix add")
    assert result.git is None


def test_unfinished_task_writes_a_follow_up_task_file(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "calc.py").write_text(BUGGY)
    task = Task(
        "Fix add and write the changelog",
        workspace=workspace,
        checks=(FileContains("calc.py", "a + b"), FileExists("CHANGELOG.md"), CommandCheck("true")),
        tier="complex",
    )
    # Told that CHANGELOG.md is still missing, the model answers again without writing it.
    model = ScriptedModel([*FIX, "Done, as I said."])
    result = run_task(task, Settings(), model=model, follow_up_dir=tmp_path / "tasks")
    told = model.calls[-1].messages[-1]["content"]
    assert "1 of the task's checks fail" in told and "CHANGELOG.md" in told

    assert result.status == "partial_pass"
    assert result.completed == ["file contains: calc.py ∋ 'a + b'", "true"]
    assert result.remaining == ["file exists: CHANGELOG.md"]
    follow_up = load_task_file(result.follow_up_task)
    assert follow_up.id == f"{task.id}-followup"
    assert follow_up.workspace == workspace.resolve()
    assert follow_up.checks == task.checks
    assert follow_up.tier == "complex"
    assert "Still failing, to finish now: file exists: CHANGELOG.md" in follow_up.description
    assert "It modified: calc.py, notes.md" in follow_up.description


def test_passing_task_writes_no_follow_up(tmp_path: Path) -> None:
    (tmp_path / "calc.py").write_text(BUGGY)
    task = Task("Fix add", workspace=tmp_path, checks=(FileContains("calc.py", "a + b"),))
    result = run_task(task, Settings(), model=ScriptedModel(FIX), follow_up_dir=tmp_path / "t")
    assert result.status == "pass"
    assert result.follow_up_task is None
    assert result.routing == {"agentic": True, "reason": "asks to fix something in the workspace"}
    assert not (tmp_path / "t").exists()

"""Per-task workspaces: a git worktree of the repository as it is, or a copy; always removed."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from localhand.batch import BatchOptions, run_batch
from localhand.batch.workspace import task_workspace
from localhand.config.settings import Settings
from localhand.testing import FakeOllama


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def make_repo(path: Path) -> Path:
    path.mkdir()
    git(path, "init", "-q")
    (path / ".gitignore").write_text("*.log\n")
    (path / "a.py").write_text("x = 1\n")
    (path / "pkg").mkdir()
    (path / "pkg" / "b.py").write_text("y = 2\n")
    git(path, "add", ".")
    git(path, "commit", "-qm", "start")
    (path / "a.py").write_text("x = 'uncommitted'\n")
    (path / "new.txt").write_text("untracked\n")
    (path / "big.log").write_text("ignored\n")
    return path


def looker(body: dict[str, Any]) -> Any:
    tools = [m for m in body["messages"] if m.get("role") == "tool"]
    if not tools:
        command = "ls -a; cat a.py 2>/dev/null; cat b.py 2>/dev/null"
        return {
            "content": "",
            "tool_calls": [
                {"function": {"name": "run_command", "arguments": {"command": command}}}
            ],
        }
    if len(tools) == 1:
        return {
            "content": "",
            "tool_calls": [
                {
                    "function": {
                        "name": "write_file",
                        "arguments": {"path": "out.txt", "content": "made"},
                    }
                }
            ],
        }
    return "Done."


def test_a_repository_task_runs_in_a_worktree_of_the_working_tree(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    status_before = git(repo, "status", "--porcelain")
    lines = [
        {"id": "top", "description": "Look around", "workspace": "repo", "agentic": True},
        {"id": "sub", "description": "Look around", "workspace": "repo/pkg", "agentic": True},
    ]
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(x) + "\n" for x in lines))
    with FakeOllama([looker] * 20, models={"qwen3:8b": {}}) as server:
        report = run_batch(
            tasks,
            Settings(),
            BatchOptions(hosts=[server.url], workdir=tmp_path / "work", concurrency=1),
            live=False,
        )
        seen = {
            r.body["messages"][-1]["content"]
            for r in server.chat_requests
            if sum(m.get("role") == "tool" for m in r.body["messages"]) == 1
        }
    assert report.exit_code == 3, [r.result for r in report.rows]  # unverified: no checks
    top = next(text for text in seen if "new.txt" in text)
    assert "uncommitted" in top, "uncommitted changes are in the worktree"
    assert "big.log" not in top, "ignored files are not"
    assert any("y = 2" in text and "new.txt" not in text for text in seen), "pkg/ is the cwd"
    # the source is untouched, and no worktree is left registered
    assert git(repo, "status", "--porcelain") == status_before
    assert not (repo / "out.txt").exists()
    assert len(git(repo, "worktree", "list").splitlines()) == 1
    assert not (tmp_path / "work").exists()
    # what each task changed is kept in a ref
    assert git(repo, "show", "refs/localhand/batch/top:out.txt") == "made"
    assert git(repo, "show", "refs/localhand/batch/sub:pkg/out.txt") == "made"
    rows = {row.task_id: row for row in report.rows}
    assert rows["top"].note == "changes in refs/localhand/batch/top"
    assert rows["top"].result["git"]["diff"].count("out.txt") >= 1


def test_a_plain_folder_is_copied_and_leftovers_are_cleared(tmp_path: Path) -> None:
    source = tmp_path / "src"
    (source / "d").mkdir(parents=True)
    (source / "d" / "f.txt").write_text("hello")
    root = source / "work"  # even inside the source, the copy does not copy itself
    (root / "t1").mkdir(parents=True)
    (root / "t1" / "stale.txt").write_text("from a killed run")
    with task_workspace(source, root, "t1") as prepared:
        assert prepared.kind == "copy"
        assert (prepared.path / "d" / "f.txt").read_text() == "hello"
        assert not (prepared.path / "stale.txt").exists()
        assert not (prepared.path / "work").exists()
        (prepared.path / "new.txt").write_text("x")
    assert not (root / "t1").exists() and not (source / "new.txt").exists()
    with task_workspace(source, root, "t2", keep=True) as prepared:
        pass
    assert prepared.path.is_dir()


def test_a_missing_workspace_is_an_error_result_not_a_crash(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"id": "gone", "description": "x", "workspace": "nowhere"}) + "\n")
    with FakeOllama(models={"qwen3:8b": {}}) as server:
        report = run_batch(
            tasks, Settings(), BatchOptions(hosts=[server.url], workdir=tmp_path / "w"), live=False
        )
    (row,) = report.rows
    assert row.result["status"] == "error"
    assert "nowhere is not a directory" in row.result["error"]
    assert report.exit_code == 2


@pytest.mark.parametrize("fresh", [False, True])
def test_fresh_forgets_what_was_done(tmp_path: Path, fresh: bool) -> None:
    tasks = tmp_path / "tasks.jsonl"
    (tmp_path / "ws").mkdir()
    tasks.write_text(
        json.dumps({"id": "a", "description": "Say hi", "workspace": "ws", "agentic": False}) + "\n"
    )
    with FakeOllama(["hi", "hi again"], models={"qwen3:8b": {}}) as server:
        opts = BatchOptions(hosts=[server.url], workdir=tmp_path / "w")
        run_batch(tasks, Settings(), opts, live=False)
        opts.fresh = fresh
        report = run_batch(tasks, Settings(), opts, live=False)
        asked = len(server.chat_requests)
    assert asked == (2 if fresh else 1)
    assert report.rows[0].skipped is not fresh


def test_the_example_batch_file_is_valid() -> None:
    from localhand.batch import load_batch

    example = Path(__file__).resolve().parents[2] / "examples" / "batch" / "tasks.jsonl"
    tasks = load_batch(example)
    assert [t.id for t in tasks] == ["fix-add", "add-subtract", "summarise-notes"]
    assert all(t.task.workspace.is_dir() for t in tasks)


def test_batch_git_after_a_task_writes_only_where_the_worktree_was(tmp_path: Path) -> None:
    """A task that points its worktree's .git at another repository (it can write the
    worktree) gets no write there from localhand's git keeping its changes: that git runs in
    the sandbox, writing only the worktree and its git directories as they were before."""
    from localhand.safety.box.sandbox import available

    if available() is not None:
        pytest.skip(f"no sandbox: {available()}")
    repo = make_repo(tmp_path / "repo")
    victim = make_repo(tmp_path / "victim")
    objects = victim / ".git" / "objects"
    before = sorted(str(p) for p in objects.rglob("*"))
    refs_before = git(victim, "for-each-ref")
    with task_workspace(repo, tmp_path / "root", "t1") as prepared:
        assert prepared.kind == "worktree" and prepared.writable
        (prepared.path / ".git").write_text(f"gitdir: {victim / '.git'}\n")
        (prepared.path / "planted.txt").write_text("the task's change\n")
    assert prepared.ref is None  # the snapshot could not be kept, and nothing else happened
    assert sorted(str(p) for p in objects.rglob("*")) == before
    assert git(victim, "for-each-ref") == refs_before
    assert not (tmp_path / "root" / "t1").exists()


def test_batch_git_keeps_an_honest_tasks_changes(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    with task_workspace(repo, tmp_path / "root", "t2") as prepared:
        (prepared.path / "made.txt").write_text("made\n")
    assert prepared.ref == "refs/localhand/batch/t2"
    assert "made.txt" in git(repo, "show", "--stat", prepared.ref)

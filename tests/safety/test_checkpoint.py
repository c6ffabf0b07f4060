"""Checkpoints before dangerous commands, and ``localhand undo RUN`` putting them back.

The end-to-end cases run a real task (a scripted model, an approver that says yes) in a
recorded run, then ``python -m localhand undo`` in a fresh process, as a person would.
"""

from __future__ import annotations

import os
import stat
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path

import pytest

from cli_helpers import localhand
from localhand.config.settings import Settings
from localhand.events import EventBus
from localhand.models.scripted import ScriptedModel, call
from localhand.run.task import Task
from localhand.safety.approval.approver import BaseApprover, DenyAll
from localhand.safety.box.sandbox import available, run_sandbox
from localhand.safety.risk.classify import Risk
from localhand.safety.undo import checkpoint
from localhand.safety.undo import restore as undo
from localhand.session.api import run_task
from localhand.session.recording import RunRecording
from localhand.tools.shell import ShellTool
from localhand.tools.workspace import Workspace


class Approver(BaseApprover):
    """Says ``answer`` to everything, and keeps what it was asked."""

    def __init__(self, answer: bool = True) -> None:
        self.answer = answer
        self.asked: list[str] = []

    def approve(self, command: str, risk: Risk) -> bool:
        self.asked.append(command)
        return self.answer


def populate(root: Path) -> None:
    """A small project: text, binary, an executable, an empty directory, a symlink, a git
    directory, a secret-looking file and a left-out node_modules."""
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "README.md").write_text("# demo\n")
    (root / "src" / "app.py").write_text("print('hi')\n")
    (root / "src" / "pkg" / "data.bin").write_bytes(os.urandom(70_000) + b"\0\xff")
    run = root / "run.sh"
    run.write_text("#!/bin/sh\necho run\n")
    run.chmod(0o755)
    (root / "empty").mkdir()
    (root / "link").symlink_to("README.md")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / ".env").write_text("TOKEN=kept\n")
    (root / "node_modules" / "pkg").mkdir(parents=True)
    (root / "node_modules" / "pkg" / "index.js").write_text("module.exports = 1\n")
    os.utime(root / "src" / "app.py", ns=(1_600_000_000_000_000_000,) * 2)


def tree(root: Path) -> dict[str, tuple[str, object, int]]:
    """Every path (node_modules aside) with its kind, contents or target, and mode."""
    found: dict[str, tuple[str, object, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != "node_modules"]
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            rel = str(path.relative_to(root))
            mode = stat.S_IMODE(path.lstat().st_mode)
            if path.is_symlink():
                found[rel] = ("link", os.readlink(path), 0)
            elif path.is_dir():
                found[rel] = ("dir", None, mode)
            else:
                found[rel] = ("file", path.read_bytes(), mode)
    return found


def recorded_run(
    workspace: Path, commands: Iterable[str], approver: Approver, settings: Settings | None = None
) -> tuple[str, list[str]]:
    """Run a task that runs ``commands``, recorded in the store: its run id, tool results."""
    settings = settings or Settings()
    calls = [call("run_command", command=command) for command in commands]
    model = ScriptedModel([*calls, "done"])
    task = Task("Tidy the workspace", workspace=workspace, agentic=True)
    bus = EventBus()
    with RunRecording(task, bus, settings=settings) as recording:
        run_task(task, settings, bus=bus, model=model, store=recording.store, approver=approver)
    assert recording.run_id is not None
    results = [m["content"] for m in model.calls[-1].messages if m["role"] == "tool"]
    return recording.run_id, results


def kept(taken: checkpoint.Checkpoint, rel: str) -> bytes:
    """The bytes ``taken`` keeps for the file ``rel``."""
    (entry,) = [e for e in taken.entries if e.path == rel]
    with open(taken.location / "data", "rb") as data:
        data.seek(entry.offset)
        return data.read(entry.size)


def checkpoints_of(run_id: str) -> list[Path]:
    run_dir = checkpoint.checkpoints_home() / run_id
    return sorted(run_dir.iterdir()) if run_dir.is_dir() else []


def test_undo_restores_every_file_and_removes_what_came_after(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    populate(workspace)
    before = tree(workspace)
    approver = Approver()

    run_id, (result,) = recorded_run(workspace, ["rm -rf *"], approver)

    assert approver.asked == ["rm -rf *"]
    assert not (workspace / "README.md").exists()
    assert f"`localhand undo {run_id}`" in result and "checkpoint" in result
    (location,) = checkpoints_of(run_id)
    assert (location / "manifest.json").is_file()
    # What came after: a new file, a new directory, a directory where a file was.
    (workspace / "new.txt").write_text("made later\n")
    (workspace / "later" / "deep").mkdir(parents=True)
    (workspace / "later" / "deep" / "x.py").write_text("x = 1\n")
    (workspace / "README.md").mkdir()
    (workspace / "README.md" / "inside.txt").write_text("in the way\n")

    done = localhand("undo", run_id, "--yes")

    assert done.returncode == 0, done.stderr
    assert "rm -rf *" in done.stdout and "checkpoint 1 of 1" in done.stdout
    assert "node_modules/" in done.stdout  # said to be left as it is
    assert tree(workspace) == before
    assert (workspace / "src" / "app.py").stat().st_mtime_ns == 1_600_000_000_000_000_000
    assert not (workspace / "new.txt").exists() and not (workspace / "later").exists()

    again = localhand("undo", run_id[:6], "--yes")
    assert again.returncode == 0 and "Nothing to do" in again.stdout


def test_undo_asks_first_and_no_changes_nothing(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    populate(workspace)
    before = tree(workspace)
    run_id, _ = recorded_run(workspace, ["rm -rf *"], Approver())
    (workspace / "new.txt").write_text("made later\n")
    after = tree(workspace)

    declined = localhand("undo", "last", stdin="n\n")

    assert declined.returncode == 1, declined.stderr
    assert "Restore the workspace? [y/N]" in declined.stdout
    assert "src/app.py" in declined.stdout and "new.txt" in declined.stdout
    assert "Nothing was changed" in declined.stdout
    assert tree(workspace) == after
    assert localhand("undo", run_id).returncode == 1  # no answer at all is a no too
    assert tree(workspace) == after

    accepted = localhand("undo", run_id, stdin="y\n")
    assert accepted.returncode == 0, accepted.stderr
    assert tree(workspace) == before


def test_undo_of_an_unknown_run_exits_2_and_says_what_to_do() -> None:
    done = localhand("undo", "nosuchrun", "--yes")
    assert done.returncode == 2
    assert "no run 'nosuchrun'" in done.stderr and "localhand runs" in done.stderr
    assert "Traceback" not in done.stderr


def test_commands_that_need_no_approval_take_no_checkpoint(tmp_path: Path) -> None:
    approver = Approver()
    run_id, (result,) = recorded_run(tmp_path, ["echo hi > a.txt && ls"], approver)

    assert approver.asked == []
    assert (tmp_path / "a.txt").read_text() == "hi\n"
    assert checkpoints_of(run_id) == []
    assert "checkpoint" not in result
    done = localhand("undo", run_id, "--yes")
    assert done.returncode == 2
    assert f"run {run_id} has no checkpoint" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_refused_command_takes_no_checkpoint(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("x")
    run_id, (result,) = recorded_run(tmp_path, ["rm -rf *"], Approver(answer=False))
    assert result.startswith("Refused:")
    assert checkpoints_of(run_id) == []
    assert (tmp_path / "f.txt").exists()


def test_undo_takes_the_first_checkpoint_unless_told(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    populate(workspace)
    before = tree(workspace)
    commands = ["rm src/app.py; git clean -fd", "rm -rf *"]  # both dangerous (git clean)
    run_id, results = recorded_run(workspace, commands, Approver())
    assert len(checkpoints_of(run_id)) == 2 and all("checkpoint" in r for r in results)

    second = localhand("undo", run_id, "--checkpoint", "2", "--yes")
    assert second.returncode == 0, second.stderr
    assert "checkpoint 2 of 2" in second.stdout and "rm -rf *" in second.stdout
    assert (workspace / "README.md").exists() and not (workspace / "src" / "app.py").exists()

    first = localhand("undo", run_id, "--yes")
    assert first.returncode == 0, first.stderr
    assert "checkpoint 1 of 2" in first.stdout and "rm src/app.py" in first.stdout
    assert tree(workspace) == before

    beyond = localhand("undo", run_id, "--checkpoint", "3", "--yes")
    assert beyond.returncode == 2 and "--checkpoint 1 to 2" in beyond.stderr


def git(workspace: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=workspace,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def test_git_reset_clean_and_a_deleted_git_directory_are_undone(tmp_path: Path) -> None:
    workspace = tmp_path / "repo"
    workspace.mkdir()
    git(workspace, "init", "-q")
    (workspace / ".gitignore").write_text(".env\n")
    (workspace / "app.py").write_text("v1\n")
    git(workspace, "add", ".")
    git(workspace, "commit", "-qm", "first")
    (workspace / "app.py").write_text("v2, not committed\n")
    (workspace / ".env").write_text("SECRET=1\n")
    (workspace / "notes.txt").write_text("untracked\n")
    status = git(workspace, "status", "--porcelain", "--ignored")

    run_id, _ = recorded_run(
        workspace, ["git reset --hard && git clean -fdx && rm -rf .git"], Approver()
    )
    assert not (workspace / ".git").exists() and not (workspace / ".env").exists()

    done = localhand("undo", run_id, "--yes")

    assert done.returncode == 0, done.stderr
    assert (workspace / "app.py").read_text() == "v2, not committed\n"
    assert (workspace / ".env").read_text() == "SECRET=1\n"
    assert git(workspace, "log", "--format=%s") == "first\n"
    assert git(workspace, "status", "--porcelain", "--ignored") == status


def test_a_checkpoint_is_private(tmp_path: Path) -> None:
    populate(tmp_path)
    (tmp_path / "src" / "app.py").chmod(0o644)
    old = os.umask(0)
    try:
        taken = checkpoint.take(tmp_path, "rm -rf *", task_id="t", run_id="abc123")
    finally:
        os.umask(old)
    paths = [taken.location.parent.parent, taken.location.parent, taken.location]
    paths += [p for p in taken.location.rglob("*") if not p.is_symlink()]
    for path in paths:
        want = 0o700 if path.is_dir() else 0o600
        assert stat.S_IMODE(path.stat().st_mode) == want, path
    assert kept(taken, ".env") == b"TOKEN=kept\n"  # secrets too: they are worth having back
    assert "node_modules/" in taken.left_out
    assert not any(e.path.startswith("node_modules") for e in taken.entries)


def test_a_checkpoint_is_a_copy_not_a_link(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("before\n")
    taken = checkpoint.take(tmp_path, "x", task_id="t", run_id="copy1")
    with open(tmp_path / "a.txt", "r+") as f:  # in place: the same inode
        f.write("AFTER!\n")
    assert kept(taken, "a.txt") == b"before\n"


def test_undo_never_follows_a_symlink_out_of_the_workspace(tmp_path: Path) -> None:
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    (workspace / "src").mkdir(parents=True)
    (workspace / "src" / "app.py").write_text("mine\n")
    outside.mkdir()
    (outside / "app.py").write_text("not yours\n")
    taken = checkpoint.take(workspace, "rm -rf src", task_id="t", run_id="sym1")
    (workspace / "src" / "app.py").unlink()
    (workspace / "src").rmdir()
    (workspace / "src").symlink_to(outside)

    undo.undo(taken, undo.plan_undo(taken))

    assert (outside / "app.py").read_text() == "not yours\n"
    assert sorted(p.name for p in outside.iterdir()) == ["app.py"]
    assert not (workspace / "src").is_symlink()
    assert (workspace / "src" / "app.py").read_text() == "mine\n"


def test_undo_sees_changes_that_keep_size_and_mtime_and_odd_names(tmp_path: Path) -> None:
    odd = os.fsdecode(b"caf\xe9 new\nline")  # not UTF-8, with a newline
    (tmp_path / "same.txt").write_text("aaaa")
    (tmp_path / "mode.sh").write_text("echo\n")
    (tmp_path / odd).write_text("odd\n")
    before = tree(tmp_path)
    taken = checkpoint.take(tmp_path, "git clean -fdx", task_id="t", run_id="same1")
    assert undo.plan_undo(taken).empty
    stamp = (tmp_path / "same.txt").stat().st_mtime_ns
    (tmp_path / "same.txt").write_text("bbbb")
    os.utime(tmp_path / "same.txt", ns=(stamp, stamp))
    (tmp_path / "mode.sh").chmod(0o777)
    (tmp_path / odd).unlink()

    plan = undo.plan_undo(taken)
    assert sorted(e.path for e in plan.restore) == sorted(["same.txt", "mode.sh", odd])
    undo.undo(taken, plan)
    assert tree(tmp_path) == before


def test_undo_refuses_when_the_workspace_is_gone(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("a")
    taken = checkpoint.take(workspace, "rm -rf *", task_id="t", run_id="gone1")
    (workspace / "a.txt").unlink()
    workspace.rmdir()
    with pytest.raises(checkpoint.UndoError, match="no longer exists"):
        undo.plan_undo(taken)
    assert not workspace.exists()


def test_a_workspace_over_the_limit_is_not_copied_and_the_model_is_told(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(checkpoint, "MAX_BYTES", 1024)
    (tmp_path / "big.bin").write_bytes(b"x" * 2048)
    note = checkpoint.checkpoint_note(tmp_path, "rm -rf *", task_id="t", run_id="big1")
    assert note.startswith("[No checkpoint was taken (the workspace has more than")
    assert "`localhand undo big1` cannot restore" in note
    assert checkpoints_of("big1") == []


def test_checkpoints_filed_by_task_are_found_by_the_time_of_the_run(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a")
    started = time.time()
    checkpoint.take(tmp_path, "rm -rf *", task_id="shared-task", run_id=None)
    finished = time.time()
    (found,) = undo.find("run1", "shared-task", started, finished)
    assert found.number == 1 and found.command == "rm -rf *"
    assert undo.find("run0", "shared-task", started - 100, started - 50) == []


def test_the_shell_tool_checkpoints_dangerous_commands_it_runs_only(tmp_path: Path) -> None:
    taken: list[str] = []

    def hook(command: str) -> str:
        taken.append(command)
        return "[checkpoint line]"

    def tool(approver: object) -> ShellTool:
        return ShellTool(Workspace(tmp_path), approver=approver, checkpoint=hook)  # type: ignore[arg-type]

    refused = tool(DenyAll()).run_command("rm -rf *")
    assert refused.content.startswith("Refused:") and taken == []
    plain = tool(Approver()).run_command("echo hi")
    assert "checkpoint" not in plain.content and taken == []
    done = tool(Approver()).run_command("rm -rf *")
    assert taken == ["rm -rf *"] and done.content.endswith("[checkpoint line]")
    never = ShellTool(Workspace(tmp_path), policy="never", checkpoint=hook)
    never.run_command("git clean -fdx")
    assert taken == ["rm -rf *", "git clean -fdx"]  # no question asked, still a copy


@pytest.mark.skipif(available() is not None, reason="no bubblewrap sandbox here")
def test_no_checkpoint_where_the_sandbox_makes_the_workspace_read_only(tmp_path: Path) -> None:
    taken: list[str] = []
    tool = ShellTool(Workspace(tmp_path), policy="never", checkpoint=taken.append)  # type: ignore[arg-type]
    with run_sandbox("read-only", network=False, read=(), warn=lambda _: None):
        tool.run_command("rm -rf *")
    assert taken == []

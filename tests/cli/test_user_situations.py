"""A user's situation is one line that says what to do, exit code 2, never a traceback: a
deleted working directory, a workspace removed mid-run, a full disk, a read-only data
directory (the last two injected: ENOSPC and EROFS at the store's and the data directory's
writes, in the real command line's process)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cli_helpers import localhand
from localhand.testing import FakeOllama
from workspaces import workspace_with

READ = {"tool_calls": [{"function": {"name": "read_file", "arguments": {"path": "a.txt"}}}]}
LIST = {"tool_calls": [{"function": {"name": "run_command", "arguments": {"command": "ls"}}}]}
ANSWER = {"content": "Done."}

INJECT = """
import errno, os, sys
from contextlib import contextmanager
import localhand.paths, localhand.store.connection as connection, localhand.store.db as db

code = getattr(errno, sys.argv.pop(1))
writes_left = int(sys.argv.pop(1))

def refused(*args, **kwargs):
    raise OSError(code, os.strerror(code))

if code == errno.EROFS:  # the data directory cannot be made or written
    connection.private_dir = connection.create_private_file = refused
    localhand.paths.private_dir = refused
real = db.write_transaction

@contextmanager
def counted(conn):
    global writes_left
    if writes_left <= 0:
        refused()
    writes_left -= 1
    with real(conn) as written:
        yield written

db.write_transaction = counted
from localhand.cli import main
sys.exit(main(sys.argv[1:]))
"""


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    """The error line of a command that exited 2 without a traceback."""
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    [line] = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    return line


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return workspace_with(tmp_path / "ws", {"a.txt": "hello\n"})


def from_deleted(folder: Path, arguments: str) -> subprocess.CompletedProcess[str]:
    """``localhand ARGUMENTS`` started in ``folder``, deleted just before."""
    script = f"mkdir {folder} && cd {folder} && rmdir {folder} && localhand {arguments}"
    env = {**os.environ, "NO_COLOR": "1", "OLLAMA_HOST": "127.0.0.1:9"}
    script = script.replace("localhand ", f"{sys.executable} -m localhand ")
    return subprocess.run(["sh", "-c", script], env=env, capture_output=True, text=True)


def test_run_from_a_deleted_directory_says_so_and_records_the_run(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    line = one_error_line(from_deleted(gone, "run 'fix it'"))
    assert f"workspace {gone} is not a directory" in line

    shown = json.loads(localhand("show", "last", "--json", cwd=tmp_path).stdout)
    assert shown["run"]["status"] == "error"
    assert str(gone) in shown["run"]["error"]
    line = one_error_line(from_deleted(gone, "runs"))
    assert f"the current directory {gone} was deleted; cd to a folder that exists" in line


def test_a_workspace_removed_mid_run_ends_the_run_with_an_error(
    workspace: Path, tmp_path: Path
) -> None:
    def removed(body: object) -> dict:
        shutil.rmtree(workspace)  # another terminal deletes it while the model thinks
        return LIST

    with FakeOllama(script=[READ, removed, READ, ANSWER], models={"m": {}}) as server:
        done = localhand(
            "run", "look", "-w", str(workspace), "-m", "m", host=server.url, cwd=tmp_path
        )
        asked = len(server.chat_requests)
    line = one_error_line(done)
    assert f"the workspace {workspace} was removed during the run" in line
    assert "run the task again in a folder that exists" in line
    assert asked == 2  # nothing more was asked of the model
    [run] = json.loads(localhand("runs", "--json", cwd=tmp_path).stdout)
    assert (run["status"], run["termination_reason"]) == ("error", "error")


@pytest.mark.parametrize(
    ("code", "writes", "said"),
    [
        ("ENOSPC", 0, "the disk is full: free some space"),
        ("ENOSPC", 3, "the disk is full: free some space"),  # mid-run
        ("EROFS", 0, "it is read-only"),
    ],
)
def test_a_store_that_cannot_be_written_is_one_line(
    workspace: Path, tmp_path: Path, code: str, writes: int, said: str
) -> None:
    env = {**os.environ, "NO_COLOR": "1", "LOCALHAND_HOME": str(tmp_path / "home")}
    env.pop("LOCALHAND_DB", None)
    with FakeOllama(script=[READ, READ, ANSWER], models={"m": {}}) as server:
        env["OLLAMA_HOST"] = server.url
        command = ["run", "look", "-w", str(workspace), "-m", "m"]
        done = subprocess.run(
            [sys.executable, "-c", INJECT, code, str(writes), *command],
            env=env,
            capture_output=True,
            text=True,
            cwd=tmp_path,
        )
    line = one_error_line(done)
    assert said in line and "LOCALHAND_HOME" in line, line
    if writes:  # what could be written before the disk filled up is kept
        shown = localhand("runs", "--json", env={**env, "NO_COLOR": "1"}, cwd=tmp_path)
        [run] = json.loads(shown.stdout)
        assert run["task_id"]


def test_a_read_only_store_still_lists_a_dead_run_as_interrupted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    from localhand.run.task import Task
    from localhand.store import Store

    store = Store(tmp_path / "runs.db")
    store.begin_run(Task("x", workspace=tmp_path), model="m")

    def read_only(*args: object) -> None:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr("localhand.store.db.is_alive", lambda *args: False)
    monkeypatch.setattr("localhand.store.db.write_transaction", read_only)
    [run] = store.runs()
    assert run.status == "interrupted"

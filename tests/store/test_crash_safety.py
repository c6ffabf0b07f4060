"""A runner killed with SIGKILL mid-task: nothing it started survives, no file is left half
written, and the run store stays consistent with the run shown as ``interrupted``.

Each test starts a real runner process (an Agent with a scripted model and the real tools),
waits until it is in the middle of something, and kills it with SIGKILL: no handler runs.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from process_helpers import running

RUNNER = textwrap.dedent(
    """
    import os, sys, time
    from localhand import Agent
    from localhand.events import EventBus
    from localhand.models.scripted import ScriptedModel, call
    from localhand.store import Store
    from localhand.safety.box.sandbox import Sandbox, use_sandbox
    from localhand.tools import default_tools, fsio

    workspace, db, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    sandbox = Sandbox(mode=os.environ.get("TEST_SANDBOX", "workspace-write"))
    if mode == "write":
        real_fill = fsio._fill

        def slow_fill(fd, data, mode):  # the new content is written; the kill lands before
            real_fill(fd, data, mode)  # the file is named
            open(os.path.join(workspace, "..", "writing"), "w").close()
            time.sleep(60)

        fsio._fill = slow_fill
        step = call("write_file", path="keep.txt", content="NEW " * 100_000)
    else:
        step = call("run_command", command=sys.argv[4], timeout_ms=120_000)
    bus = EventBus()
    bus.subscribe(Store(db).recorder())
    tools = default_tools(workspace, policy="never")
    with use_sandbox(sandbox):
        Agent(ScriptedModel([step, "done"]), workspace, tools=tools, bus=bus).run("task")
    """
)

DETACHING = (
    "sleep 300.4242 > /dev/null 2>&1 & "
    "setsid sleep 301.4242 > /dev/null 2>&1 & "
    "nohup sleep 302.4242 > /dev/null 2>&1 & "
    "(setsid sh -c 'sleep 303.4242 & wait' > /dev/null 2>&1 &); "
    "sleep 0.3; touch started; sleep 120.4242"
)
"""Leaves processes every way a command can (background, setsid, nohup, double fork); each is
found by its unique arguments, since inside a sandbox the command sees PIDs of its own."""


def command_pids(token: str = ".4242") -> list[int]:
    """The processes, seen from outside, whose command line holds ``token``."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as handle:
                argv = handle.read().split(b"\0")
        except OSError:
            continue
        is_ours = argv[0] in (b"sleep", b"/usr/bin/sleep") and any(
            token.encode() in a for a in argv
        )
        if is_ours and running(int(name)):
            found.append(int(name))
    return found


def start(
    tmp_path: Path, mode: str, command: str = "", sandbox: str = "workspace-write"
) -> tuple[subprocess.Popen[bytes], Path]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "keep.txt").write_bytes(b"original \x00\xff bytes\n")
    db = tmp_path / "runs.db"
    proc = subprocess.Popen(
        [sys.executable, "-c", RUNNER, str(workspace), str(db), mode, command],
        cwd=tmp_path,
        env={**os.environ, "TEST_SANDBOX": sandbox},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    return proc, db


def wait_for(path: Path, proc: subprocess.Popen[bytes], timeout: float = 20) -> None:
    """Until ``path`` exists (and, for a .pid file, has the pid in it)."""
    end = time.monotonic() + timeout
    while not (path.exists() and (path.suffix != ".pid" or path.read_text().strip())):
        if proc.poll() is not None:
            assert proc.stderr is not None
            raise AssertionError(f"the runner ended early: {proc.stderr.read().decode()}")
        if time.monotonic() > end:
            raise AssertionError(f"{path.name} never appeared")
        time.sleep(0.02)


def sigkill(proc: subprocess.Popen[bytes]) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL


def assert_store_consistent(db: Path) -> None:
    with sqlite3.connect(db) as raw:
        assert raw.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    from localhand.store import Store

    with Store(db) as store:
        runs = store.runs()
        assert [run.status for run in runs] == ["interrupted"]
        events = store.events(runs[0].id)
        assert [event.data["type"] for event in events][:2] == ["task_started", "model_request"]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("sandbox", ["workspace-write", "off"])
def test_killed_mid_command_leaves_no_process_behind(tmp_path: Path, sandbox: str) -> None:
    assert command_pids() == [], "a process of an earlier test is still running"
    proc, db = start(tmp_path, "command", DETACHING, sandbox)
    wait_for(tmp_path / "ws" / "started", proc)
    # "started" is touched before the last sleep is started, and the backgrounded ones may
    # still be forking: wait until all five run (on a loaded machine that takes a while).
    deadline = time.monotonic() + 10
    while len(command_pids()) < 5 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(command_pids()) == 5
    sigkill(proc)
    deadline = time.monotonic() + 5
    while command_pids() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert command_pids() == []
    assert_store_consistent(db)


@pytest.mark.timeout(60)
def test_killed_mid_write_leaves_the_original_and_no_half_written_file(tmp_path: Path) -> None:
    proc, db = start(tmp_path, "write")
    wait_for(tmp_path / "writing", proc)
    sigkill(proc)
    workspace = tmp_path / "ws"
    assert (workspace / "keep.txt").read_bytes() == b"original \x00\xff bytes\n"
    assert sorted(os.listdir(workspace)) == ["keep.txt"]
    assert_store_consistent(db)

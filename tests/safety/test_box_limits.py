"""Limits on one sandboxed command: /tmp size, processes and memory, each stated when hit (in
the tool result the model reads and as a warning event), and said once where the machine
cannot enforce them; and what the Result says of the sandbox, unsandboxed included."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from localhand.config.settings import Settings, load_settings
from localhand.errors import ConfigError
from localhand.events import EventBus
from localhand.models.scripted import ScriptedModel, call
from localhand.run.task import Task
from localhand.safety.box import limits as box_limits
from localhand.safety.box.limits import BoxLimits, configured
from localhand.safety.box.sandbox import Sandbox, available, run_sandbox
from localhand.safety.box.table import parse_count, parse_size
from localhand.session.api import run_task
from localhand.tools import ShellTool, Workspace, run_shell

needs_bwrap = pytest.mark.skipif(available() is not None, reason=f"no sandbox: {available()}")
needs_groups = pytest.mark.skipif(
    box_limits.control_groups() is None, reason="no control group localhand may make here"
)
MIB = 1024**2


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@needs_bwrap
def test_a_full_tmp_stops_at_its_size_and_the_model_is_told(workspace: Path) -> None:
    warnings: list[str] = []
    limits = BoxLimits(tmp_size=4 * MIB, memory=None, processes=None)
    with run_sandbox("workspace-write", network=True, read=(), warn=warnings.append, limits=limits):
        result = ShellTool(Workspace(workspace), policy="never").run_command(
            "head -c 20000000 /dev/zero > /tmp/big; stat -c %s /tmp/big"
        )
    size = int(result.content.split("\n")[1])
    assert size <= 4 * MIB
    assert "[Sandbox: /tmp, /var/tmp, /dev/shm and $HOME hold at most 4 MiB" in result.content
    assert len(warnings) == 1 and "hold at most 4 MiB" in warnings[0]


@needs_bwrap
@needs_groups
def test_a_fork_bomb_is_bounded_and_said_in_the_events(workspace: Path) -> None:
    warnings: list[str] = []
    limits = BoxLimits(tmp_size=None, memory=None, processes=32)
    with run_sandbox("workspace-write", network=True, read=(), warn=warnings.append, limits=limits):
        done = run_shell(
            "for i in $(seq 100); do sleep 1 & done; wait; echo finished", workspace, timeout_s=30
        )
    assert "[Sandbox limit: it tried to run more than 32 processes" in done.output
    assert any("more than 32 processes" in w for w in warnings), warnings


@needs_bwrap
@needs_groups
def test_a_real_fork_bomb_stops_at_the_process_limit(workspace: Path) -> None:
    limits = BoxLimits(tmp_size=None, memory=None, processes=40)
    bomb = "bomb() { bomb | bomb & }; bomb; sleep 3; echo the shell lived"
    with run_sandbox("workspace-write", network=True, read=(), warn=lambda _: None, limits=limits):
        done = run_shell(bomb, workspace, timeout_s=20)
        after = run_shell("echo next", workspace)
    assert "[Sandbox limit: it tried to run more than 40 processes" in done.output
    assert not done.timed_out and after.output == "next\n"


@needs_bwrap
@needs_groups
def test_memory_over_the_limit_is_killed_and_said(workspace: Path) -> None:
    warnings: list[str] = []
    limits = BoxLimits(tmp_size=None, memory=64 * MIB, processes=None)
    grab = "python3 -c 'x = bytearray(400 * 1024 * 1024); print(\"GOT\", len(x))'"
    with run_sandbox("workspace-write", network=True, read=(), warn=warnings.append, limits=limits):
        done = run_shell(grab, workspace, timeout_s=30)
    assert "GOT" not in done.output
    assert "[Sandbox limit: it ran out of memory: the sandbox allows 64 MiB" in done.output
    assert any("ran out of memory" in w for w in warnings)


@needs_bwrap
@needs_groups
def test_within_the_limits_nothing_is_said(workspace: Path) -> None:
    warnings: list[str] = []
    with run_sandbox("workspace-write", network=True, read=(), warn=warnings.append):
        done = run_shell("python3 -c 'print(sum(range(1000)))'", workspace)
    assert done.exit_code == 0 and "499500" in done.output
    assert "Sandbox limit" not in done.output and warnings == []


def test_a_limit_the_machine_cannot_enforce_is_said_once(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if available() is not None:
        pytest.skip("the fallback warning covers an unsandboxed machine")
    monkeypatch.setattr(box_limits, "control_groups", lambda: None)
    warnings: list[str] = []
    with run_sandbox("workspace-write", network=True, read=(), warn=warnings.append) as box:
        run_shell("true", workspace)
        run_shell("true", workspace)
        report = box.report()
    assert len(warnings) == 1
    assert "the processes limit" in warnings[0] and "Not enforced" in warnings[0]
    assert report["enforced"] is True
    assert "the processes limit" in report["limits"]["unenforced"][0]
    assert report["limits"]["held"]["memory"].startswith("RLIMIT_AS")
    assert "processes" not in report["limits"]["held"]


@needs_bwrap
def test_without_control_groups_memory_is_still_bounded_per_process(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """RLIMIT_AS binds root too: an allocation past the limit fails in the process."""
    monkeypatch.setattr(box_limits, "control_groups", lambda: None)
    limits = BoxLimits(tmp_size=None, memory=256 * MIB, processes=None)
    grab = "python3 -c 'x = bytearray(600 * 1024 * 1024); print(\"GOT\", len(x))'"
    with run_sandbox("workspace-write", network=True, read=(), warn=lambda _: None, limits=limits):
        done = run_shell(grab, workspace, timeout_s=30)
        small = run_shell("python3 -c 'print(len(bytearray(8 * 1024 * 1024)))'", workspace)
    assert "GOT" not in done.output and "MemoryError" in done.output
    assert small.exit_code == 0 and "8388608" in small.output, small.output


def test_without_bubblewrap_the_report_says_commands_ran_unsandboxed(
    workspace: Path, no_bwrap: None
) -> None:
    warnings: list[str] = []
    with run_sandbox("workspace-write", network=True, read=(), warn=warnings.append) as box:
        done = run_shell("echo ran", workspace)
        report = box.report()
    assert done.exit_code == 0
    assert report["enforced"] is False and report["mode"] == "workspace-write"
    assert "No permissions to creating new namespace" in report["why"]
    assert len(warnings) == 1 and "NOT be sandboxed" in warnings[0]
    off = Sandbox(mode="off").report()
    assert off["enforced"] is False and "off" in off["why"]


def test_sizes_and_counts_are_read_as_people_write_them() -> None:
    assert parse_size("512M", "x") == 512 * MIB
    assert parse_size("2G", "x") == 2 * 1024**3
    assert parse_size("1.5GiB", "x") == int(1.5 * 1024**3)
    assert parse_size(4096, "x") == 4096
    assert parse_size("off", "x") is None
    assert parse_count(1024, "x") == 1024 and parse_count("off", "x") is None
    for bad in ("lots", "-1G", True):
        with pytest.raises(ValueError, match="must be a size"):
            parse_size(bad, "x")
    with pytest.raises(ValueError, match="positive number"):
        parse_count(-3, "x")


def test_sandbox_limits_come_from_localhand_toml(tmp_path: Path) -> None:
    config = tmp_path / "conf" / "localhand.toml"
    config.parent.mkdir()
    config.write_text('[sandbox]\ntmp_size = "256M"\nmemory = "off"\nprocesses = 200\n')
    settings = load_settings(env={"LOCALHAND_CONFIG": str(config)})
    limits = configured(settings.sandbox_limits)
    assert limits == BoxLimits(tmp_size=256 * MIB, memory=None, processes=200)
    # A new file: a named file that changed since its first use is refused (localhand trust)
    bad = tmp_path / "conf" / "bad.toml"
    bad.write_text('[sandbox]\nmemory = "plenty"\n')
    with pytest.raises(
        ConfigError, match=r'\[sandbox\] memory in .* must be a size such as "512M"'
    ):
        load_settings(env={"LOCALHAND_CONFIG": str(bad)})


def run_one(workspace: Path) -> Any:
    task = Task("Say hi", workspace=workspace, agentic=True)
    model = ScriptedModel([call("run_command", command="echo hi > hi.txt"), "done"])
    return run_task(task, Settings(), bus=EventBus(), model=model)


def test_a_runs_result_says_commands_ran_unsandboxed(workspace: Path, no_bwrap: None) -> None:
    result = run_one(workspace)
    assert (workspace / "hi.txt").read_text() == "hi\n"
    said = result.to_dict()["sandbox"]
    assert said["enforced"] is False and "No permissions" in said["why"]
    assert said["mode"] == "workspace-write"


@needs_bwrap
def test_a_runs_result_says_commands_ran_in_the_sandbox(workspace: Path) -> None:
    said = run_one(workspace).to_dict()["sandbox"]
    assert said["enforced"] is True and said["why"] is None
    assert said["limits"]["processes"] == BoxLimits().processes
    kind = box_limits.control_groups()
    held = said["limits"]["held"]
    if kind is not None:  # which limits held, and by what
        assert set(held) >= {"memory", "processes"}
        assert all(
            kind.replace("v", "cgroup v") in how or kind in how
            for how in (held["memory"], held["processes"])
        ), held
        assert said["limits"]["unenforced"] == [] or "tmp" in said["limits"]["unenforced"][0]


def test_cgroup_v2_groups_are_made_limited_and_read_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The v2 path on a directory laid out as cgroup2's root (this machine may have v1): the
    group is made with its limits, the command joins it first, hits are read from its
    events, and it is removed afterwards."""
    root = tmp_path / "cgroup"
    root.mkdir()
    (root / "cgroup.controllers").write_text("cpu memory pids\n")
    (root / "cgroup.subtree_control").write_text("cpu memory pids\n")
    monkeypatch.setattr(box_limits, "_V1", str(root))
    box_limits.control_groups.cache_clear()
    try:
        assert box_limits.control_groups() == "v2"
        limits = BoxLimits(tmp_size=None, memory=64 * MIB, processes=50)
        with box_limits.limited(limits) as limiter:
            group = Path(limiter.groups["unified"])
            assert (group / "memory.max").read_text() == str(64 * MIB)
            assert (group / "pids.max").read_text() == "50"
            prefix = limiter.prefix()
            assert prefix[:2] == ["/bin/sh", "-c"] and str(group / "cgroup.procs") in prefix
            (group / "memory.events").write_text("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n")
            (group / "pids.events").write_text("max 7\n")
            hits = limiter.hits(-9)
            for name in os.listdir(group):
                os.unlink(group / name)  # the kernel's files vanish with the group
        assert len(hits) == 2 and "out of memory" in hits[0] and "50 processes" in hits[1]
        assert not group.exists()
    finally:
        box_limits.control_groups.cache_clear()


def test_cgroup_v2_a_group_delegated_above_this_process_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """systemd delegates a user's subtree: the root is not the user's, but the nearest
    group at or above this process's own with both controllers open to its children is."""
    root = tmp_path / "cgroup"
    own = root / "user.slice" / "user@1000.service" / "app.slice" / "term.scope"
    own.mkdir(parents=True)
    (root / "cgroup.controllers").write_text("cpu memory pids\n")
    (root / "cgroup.subtree_control").write_text("cpu\n")  # not open to children here
    (own.parent.parent / "cgroup.subtree_control").write_text("memory pids\n")
    (own.parent / "cgroup.subtree_control").write_text("memory\n")  # pids missing
    monkeypatch.setattr(box_limits, "_V1", str(root))
    monkeypatch.setattr(box_limits, "_own_group", lambda controller: str(own)[len(str(root)) :])
    assert box_limits._v2_dir() == str(own.parent.parent)
    (own.parent.parent / "cgroup.subtree_control").write_text("memory\n")
    assert box_limits._v2_dir() is None


@needs_bwrap
def test_a_control_group_that_cannot_be_made_is_said_and_memory_still_bounded(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The machine offers control groups but making one fails (a read-only cgroupfs, a
    delegation that forbids it): the Result does not claim the cgroup's limits held."""

    def refused(limiter: Any, name: str) -> None:
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(box_limits, "control_groups", lambda: "v1")
    monkeypatch.setattr(box_limits, "_make_v1", refused)
    monkeypatch.setattr(box_limits, "_failed", [])
    limits = BoxLimits(tmp_size=None, memory=256 * MIB, processes=64)
    grab = "python3 -c 'x = bytearray(600 * 1024 * 1024); print(\"GOT\", len(x))'"
    with run_sandbox(
        "workspace-write", network=True, read=(), warn=lambda _: None, limits=limits
    ) as box:
        done = run_shell(grab, workspace, timeout_s=30)
        report = box.report()["limits"]
    assert "GOT" not in done.output and "MemoryError" in done.output
    assert report["held"] == {"memory": "RLIMIT_AS, each process on its own"}
    assert "Read-only file system" in report["unenforced"][0]


def test_a_group_still_busy_when_its_command_ends_is_removed_once_free(tmp_path: Path) -> None:
    # The last task of a control group may still be leaving when its command has ended: the
    # group is removed a moment later rather than left behind (thousands piled up on a CI host).
    import time

    group = tmp_path / "localhand-group"
    group.mkdir()
    (group / "a task").write_text("")  # rmdir fails while it is there, as on a busy group
    box_limits._remove([str(group)])
    assert group.exists()
    (group / "a task").unlink()
    deadline = time.monotonic() + 5
    while group.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not group.exists()

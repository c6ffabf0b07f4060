"""Stop stops a command in flight: run_shell, under a run's cancel switch in force, ends the
command and everything it started as soon as the switch is flipped (in this process, or by a
request file from another), not when the command is done."""

from __future__ import annotations

import time
from pathlib import Path

from localhand.cancel import Cancellation, request_cancel
from localhand.tools import ShellTool, Workspace, run_shell
from stop_helpers import SLEEPERS, once_started, survivors


def test_a_flipped_switch_ends_the_command_and_all_it_started(tmp_path: Path) -> None:
    switch = Cancellation()
    once_started(tmp_path, switch.cancel)
    started = time.monotonic()
    with switch.in_force():
        done = run_shell(SLEEPERS, tmp_path, timeout_s=30)
    assert time.monotonic() - started < 3, "not the minute the command asked for"
    assert done.cancelled and not done.timed_out and done.exit_code != 0
    assert survivors(tmp_path) == []


def test_a_request_file_from_another_process_ends_the_command(tmp_path: Path) -> None:
    switch = Cancellation()
    switch.watch(tmp_path / "data" / "cancel" / "run1")
    once_started(tmp_path, lambda: request_cancel("run1", tmp_path / "data"))
    started = time.monotonic()
    with switch.in_force():
        done = run_shell(SLEEPERS, tmp_path, timeout_s=30)
    assert time.monotonic() - started < 3
    assert done.cancelled and "another process" in switch.reason
    assert survivors(tmp_path) == []


def test_a_switch_not_in_force_leaves_commands_alone(tmp_path: Path) -> None:
    switch = Cancellation()
    switch.cancel()  # another run's switch, or this one's outside its tool calls (its checks)
    done = run_shell("echo done", tmp_path)
    assert (done.cancelled, done.output, done.exit_code) == (False, "done\n", 0)


def test_the_tool_result_says_the_command_was_stopped(tmp_path: Path) -> None:
    switch = Cancellation()
    once_started(tmp_path, lambda: switch.cancel("stopped by a test"))
    with switch.in_force():
        result = ShellTool(Workspace(tmp_path)).run_command(SLEEPERS)
    assert not result.ok
    assert "Stopped: the run was cancelled" in result.content
    assert "Exit code" not in result.content and "Killed by" not in result.content
    assert survivors(tmp_path) == []

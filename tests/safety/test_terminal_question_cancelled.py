"""A question waiting on the terminal ends when its run is cancelled (the dashboard's Stop, from
this process or through a cancel request file from another): the approver gives it up within a
poll, refuses, and says why, so the run can end ``cancelled`` instead of hanging on a read."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from localhand.cancel import Cancellation, request_cancel
from localhand.safety.approval.approver import CANCEL_POLL_S, TerminalApprover
from localhand.safety.risk.classify import Risk
from pty_helpers import shown_on

pytestmark = pytest.mark.timeout(30)
DANGEROUS = Risk("dangerous", ("deletes every file in the workspace",))


def test_a_cancel_while_the_question_waits_gives_it_up(terminal: tuple[int, str]) -> None:
    person, name = terminal
    switch = Cancellation()
    approver = TerminalApprover(name, interactive=True, cancellation=switch)
    threading.Timer(0.5, switch.cancel).start()
    started = time.monotonic()
    assert approver.approve("rm -rf ./*", DANGEROUS) is False
    assert time.monotonic() - started < 0.5 + CANCEL_POLL_S + 1
    assert approver.decided_by == "cancelled"
    assert "the run was cancelled" in approver.refusal
    screen = shown_on(person).decode()
    assert "Run it? [y/a/N]" in screen and "(the run was cancelled: nothing was run)" in screen


def test_a_cancel_request_from_another_process_ends_the_wait_too(
    terminal: tuple[int, str], tmp_path: Path
) -> None:
    _, name = terminal
    switch = Cancellation()
    switch.watch(tmp_path / "cancel" / "abc123")
    approver = TerminalApprover(name, interactive=True, cancellation=switch)
    threading.Timer(0.5, lambda: request_cancel("abc123", tmp_path)).start()
    assert approver.approve("rm -rf ./*", DANGEROUS) is False
    assert approver.decided_by == "cancelled"


def test_with_a_switch_an_answer_and_the_timeout_still_work(terminal: tuple[int, str]) -> None:
    person, name = terminal
    approver = TerminalApprover(name, interactive=True, cancellation=Cancellation())
    threading.Timer(0.5, lambda: os.write(person, b"y\n")).start()
    assert approver.approve("rm -rf ./*", DANGEROUS) is True, "typed after a few polls"
    waiting = TerminalApprover(name, interactive=True, timeout_s=0.5, cancellation=Cancellation())
    assert waiting.approve("rm -rf ./*", DANGEROUS) is False
    assert waiting.refusal == "the user did not answer in time"

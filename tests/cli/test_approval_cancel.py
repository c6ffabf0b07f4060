"""``localhand run`` waiting at its terminal's approval prompt, in a real pseudo-terminal, is
ended from outside: a cancel request from another process (what the dashboard's Stop writes for
a run it did not start) or Ctrl-C. The run ends ``cancelled`` with exit code 130, recorded so,
and the command it asked about never ran."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from localhand.cancel import request_cancel
from localhand.store import Store
from localhand.testing import FakeOllama
from pty_helpers import Terminal

pytestmark = pytest.mark.timeout(120)
TOUCH = {"function": {"name": "run_command", "arguments": {"command": "touch made.txt"}}}
SCRIPT = [{"content": "", "tool_calls": [TOUCH]}, "Done."]


def asking(tmp_path: Path, server: FakeOllama) -> Terminal:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    args = ("run", "make a file", "-w", str(workspace), "--model", "qwen3:8b", "--agentic")
    flags = ("--approve", "always", "--sandbox", "off")
    terminal = Terminal(*args, *flags, cwd=tmp_path, env={"OLLAMA_HOST": server.url})
    terminal.expect("Run it? [y/a/N]")
    return terminal


def test_a_cancel_request_ends_the_prompts_wait_and_the_run(tmp_path: Path) -> None:
    with FakeOllama(SCRIPT, models={"qwen3:8b": {}}) as server:
        terminal = asking(tmp_path, server)
        try:
            (run,) = Store(os.environ["LOCALHAND_DB"]).runs(limit=1)
            request_cancel(run.id)  # nobody types: the Stop alone must end the wait
            code = terminal.wait(30)
            screen = terminal.plain()
        finally:
            terminal.close()
        asked = len(server.chat_requests)
    assert code == 130, screen
    assert "(the run was cancelled: nothing was run)" in screen
    assert not (tmp_path / "ws" / "made.txt").exists(), "the command was not run"
    assert asked == 1, "no model turn after the cancel"
    recorded = Store(os.environ["LOCALHAND_DB"]).run(run.id)
    assert recorded.termination_reason == "cancelled"
    store = Store(os.environ["LOCALHAND_DB"])
    decided = [e.data for e in store.events(run.id, types=("approval_decided",))]
    assert [(e["approved"], e["by"]) for e in decided] == [(False, "cancelled")]


@pytest.mark.usefixtures("sigint_reaches_children")
def test_ctrl_c_at_the_prompt_ends_the_run_with_130(tmp_path: Path) -> None:
    with FakeOllama(SCRIPT, models={"qwen3:8b": {}}) as server:
        terminal = asking(tmp_path, server)
        try:
            terminal.type("\x03")  # the terminal sends SIGINT to the run
            code = terminal.wait(30)
            screen = terminal.plain()
        finally:
            terminal.close()
    assert code == 130, screen
    assert not (tmp_path / "ws" / "made.txt").exists()
    (run,) = Store(os.environ["LOCALHAND_DB"]).runs(limit=1)
    assert run.termination_reason == "cancelled"

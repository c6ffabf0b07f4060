"""A calm terminal (#30): ``localhand run`` driven in a real pseudo-terminal 60 columns wide,
and the same run through pipes.

In the terminal: each step is one line that fits (cut with an ellipsis), a running line
counts the seconds of a command and of a reply, ``--show-thinking`` shows the thinking
folded, and the approval keys work: ``y`` once, ``a`` for the rest of the run for the same
prefix (shown before it is chosen), ``n`` with a reason the model reads. In a pipe: no
escape sequences, no redrawn line, nothing extra; ``-v`` adds the sampling line, ``-q``
leaves only the answer and the status.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
from rich.cells import cell_len

from cli_helpers import localhand
from localhand.testing import FakeOllama
from pty_helpers import Terminal, screen_lines

pytestmark = pytest.mark.timeout(120)
WIDTH = 60
LONG_ECHO = "echo " + " ".join(f"word{n}" for n in range(30))
ANSWER = "All done: the tree is as it was, " + "and this answer goes on for a while. " * 4


def run_command(command: str, thinking: str = "") -> dict[str, Any]:
    call = {"function": {"name": "run_command", "arguments": {"command": command}}}
    return {"content": "", "thinking": thinking, "tool_calls": [call]}


def slow(item: Any, seconds: float) -> Any:
    """A reply that takes ``seconds`` to come."""

    def reply(body: dict[str, Any]) -> Any:
        time.sleep(seconds)
        return item

    return reply


SCRIPT = [
    run_command("sleep 2 && echo slept", thinking="First I look.\nThen I act."),
    run_command(LONG_ECHO),
    run_command("echo again"),
    run_command("touch made.txt"),
    slow(ANSWER, 2.5),
]


def tool_results(server: FakeOllama) -> list[str]:
    messages = server.chat_requests[-1].body["messages"]
    return [m["content"] for m in messages if m["role"] == "tool"]


def test_in_a_terminal_lines_fit_time_runs_and_the_approval_keys_work(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with FakeOllama(SCRIPT, models={"qwen3:8b": {}}) as server:
        args = ("run", "tidy up", "-w", str(workspace), "--model", "qwen3:8b", "--agentic")
        flags = ("--approve", "always", "--sandbox", "off", "--show-thinking")
        terminal = Terminal(*args, *flags, cwd=tmp_path, env={"OLLAMA_HOST": server.url})
        try:
            # y: this once. The prompt names what `a` would cover before it is chosen.
            seen = terminal.expect("Run it? [y/a/N]")
            flat = " ".join(terminal.plain().split())  # the question is wrapped at words
            assert "a: yes, and to every `sleep`, `echo` command for the rest of this run" in flat
            terminal.type("y\n")
            # While it runs, a line redrawn in place counts its seconds.
            seen = terminal.expect("running sleep 2 && echo slept: 1 s", after=seen)
            # a: yes, and to every `echo` for the rest of the run.
            seen = terminal.expect("Run it? [y/a/N]", after=seen)
            terminal.type("a\n")
            # `echo again` is not asked about; `touch` is: n, with a reason.
            seen = terminal.expect("touch made.txt", after=seen)
            seen = terminal.expect("Run it? [y/a/N]", after=seen)
            terminal.type("n please keep the tree clean\n")
            terminal.expect("waiting for the model's reply: 1 s", after=seen)
            code = terminal.wait()
        finally:
            terminal.close()
        results = tool_results(server)
    plain = terminal.plain()
    assert code == 3, plain  # unverified: no check ran
    assert not (workspace / "made.txt").exists()
    assert 'the user refused it and said: "please keep the tree clean"' in results[-1]
    assert results[2].startswith("again")  # run without a question
    assert plain.count("Run it?") == 3
    assert "✓ approved (terminal, 'a' to echo) echo again" in plain
    # --show-thinking: the thinking, dimmed and folded under its own line.
    assert "  thinking:\r\n    ┆ First I look.\r\n    ┆ Then I act." in plain
    # No line wider than the terminal but the command in the approval question, shown whole:
    # a person approves what runs, not a cut or a rewrap of it.
    lines = screen_lines(plain)
    too_wide = [line for line in lines if cell_len(line) > WIDTH]
    assert too_wide == ["    " + LONG_ECHO]
    (long_step,) = [line for line in lines if "run_command echo word0" in line]
    # The command and its output each cut to their share, the duration kept at the end.
    assert re.search(r"run_command echo word0 \S*… → word0 ", long_step), long_step
    assert "word29" not in long_step
    assert re.search(r"… \(\d+ ms\)$", long_step), long_step
    assert " ".join(ANSWER.split()) in " ".join(plain.split())  # on stdout, wrapped at words
    # Without -v, no profile or sampling line.
    assert "sampling" not in plain


def piped(*flags: str, tmp_path: Path) -> tuple[int, str, str]:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    script = [run_command("echo hello", thinking="Hmm."), "Said hello."]
    with FakeOllama(script, models={"qwen3:8b": {}}) as server:
        args = ("run", "say hello", "-w", str(workspace), "--model", "qwen3:8b", "--agentic")
        done = localhand(*args, "--sandbox", "off", *flags, host=server.url, cwd=tmp_path)
    return done.returncode, done.stdout, done.stderr


def test_in_a_pipe_the_output_stays_plain(tmp_path: Path) -> None:
    code, out, err = piped("--show-thinking", tmp_path=tmp_path)
    assert code == 3, err
    assert out == "Said hello.\n"
    assert "\x1b" not in err + out and "\r" not in err + out  # no colour, nothing redrawn
    assert "waiting for" not in err and "running" not in err  # nothing extra
    assert "┆ Hmm." in err  # asked for: the thinking, folded
    assert "run_command echo hello" in err and "sampling" not in err


def test_verbose_adds_the_sampling_line_and_quiet_leaves_answer_and_status(
    tmp_path: Path,
) -> None:
    _, _, loud = piped("-v", tmp_path=tmp_path)
    assert "sampling" in loud and "profile qwen3" in loud
    assert "┆" not in loud  # thinking stays hidden unless asked for
    code, out, quiet = piped("-q", tmp_path=tmp_path)
    assert code == 3 and out == "Said hello.\n"
    assert quiet.splitlines()[0].startswith("■ unverified (final_answer)")
    assert len(quiet.splitlines()) == 1, quiet
    done = localhand("run", "x", "-q", "-v", cwd=tmp_path)
    assert done.returncode == 2 and "not allowed with argument" in done.stderr


def test_plan_takes_quiet_too(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        "goal: Count and fail\nsteps:\n  - id: count\n    description: Say one\n"
        "    command: echo one\n  - id: fail\n    description: Read a file that is not there\n"
        "    command: cat missing.txt\n"
    )
    loud = localhand("plan", str(plan), "-w", str(tmp_path), "--sandbox", "off", cwd=tmp_path)
    quiet = localhand("plan", str(plan), "-w", str(tmp_path), "--sandbox", "off", "-q",
                      cwd=tmp_path)  # fmt: skip
    assert loud.returncode == quiet.returncode == 1
    assert "count" in loud.stderr and len(loud.stderr.splitlines()) > 1
    assert quiet.stderr.splitlines() == [quiet.stderr.strip()]
    assert quiet.stderr.startswith("■ fail (step_failed) · 1/2 steps done")
    assert quiet.stdout == loud.stdout  # the plan's summary, on stdout either way

"""Approval: which commands need a yes, who gives it, and what the model reads when refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from localhand.errors import ConfigError, ToolError
from localhand.safety.approval.approver import (
    BaseApprover,
    DenyAll,
    TerminalApprover,
    check_policy,
    escape,
    needs_approval,
    prompt,
    refusal,
)
from localhand.safety.risk.classify import Risk
from localhand.tools import FileTools, ShellTool, Workspace, default_tools
from localhand.types import ToolCall
from pty_helpers import shown_on

SAFE, MODERATE = Risk("safe"), Risk("moderate", ("runs make, which can change files",))
DANGEROUS = Risk("dangerous", ("deletes / and everything under it",))


class Recorder(BaseApprover):
    """An approver that answers ``answer`` and remembers what it was asked."""

    def __init__(self, answer: bool) -> None:
        self.answer = answer
        self.asked: list[tuple[str, Risk]] = []
        self.refusal = "the user refused it"

    def approve(self, command: str, risk: Risk) -> bool:
        self.asked.append((command, risk))
        return self.answer


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ("never", (False, False, False)),
        ("dangerous", (False, False, True)),
        ("always", (True, True, True)),
    ],
)
def test_needs_approval(policy: str, expected: tuple[bool, bool, bool]) -> None:
    got = tuple(needs_approval(risk, policy) for risk in (SAFE, MODERATE, DANGEROUS))  # type: ignore[arg-type]
    assert got == expected


def test_an_unknown_policy_is_a_config_error_that_lists_the_valid_ones() -> None:
    with pytest.raises(ConfigError) as caught:
        check_policy("sometimes")
    assert str(caught.value) == (
        "unknown approval policy 'sometimes'; use --approve never, dangerous or always"
    )
    with pytest.raises(ConfigError):
        ShellTool(Workspace(os.getcwd()), policy="yes")  # type: ignore[arg-type]


def test_deny_all_refuses_and_says_why() -> None:
    assert DenyAll().approve("rm -rf /", DANGEROUS) is False
    assert refusal("command", DANGEROUS, "dangerous", DenyAll()) == (
        "Refused: this command needs the user's approval because it deletes / and everything "
        "under it (risk: dangerous, approval policy: 'dangerous'), and nobody can approve it in "
        "this non-interactive run. Nothing was run. Do not retry it or an equivalent; do the task "
        "another way that stays inside the workspace, or finish and tell the user the exact "
        "command to run themselves."
    )


def test_escape_shows_control_and_invisible_characters() -> None:
    assert escape("ls\x1b[2K\rrm -rf ~\u202e") == "ls\\x1b[2K\\x0drm -rf ~\\u202e"
    assert escape("tab\tand ünïcode") == "tab\tand ünïcode"


NO = "\n  n: no; words after it go to the model as your reason (n use a temp dir)"


def test_prompt_lists_the_command_and_reasons() -> None:
    assert prompt("rm -rf /\necho done", DANGEROUS) == (
        "\nlocalhand wants to run a dangerous command:\n    rm -rf /\n    echo done\n"
        f"  - it deletes / and everything under it\n  y: yes, this once{NO}\nRun it? [y/N] "
    )
    assert prompt("rm -rf / && echo done", DANGEROUS, ("rm", "echo")) == (
        "\nlocalhand wants to run a dangerous command:\n    rm -rf / && echo done\n"
        "  - it deletes / and everything under it\n  y: yes, this once\n"
        "  a: yes, and to every `rm`, `echo` command for the rest of this run"
        f"{NO}\nRun it? [y/a/N] "
    )


def test_a_call_that_is_not_a_command_is_asked_about_as_what_it_is() -> None:
    risk = Risk("dangerous", ("calls a tool of the MCP server 'gh'",), action="call an MCP tool")
    assert prompt("MCP server 'gh', tool 'create_issue'", risk) == (
        "\nlocalhand wants to call an MCP tool (dangerous):\n    MCP server 'gh', tool "
        f"'create_issue'\n  - it calls a tool of the MCP server 'gh'\n  y: yes, this once{NO}"
        "\nAllow it? [y/N] "
    )


def _ask(terminal: tuple[int, str], typed: bytes, **kwargs: object) -> tuple[bool, str, str]:
    master, name = terminal
    if typed:
        os.write(master, typed)
    approver = TerminalApprover(name, interactive=True, **kwargs)  # type: ignore[arg-type]
    answer = approver.approve("rm -rf \x1b[8m/", DANGEROUS)
    shown = shown_on(master)  # the echo of what was typed, then the prompt
    return answer, shown.decode(), approver.refusal


@pytest.mark.parametrize(
    ("typed", "expected"), [(b"y\n", True), (b"YES\n", True), (b"n\n", False), (b"\n", False)]
)
def test_terminal_approver_asks_on_the_terminal(
    terminal: tuple[int, str], typed: bytes, expected: bool
) -> None:
    answer, shown, _ = _ask(terminal, typed)
    assert answer is expected
    assert "rm -rf \\x1b[8m/" in shown  # the escape sequence cannot hide the path
    assert "a: yes, and to every `rm` command for the rest of this run" in shown
    assert "Run it? [y/a/N]" in shown


def test_terminal_approver_gives_up_after_its_timeout(terminal: tuple[int, str]) -> None:
    answer, _, why = _ask(terminal, b"", timeout_s=0.2)
    assert answer is False
    assert why == "the user did not answer in time"


def test_terminal_approver_refuses_without_a_terminal() -> None:
    approver = TerminalApprover("/nonexistent/tty", interactive=False)
    assert approver.approve("rm -rf /", DANGEROUS) is False
    assert approver.refusal == "there is no terminal to ask the user on"
    broken = TerminalApprover("/nonexistent/tty", interactive=True)
    assert broken.approve("rm -rf /", DANGEROUS) is False
    assert broken.refusal == "the terminal /nonexistent/tty could not be opened to ask the user"


def test_run_command_refuses_a_dangerous_command_without_running_it(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("precious")
    tool = ShellTool(Workspace(tmp_path))
    result = tool.run_command("rm -rf . && echo gone")
    assert not result.ok
    assert result.content.startswith(
        "Refused: this command needs the user's approval because it deletes the whole "
        "workspace (risk: dangerous, approval policy: 'dangerous'), and nobody can approve"
    )
    assert (tmp_path / "keep.txt").read_text() == "precious"


def test_an_approved_command_runs_and_the_approver_sees_the_risk(tmp_path: Path) -> None:
    approver = Recorder(True)
    tool = ShellTool(Workspace(tmp_path), approver=approver)
    result = tool.run_command("echo hi > .git-not; git push --force 2>/dev/null; echo ran")
    assert result.content.endswith("ran\n[Exit code 0.]")
    command, risk = approver.asked[0]
    assert risk == Risk("dangerous", ("force-pushes, which can overwrite history on the remote",))
    assert command.startswith("echo hi")


def test_a_refusing_user_is_quoted_in_the_result(tmp_path: Path) -> None:
    tool = ShellTool(Workspace(tmp_path), approver=Recorder(False))
    result = tool.run_command("sudo true")
    assert "because it runs as root (sudo)" in result.content
    assert "and the user refused it. Nothing was run." in result.content


def test_policy_never_asks_nobody_and_always_asks_for_everything(tmp_path: Path) -> None:
    never = Recorder(False)
    assert (
        ShellTool(Workspace(tmp_path), policy="never", approver=never)
        .run_command("echo x > /dev/null; git push -f origin nowhere 2>/dev/null; echo ran")
        .content.startswith("ran")
    )
    assert never.asked == []
    always = Recorder(False)
    result = ShellTool(Workspace(tmp_path), policy="always", approver=always).run_command("ls")
    assert always.asked == [("ls", Risk("safe"))]
    assert result.content.startswith(
        "Refused: this command needs the user's approval because the approval policy 'always' "
        "asks for every command (risk: safe, approval policy: 'always'), and the user refused it."
    )


def test_writes_into_git_internals_need_approval(tmp_path: Path) -> None:
    (tmp_path / ".git" / "hooks").mkdir(parents=True)
    denied = FileTools(Workspace(tmp_path))
    with pytest.raises(ToolError) as caught:
        denied.write_file(".git/hooks/pre-commit", "#!/bin/sh\ncurl x | sh\n")
    assert str(caught.value).startswith(
        "Refused: this write needs the user's approval because it writes .git/hooks/pre-commit "
        "inside .git, where hooks and config run code (risk: dangerous"
    )
    assert "Nothing was written." in str(caught.value)
    assert not (tmp_path / ".git" / "hooks" / "pre-commit").exists()
    approver = Recorder(True)
    allowed = FileTools(Workspace(tmp_path), approver=approver)
    assert allowed.write_file(".git/hooks/pre-commit", "x") == (
        "Created '.git/hooks/pre-commit': 1 bytes, 1 line."
    )
    assert approver.asked[0][0] == "write_file .git/hooks/pre-commit"
    (tmp_path / ".git" / "config").write_text("[core]\n")
    with pytest.raises(ToolError, match="Refused: this write"):
        denied.edit_file(".git/config", "[core]", "[core]\n\thooksPath = /tmp/x")
    assert (tmp_path / ".git" / "config").read_text() == "[core]\n"


def test_default_tools_wires_the_policy_and_the_approver(tmp_path: Path) -> None:
    with default_tools(tmp_path) as registry:
        refused = registry.execute(ToolCall("run_command", {"command": "sudo true"}))
    assert not refused.ok and refused.content.startswith("Refused:")
    approver = Recorder(True)
    with default_tools(tmp_path, policy="always", approver=approver) as registry:
        done = registry.execute(ToolCall("run_command", {"command": "echo ok"}))
    assert done.content == "ok\n[Exit code 0.]"
    assert approver.asked == [("echo ok", Risk("safe"))]


def test_a_reason_typed_with_a_no_is_kept_in_the_decision_event(
    terminal: tuple[int, str],
) -> None:
    from localhand.events import EventBus, EventLog
    from localhand.safety.approval.announce import AnnouncedApprover

    master, name = terminal
    os.write(master, b"n use a \x1b[2Jtemp dir\n")
    log, bus = EventLog(), EventBus()
    bus.subscribe(log)
    announced = AnnouncedApprover(TerminalApprover(name, interactive=True), bus, "t1")
    assert announced.approve("rm -rf ./*", DANGEROUS) is False
    (decided,) = log.of_type("approval_decided")
    assert decided.to_dict()["reason"] == "use a \\x1b[2Jtemp dir"
    assert announced.refusal == 'the user refused it and said: "use a \\x1b[2Jtemp dir"'

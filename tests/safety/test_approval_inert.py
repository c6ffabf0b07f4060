"""What the person approves is what runs: every text in an approval prompt (command, reasons,
action) reaches the terminal inert. Checked on the bytes a real pseudo-terminal receives."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from localhand.cli.plan_view import PlanView
from localhand.safety.approval.approver import TerminalApprover, prompt
from localhand.safety.risk.classify import Risk
from pty_helpers import shown_on

ATTACKS = [
    "\x1b[2K\x1b[1A\x1b[2Kpip install -r requirements.txt",  # CSI: erase and redraw
    "\x1b]0;title\x07\x1b]52;c;Y3VybCBldmls\x07",  # OSC: window title, clipboard
    "\x9b2K\x9d0;x\x9c",  # C1 CSI/OSC/ST
    "rm -rf ../victim\r" + " " * 40 + "\rpip install ok",  # carriage returns that redraw
    "rm -rf ../victim" + "\b" * 16 + "echo safe_cmd!!",  # backspaces
    "echo \u202egnp.exe\u202c \u2066hidden\u2069 \u200bzero\u200b",  # bidi and zero-width
    "line\u2028separator\u0085next",
]
FORBIDDEN = [b"\x1b", b"\x07", b"\x08", "\x9b".encode(), "\x9d".encode(), "\x9c".encode(),
             "\u202e".encode(), "\u2066".encode(), "\u200b".encode(), "\u2028".encode(),
             "\x85".encode()]  # fmt: skip


def test_escape_sequences_in_command_reasons_and_action_reach_the_terminal_inert(
    terminal: tuple[int, str],
) -> None:
    person, device = terminal
    for attack in ATTACKS:
        risk = Risk("dangerous", (f"deletes {attack}", attack), action=f"call {attack}")
        os.write(person, b"n\n")
        approver = TerminalApprover(device, interactive=True, timeout_s=5)
        assert approver.approve(f"rm -rf ../victim; {attack}", risk) is False
        written = shown_on(person)
        # The terminal echoes the answer and turns each \n into \r\n (onlcr): any other \r
        # would come from the prompt.
        assert b"\r" not in written.replace(b"\r\n", b"")
        for forbidden in FORBIDDEN:
            assert forbidden not in written, (attack, forbidden, written)
        assert b"rm -rf ../victim" in written


def test_the_prompt_shows_escapes_as_text_and_keeps_the_command_lines() -> None:
    risk = Risk("dangerous", ("runs \x1b[31mred\x1b[0m",))
    text = prompt("echo one\n\techo two", risk)
    assert "\\x1b[31mred\\x1b[0m" in text
    assert "    echo one\n    \techo two" in text  # newlines split lines; a tab stays a tab


def test_a_drafted_plan_shown_for_approval_is_inert() -> None:
    import io

    from rich.console import Console

    sink = io.StringIO()
    view = PlanView(Console(file=sink, force_terminal=False, width=200))
    view.show_plan(
        {
            "goal": "tidy \x1b]52;c;eA==\x07",
            "steps": [
                {
                    "id": "s1",
                    "description": "clean\r" + "ok" * 5,
                    "command": "rm -rf ../victim\x1b[1A\x1b[2Kls",
                    "risk": "dangerous",
                    "status": "pending",
                }
            ],
        }
    )
    out = sink.getvalue()
    assert "\x1b" not in out and "\r" not in out and "\x07" not in out
    assert "rm -rf ../victim\\x1b[1A\\x1b[2Kls" in out


APP_JS = (
    Path(__file__).resolve().parents[2] / "src" / "localhand" / "dashboard" / "static" / "app.js"
)


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node to run the page's script")
def test_the_dashboards_approval_row_shows_the_same_texts_inert() -> None:
    """The page's own ``inert`` (taken from app.js as shipped), run by node on the attacks."""
    source = APP_JS.read_text()
    start = source.index("const INVISIBLE")
    end = source.index("\n}\n", source.index("function inert")) + 3
    script = source[start:end] + (
        "\nconst attacks = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
        "\nprocess.stdout.write(JSON.stringify(attacks.map((a) => inert(a, true))));"
    )
    done = subprocess.run(
        ["node", "-e", script], input=json.dumps(ATTACKS), capture_output=True, text=True,
        timeout=30, check=True,
    )  # fmt: skip
    shown = json.loads(done.stdout)
    for attack, text in zip(ATTACKS, shown, strict=True):
        for forbidden in FORBIDDEN:
            assert forbidden.decode() not in text, (attack, text)
        assert "\r" not in text
    assert shown[0].startswith("\\x1b[2K")
    assert "\\u202egnp.exe" in shown[5]

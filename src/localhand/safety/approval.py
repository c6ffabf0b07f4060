"""Which commands need a person's yes, and who gives it.

    needs_approval(classify(command, workspace), "dangerous")   # the default policy
    ShellTool(workspace, policy="dangerous", approver=TerminalApprover())

Policies (``--approve``): ``never`` runs everything, ``dangerous`` (the default) asks before a
dangerous command, ``always`` asks before every command. An approver answers; ``DenyAll``
(non-interactive runs) always says no, and the refusal becomes a tool result that tells the
model why and what to do instead, so a run without a person never hangs waiting for one.
"""

from __future__ import annotations

import os
import select
import sys
import threading
from typing import TYPE_CHECKING, Literal, Protocol, get_args

from localhand.errors import ConfigError

if TYPE_CHECKING:
    from localhand.safety.risk import Risk

ApprovalPolicy = Literal["never", "dangerous", "always"]
POLICIES: tuple[ApprovalPolicy, ...] = get_args(ApprovalPolicy)


def check_policy(value: str) -> ApprovalPolicy:
    """``value`` as a policy, or a ``ConfigError`` that lists the valid ones."""
    if value not in POLICIES:
        raise ConfigError(
            f"unknown approval policy {value!r}; use --approve never, dangerous or always"
        )
    return value


def needs_approval(risk: Risk, policy: ApprovalPolicy) -> bool:
    """True when ``policy`` wants a person to approve a command of this ``risk``."""
    check_policy(policy)
    return policy == "always" or (policy == "dangerous" and risk.level == "dangerous")


class Approver(Protocol):
    """Decides whether a command that needs approval may run, and says who decided and why
    not. ``BaseApprover`` gives the defaults."""

    @property
    def refusal(self) -> str:
        """Why the last request was refused, for the tool result the model reads."""
        ...

    @property
    def decided_by(self) -> str:
        """Who answered, for the ``approval_decided`` event (``terminal``, ``page``, ...)."""
        ...

    def approve(self, command: str, risk: Risk) -> bool: ...


class BaseApprover:
    """An approver's defaults: subclass it and write ``approve``."""

    refusal = "it was not approved"
    decided_by = "approver"

    def approve(self, command: str, risk: Risk) -> bool:
        raise NotImplementedError


class PlainApprover(Protocol):
    """What a caller's own approver must have at least: ``approve``."""

    def approve(self, command: str, risk: Risk) -> bool: ...


class _Declared(BaseApprover):
    """A plain approver (only ``approve``) with ``BaseApprover``'s defaults around it."""

    def __init__(self, inner: PlainApprover) -> None:
        self.inner = inner

    def approve(self, command: str, risk: Risk) -> bool:
        return self.inner.approve(command, risk)


def declared_approver(approver: Approver | PlainApprover) -> Approver:
    """``approver`` with every member the run uses: itself when it declares them (a
    ``BaseApprover``), else wrapped with the defaults, as ``models.base.declared`` does for
    models. A library user's class with only ``approve`` keeps working."""
    if isinstance(approver, BaseApprover):
        return approver
    return _Declared(approver)


class DenyAll(BaseApprover):
    """For runs without a person: refuses everything, so nothing waits for an answer."""

    refusal = "nobody can approve it in this non-interactive run"
    decided_by = "nobody"
    """Who answered, for the ``approval_decided`` event."""

    def approve(self, command: str, risk: Risk) -> bool:
        return False


class TerminalApprover(BaseApprover):
    """Asks on the terminal (``/dev/tty``) when standard input is one; refuses otherwise.

    The prompt goes to the terminal itself, not stdout, so ``--json`` output stays clean.
    Every text in it is shown inert (``prompt``): a model cannot hide part of a command from
    the person approving it, nor redraw the question, with terminal escape sequences.

    Args:
        tty: the terminal device to ask on.
        interactive: whether a person is there; default: ``sys.stdin.isatty()``.
        timeout_s: give up (refuse) after this long without an answer; None waits.
    """

    def __init__(
        self,
        tty: str = "/dev/tty",
        *,
        interactive: bool | None = None,
        timeout_s: float | None = None,
    ) -> None:
        self.tty = tty
        self.interactive = sys.stdin.isatty() if interactive is None else interactive
        self.timeout_s = timeout_s
        self.refusal = "the user refused it"
        self.decided_by = "terminal" if self.interactive else "nobody"  # nobody asked without one
        self._lock = threading.Lock()  # one question at a time

    def approve(self, command: str, risk: Risk) -> bool:
        if not self.interactive:
            self.refusal = "there is no terminal to ask the user on"
            return False
        with self._lock:
            try:
                fd = os.open(self.tty, os.O_RDWR | os.O_NOCTTY)
            except OSError:
                self.refusal = f"the terminal {self.tty} could not be opened to ask the user"
                return False
            try:
                os.write(fd, prompt(command, risk).encode("utf-8", "replace"))
                answer = self._read_line(fd)
            finally:
                os.close(fd)
        if answer is None:
            self.refusal = "the user did not answer in time"
            return False
        self.refusal = "the user refused it"
        return answer.strip().lower() in ("y", "yes")

    def _read_line(self, fd: int) -> str | None:
        data = b""
        while not data.endswith(b"\n"):
            if self.timeout_s is not None:
                ready, _, _ = select.select([fd], [], [], self.timeout_s)
                if not ready:
                    return None
            chunk = os.read(fd, 1024)
            if not chunk:
                break
            data += chunk
        return data.decode("utf-8", "replace")


def prompt(command: str, risk: Risk) -> str:
    """The question a person sees: the command, its risk and the reasons, every part of them
    inert. The reasons and the action quote the command (paths, MCP tool names and
    arguments), so they are escaped as it is: an escape sequence in a reason could otherwise
    redraw the screen to show another command than the one that runs. A reason is one line:
    its newlines are shown as ``\x0a`` too."""
    shown = "\n".join("    " + escape(line) for line in command.split("\n"))
    reasons = "".join(f"\n  - it {escape(reason)}" for reason in risk.reasons)
    if risk.action:
        asked = f"\nlocalhand wants to {escape(risk.action)} ({escape(risk.level)}):"
        return f"{asked}\n{shown}{reasons}\nAllow it? [y/N] "
    level = escape(risk.level)
    return f"\nlocalhand wants to run a {level} command:\n{shown}{reasons}\nRun it? [y/N] "


def escape(text: str) -> str:
    """``text`` with control and invisible formatting characters written as ``\\x1b``...:
    C0 and C1 controls (ESC, CSI, OSC, carriage return, backspace), bidi overrides and
    isolates, zero-width and other format characters, and line or paragraph separators."""
    if text.isprintable():
        return text
    out = []
    for char in text:
        if char.isprintable() or char == "\t":  # a tab moves the cursor on, never back
            out.append(char)
        elif ord(char) < 0x100:
            out.append(f"\\x{ord(char):02x}")
        else:
            out.append(f"\\u{ord(char):04x}")
    return "".join(out)


def refusal(what: str, risk: Risk, policy: ApprovalPolicy, approver: Approver) -> str:
    """The tool result for a refused ``what`` (``"command"``, ``"write"``): why, and what
    the model can do instead."""
    why = approver.refusal
    if risk.reasons:
        because = f"because it {'; '.join(risk.reasons)}"
    else:
        because = f"because the approval policy '{policy}' asks for every {what}"
    nothing = "Nothing was written." if what == "write" else "Nothing was run."
    return (
        f"Refused: this {what} needs the user's approval {because} (risk: {risk.level}, "
        f"approval policy: '{policy}'), and {why}. {nothing} Do not retry it or an "
        "equivalent; do the task another way that stays inside the workspace, or finish and "
        "tell the user the exact command to run themselves."
    )


__all__ = [
    "POLICIES",
    "ApprovalPolicy",
    "Approver",
    "BaseApprover",
    "DenyAll",
    "TerminalApprover",
    "check_policy",
    "needs_approval",
    "prompt",
    "refusal",
]

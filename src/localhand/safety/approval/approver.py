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
import re
import select
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Literal, Protocol, get_args

from localhand.errors import ConfigError

if TYPE_CHECKING:
    from localhand.cancel import Cancellation
    from localhand.safety.risk.classify import Risk

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

    @property
    def reason(self) -> str:
        """The words the person gave with their last no (``""``: none), for the
        ``approval_decided`` event; ``refusal`` quotes them to the model."""
        ...

    def approve(self, command: str, risk: Risk) -> bool: ...


class BaseApprover:
    """An approver's defaults: subclass it and write ``approve``."""

    refusal = "it was not approved"
    decided_by = "approver"
    reason = ""

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

    The answer is a line: ``y`` runs it this once; ``a`` runs it and, for the rest of this
    run, every command with the same prefix (program and subcommand, ``git commit``: shown in
    the question before it is chosen, see ``approval_scope``); ``n`` (or Enter, or anything
    else) refuses, and words after it (``n use a temporary directory``) are a reason the model
    reads in the tool result.

    The prompt goes to the terminal itself, not stdout, so ``--json`` output stays clean.
    Every text in it is shown inert (``prompt``): a model cannot hide part of a command from
    the person approving it, nor redraw the question, with terminal escape sequences.

    Args:
        tty: the terminal device to ask on.
        interactive: whether a person is there; default: ``sys.stdin.isatty()``.
        timeout_s: give up (refuse) after this long without an answer; None waits.
        pause: what stops a live display (the elapsed-time line) while the question is
            asked: a context manager factory, e.g. ``TerminalView.paused``.
        cancellation: the run's cancel switch: a question still waiting when the run is
            cancelled (the dashboard's Stop, from this process or another) is given up, so
            the run can end ``cancelled`` instead of waiting for a line nobody types.
    """

    def __init__(
        self,
        tty: str = "/dev/tty",
        *,
        interactive: bool | None = None,
        timeout_s: float | None = None,
        pause: Callable[[], AbstractContextManager[object]] | None = None,
        cancellation: Cancellation | None = None,
    ) -> None:
        self.tty = tty
        self.interactive = sys.stdin.isatty() if interactive is None else interactive
        self.timeout_s = timeout_s
        self.pause = pause
        self.cancellation = cancellation
        self.refusal = "the user refused it"
        self.decided_by = "terminal" if self.interactive else "nobody"  # nobody asked without one
        self.allowed: set[str] = set()
        """The prefixes the person answered ``a`` to, in this run."""
        self._lock = threading.Lock()  # one question at a time

    def approve(self, command: str, risk: Risk) -> bool:
        from localhand.safety.approval.scope import scope_of  # the shell parser: when asked

        if not self.interactive:
            self.refusal = "there is no terminal to ask the user on"
            return False
        with self._lock:
            scope = scope_of(command, risk)
            if scope is not None and self.allowed.issuperset(scope):
                self.decided_by = f"terminal, 'a' to {', '.join(scope)}"  # no question
                return True
            self.decided_by, self.reason = "terminal", ""
            answer = self._ask(lambda width: prompt(command, risk, scope, width))
        if answer is None:
            return False
        choice, reason = read_answer(answer)
        if choice == "always" and scope is not None:
            with self._lock:
                self.allowed.update(scope)
            self.decided_by = f"terminal, 'a' to {', '.join(scope)}"
        self.refusal, self.reason = refused_saying("the user refused it", reason), reason
        return choice != "no"

    def _ask(self, question: Callable[[int | None], str]) -> str | None:
        """The line typed after ``question`` (made for the terminal's width); None
        (``refusal`` says why) when none came."""
        with self.pause() if self.pause is not None else nullcontext():
            try:
                fd = os.open(self.tty, os.O_RDWR | os.O_NOCTTY)
            except OSError:
                self.refusal = f"the terminal {self.tty} could not be opened to ask the user"
                return None
            try:
                os.write(fd, question(_columns(fd)).encode("utf-8", "replace"))
                return self._read_line(fd)
            finally:
                os.close(fd)

    def _read_line(self, fd: int) -> str | None:
        """The line typed on ``fd``; None when the time ran out or the run was cancelled
        (``refusal`` says which). With a cancel switch the wait looks at it every
        ``CANCEL_POLL_S``: a blocking read would hold the run until somebody typed."""
        data = b""
        deadline = None if self.timeout_s is None else time.monotonic() + self.timeout_s
        while not data.endswith(b"\n"):
            if self.cancellation is not None and self.cancellation.requested:
                os.write(fd, b"\n(the run was cancelled: nothing was run)\n")
                self.refusal = "the run was cancelled while the question waited for an answer"
                self.decided_by = "cancelled"
                return None
            wait = _wait_s(deadline, self.cancellation is not None)
            if wait is not None:
                ready, _, _ = select.select([fd], [], [], wait)
                if not ready:
                    if deadline is not None and time.monotonic() >= deadline:
                        self.refusal = "the user did not answer in time"
                        return None
                    continue
            chunk = os.read(fd, 1024)
            if not chunk:
                break
            data += chunk
        return data.decode("utf-8", "replace")


CANCEL_POLL_S = 0.2
"""How often a waiting question looks at the run's cancel switch."""


def _wait_s(deadline: float | None, polling: bool) -> float | None:
    """How long the next wait for input may last: until the deadline, at most
    ``CANCEL_POLL_S`` when a cancel switch is watched; None: block."""
    left = None if deadline is None else max(0.0, deadline - time.monotonic())
    if polling:
        return CANCEL_POLL_S if left is None else min(left, CANCEL_POLL_S)
    return left


def _columns(fd: int) -> int | None:
    """The terminal's width, or None when it has none (a pseudo-terminal never sized)."""
    try:
        columns = os.get_terminal_size(fd).columns
    except OSError:
        return None
    return columns if columns >= 20 else None


Choice = Literal["yes", "always", "no"]
MAX_REASON = 500
"""Characters of a refusal's reason passed on to the model."""


def read_answer(line: str) -> tuple[Choice, str]:
    """What a typed answer means: ``y``/``yes`` once, ``a``/``always`` for the rest of the
    run, anything else no; the words after ``n``/``no`` (or an answer that is none of these)
    are the reason, one line, inert, cut at ``MAX_REASON`` characters."""
    text = " ".join(line.split())
    head, _, rest = text.partition(" ")
    word = head.lower().rstrip(",.:;!")
    if not rest and word in ("y", "yes"):
        return "yes", ""
    if not rest and word in ("a", "always", "all"):
        return "always", ""
    if word in ("n", "no"):
        text = rest.lstrip(",.:;-! ")
    return "no", clean_reason(text)


def clean_reason(text: str) -> str:
    """A person's reason for a no as the model and the timeline get it: one line, inert,
    cut at ``MAX_REASON`` characters."""
    return escape(" ".join(text.split())[:MAX_REASON])


def refused_saying(refusal: str, reason: str) -> str:
    """``refusal`` with the person's ``reason`` quoted after it, when they gave one."""
    return f'{refusal} and said: "{reason}"' if reason else refusal


def prompt(
    command: str, risk: Risk, scope: tuple[str, ...] | None = None, width: int | None = None
) -> str:
    """The question a person sees: the command, its risk and the reasons, every part of them
    inert, then the answers (``a`` names the prefixes it would cover: ``scope``, None where
    it is not offered). The reasons and the action quote the command (paths, MCP tool names
    and arguments), so they are escaped as it is: an escape sequence in a reason could
    otherwise redraw the screen to show another command than the one that runs. A reason is
    one line: its newlines are shown as ``\x0a`` too. ``width``: the terminal's, which the
    prose lines are wrapped to at words; the command's lines never are, nor cut: a wrap
    there could not be told from a newline in it, and what is approved is what runs."""
    shown = "\n".join("    " + escape(line) for line in command.split("\n"))
    reasons = "".join(_wrapped(f"  - it {escape(reason)}", width) for reason in risk.reasons)
    keys = "y/a/N" if scope else "y/N"
    what = "call" if risk.action else "command"
    answers = "".join(_wrapped(line, width) for line in _answers(scope, what))
    if risk.action:
        asked = _wrapped(f"localhand wants to {escape(risk.action)} ({escape(risk.level)}):", width)
        return f"{asked}\n{shown}{reasons}{answers}\nAllow it? [{keys}] "
    asked = _wrapped(f"localhand wants to run a {escape(risk.level)} command:", width)
    return f"{asked}\n{shown}{reasons}{answers}\nRun it? [{keys}] "


def _wrapped(line: str, width: int | None) -> str:
    """``line``, after a newline, wrapped at words to ``width`` (continuation indented)."""
    if not width or len(line) <= width:
        return "\n" + line
    head = re.match(r" *(?:- it |[yan]: )?", line)  # continued under its text, deeper than
    indent = " " * max(len(head.group()) if head else 0, 5)  # a command line's 4 spaces
    parts = textwrap.wrap(line, width, subsequent_indent=indent, break_on_hyphens=False)
    return "".join("\n" + part for part in parts)


def _answers(scope: tuple[str, ...] | None, what: str) -> list[str]:
    lines = ["  y: yes, this once"]
    if scope:
        named = ", ".join(f"`{escape(prefix)}`" for prefix in scope)
        if what == "call":
            lines.append(f"  a: yes, and to every call for the rest of this run ({named})")
        else:
            lines.append(f"  a: yes, and to every {named} {what} for the rest of this run")
    lines.append("  n: no; words after it go to the model as your reason (n use a temp dir)")
    return lines


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


def headline(text: str, width: int = 120) -> str:
    """``text`` (a command) as a one-line title, for a door that shows one line where the
    terminal shows them all: its first line ``escape``d, cut at ``width`` characters, then
    "(N more lines)". The whole text goes only where it is shown raw and whole."""
    first, *rest = text.rstrip("\n").split("\n")
    shown = escape(first[:width]) + ("…" if len(first) > width else "")
    if not rest:
        return shown
    return f"{shown} ({len(rest)} more line{'s' if len(rest) > 1 else ''})"


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
    "clean_reason",
    "needs_approval",
    "prompt",
    "read_answer",
    "refusal",
    "refused_saying",
]

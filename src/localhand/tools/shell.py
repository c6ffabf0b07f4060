"""Running shell commands: run_shell for anyone (verification, plans) and the run_command tool.

Each command runs in the sandbox in force (see ``localhand.safety.box.sandbox``: the workspace
writable, the rest of the system read-only, $HOME and other processes out of sight), under a
supervisor (see ``supervise``) in its own session, with stdin ``/dev/null``, an allow-list of
its environment (``box_environment``) and pagers and prompts off, because nobody is there to
type. When it returns, times out or its run is stopped (``localhand.cancel``), everything it
started is ended, including processes that detached with ``setsid`` or ``nohup``, and also
if localhand itself is killed. Output is captured while it is read, keeping only its head and
tail, so a command that prints without end cannot exhaust memory. ``run_command`` first asks
the risk classifier and the approval policy whether the command may run at all.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from localhand.cancel import current
from localhand.errors import ToolError
from localhand.safety.approval.approver import (
    ApprovalPolicy,
    Approver,
    DenyAll,
    check_policy,
    needs_approval,
)
from localhand.safety.approval.approver import refusal as refusal_message
from localhand.safety.box.limits import NO_LIMITS, limited
from localhand.safety.box.sandbox import Sandbox, available, current_sandbox, limit_hit, refusal
from localhand.safety.box.supervise import Supervised, network_isolation
from localhand.safety.secrets.environment import QUIET_ENV, box_environment
from localhand.tools.deadline import mark_reached, remaining_s
from localhand.tools.headtail import HeadTail
from localhand.tools.jobs import Jobs
from localhand.tools.limits import ToolLimits
from localhand.tools.sandbox_notes import TMP_FULL, sandbox_note
from localhand.tools.workspace import Workspace
from localhand.types import ToolResult

if TYPE_CHECKING:
    from localhand.safety.risk.classify import Risk

__all__ = ["QUIET_ENV", "CommandOutput", "ShellTool", "run_shell"]


@dataclass(frozen=True, slots=True)
class CommandOutput:
    """What one command did."""

    output: str
    """stdout and stderr interleaved, cut in the middle when it was too long."""
    exit_code: int | None
    """The shell's exit status; negative for a signal (as subprocess reports it)."""
    timed_out: bool = False
    cancelled: bool = False
    """Ended because the run was cancelled (see ``localhand.cancel``) before it was done."""
    cut_bytes: int = 0
    """Bytes dropped from the middle of the output."""
    detached: bool = False
    """True when background processes still held the output after the shell exited."""
    duration_s: float = 0.0
    stopped: int = 0
    """Processes the command left running that were stopped when it returned."""
    errors: str = ""
    """With ``split_stderr``, its stderr (cut like ``output``, which then is stdout only)."""


def run_shell(
    command: str,
    cwd: str | os.PathLike[str],
    *,
    timeout_s: float = 60.0,
    head_bytes: int = 4_000,
    tail_bytes: int = 12_000,
    env: Mapping[str, str] | None = None,
    keep_env: Iterable[str] = (),
    isolate_network: bool = False,
    sandbox: Sandbox | None = None,
    approver: Approver | None = None,
    stdin: bytes | None = None,
    split_stderr: bool = False,
) -> CommandOutput:
    """Run ``command`` with bash (``/bin/sh`` if there is none) in ``cwd`` and capture it all.

    The environment is the box's allow-list of the current one (``box_environment``), with
    the variables the sandbox's ``env`` (``[sandbox] env``) and ``keep_env`` name, plus
    ``QUIET_ENV``, plus ``env``: the caller's own, which passes unfiltered. Never waits much
    longer than ``timeout_s``, nor once the run's cancel switch in force
    (``localhand.cancel.current``) is flipped: then ``cancelled``.
    Everything the command started is ended when it returns.

    It runs in ``sandbox`` (default: the one in force, see ``current_sandbox``) with ``cwd``
    as the only tree it may write. ``isolate_network`` runs it
    without network access. ``approver`` is asked about a host the network proxy does not
    allow (None: refused). ``stdin``: what the command reads (default: nothing, ``/dev/null``);
    ``split_stderr``: its stderr in ``errors``, apart from its stdout. Raises ``ToolError``,
    having run nothing, where the sandbox is required or network isolation asked for but the
    system cannot provide them.
    """
    started = time.monotonic()
    capture = HeadTail(head_bytes, tail_bytes)
    errors = HeadTail(head_bytes, tail_bytes)
    running = command_started(
        command, cwd, env=env, keep_env=keep_env, isolate_network=isolate_network,
        sandbox=sandbox, approver=approver, stdin=stdin, split_stderr=split_stderr,
    )  # fmt: skip
    with running as (supervised, hits):
        sinks: dict[int, Callable[[bytes], None]] = {supervised.output_fd: capture.add}
        if supervised.error_fd is not None:
            sinks[supervised.error_fd] = errors.add
        ended = supervised.pump(sinks, started + timeout_s, current())
    for note in hits:
        capture.add(note.encode())
    return CommandOutput(
        output=capture.text(),
        exit_code=supervised.exit_code,
        timed_out=ended == "timed out",
        cancelled=ended == "cancelled",
        cut_bytes=capture.cut,
        detached=ended == "detached",
        duration_s=time.monotonic() - started,
        stopped=supervised.stopped,
        errors=errors.text(),
    )


@contextmanager
def command_started(
    command: str, cwd: str | os.PathLike[str], *, env: Mapping[str, str] | None = None,
    keep_env: Iterable[str] = (), isolate_network: bool = False, sandbox: Sandbox | None = None,
    approver: Approver | None = None, stdin: bytes | None = None, split_stderr: bool = False,
) -> Iterator[tuple[Supervised, list[str]]]:  # fmt: skip
    """``command`` started under its supervisor as ``run_shell`` starts it (which see), and
    ended with everything it started when the block ends, also on KeyboardInterrupt; then the
    list holds what the supervisor said of a command that never ran and the sandbox limits it
    met, a line each for its output. A background job (``jobs``) holds the block open."""
    box = sandbox if sandbox is not None else current_sandbox()
    if isolate_network:
        box = box.without_network()
    argv = [shutil.which("bash") or "/bin/sh", "-c", command]
    wrap = _sandboxing(box, cwd)
    if wrap is None and not box.network:
        argv = [*_network_isolation(), *argv]
    environment = box_environment(env, named=(*box.env, *keep_env))
    if wrap is not None:
        environment = box.environment(environment, cwd)
    flags = box.offline_flags(cwd) if wrap is None else box.supervisor_flags(cwd)
    from localhand.safety.box import netbox  # the proxy's modules: loaded by the first command

    shared = netbox.run_network(box, os.path.realpath(cwd)) if wrap is not None else None

    notes: list[str] = []
    with (
        limited(box.limits if box.on else NO_LIMITS) as limiter,
        netbox.asking(box if wrap is not None else None, approver),
        _stdin_file(stdin) as reading,
    ):
        supervised = Supervised(
            argv, cwd, environment, limiter.wrapping(wrap), flags=flags, stdin=reading,
            split_stderr=split_stderr, keep_fds=shared.files if shared else (),
        )  # fmt: skip
        try:
            yield supervised, notes
        finally:  # nothing the command started may outlive this
            supervised.end()
            if supervised.exit_code is None and supervised.said:
                notes.append(f"\n{supervised.said}\n")
            for hit in limiter.hits(supervised.exit_code):
                limit_hit(f"A command met a sandbox limit: {hit}.")
                notes.append(f"\n[Sandbox limit: {hit}.]\n")


@contextmanager
def _stdin_file(data: bytes | None) -> Iterator[int | None]:
    """A file holding ``data`` for a command to read as its stdin (a file, not a pipe: nothing
    waits on a command that reads only part of it), or None for no input."""
    if data is None:
        yield None
        return
    with tempfile.TemporaryFile() as file:
        file.write(data)
        file.seek(0)
        yield file.fileno()


def _sandboxing(
    sandbox: Sandbox, cwd: str | os.PathLike[str]
) -> Callable[[list[str]], list[str]] | None:
    """What puts a command line into ``sandbox`` (bubblewrap), with ``cwd`` its workspace, or
    None where the command runs without one: the sandbox is off, or cannot be had here and is
    not required."""
    if sandbox.on and available() is None:
        return lambda argv: sandbox.wrap(argv, cwd, cwd)
    refused = refusal(sandbox)
    if refused is not None:
        raise ToolError(refused)
    return None


def _network_isolation() -> tuple[str, ...]:
    """The prefix that takes the network away without a sandbox (``unshare -n``)."""
    prefix = network_isolation()
    if prefix is None:
        raise ToolError(
            "network isolation is on, but this system does not allow it (unshare -n "
            "failed: it needs root or unprivileged user namespaces); nothing was run. "
            "Turn network isolation off to run commands here."
        )
    return prefix


class ShellTool:
    """The run_command tool for one workspace, gated by the risk classifier.

    Args:
        policy: which commands need approval (``never``, ``dangerous``, ``always``).
        approver: who approves; None refuses everything that needs approval (``DenyAll``).
        isolate_network: run commands without network access (where the system allows).
        checkpoint: called with a command the classifier calls dangerous, once it may run and
            before it does, to keep a copy of the workspace (see ``localhand.safety.
            checkpoint``); returns a line for the tool result. The sandbox stops a command
            from leaving the workspace, not from destroying what is in it.
    """

    def __init__(
        self,
        workspace: Workspace,
        limits: ToolLimits | None = None,
        *,
        policy: ApprovalPolicy = "dangerous",
        approver: Approver | None = None,
        isolate_network: bool = False,
        checkpoint: Callable[[str], str | None] | None = None,
        max_jobs: int = 4,
    ) -> None:
        self.workspace = workspace
        self.limits = limits or ToolLimits()
        self.jobs = Jobs(max_jobs, self.limits)
        self.policy = check_policy(policy)
        self.approver = approver if approver is not None else DenyAll()
        self.isolate_network = isolate_network
        self.checkpoint = checkpoint

    def functions(self) -> list[Callable[..., Any]]:
        """The tools as bound methods, ready for ``ToolRegistry``."""
        return [self.run_command, self.jobs.wait]

    def run_command(
        self, command: str, timeout_ms: int = 60000, background: bool = False
    ) -> ToolResult:
        """Run a bash command in the workspace; returns its output and exit code.

        Args:
            command: The command line.
            timeout_ms: Time limit in milliseconds.
            background: Run as a job; see wait.
        """
        if not command.strip():
            raise ToolError("command is empty")
        if "\0" in command:
            raise ToolError("command contains a NUL byte, which bash cannot take; remove it")
        from localhand.safety.risk.classify import classify  # loaded by the first command

        risk = classify(command, self.workspace.root)
        refused = (self.jobs.refusal() if background else None) or self.refusal(command, risk)
        if refused is not None:
            return ToolResult(refused, ok=False)
        kept = self._checkpoint(command, risk)
        limits = self.limits
        bounded = min(max(timeout_ms, limits.command_min_timeout_ms), limits.command_max_timeout_ms)
        timeout_s = bounded / 1000
        left = remaining_s()
        cut_by_deadline = left is not None and left < timeout_s
        if left is not None and cut_by_deadline:
            timeout_s = max(left, 0.1)
        if background:  # its lifetime cap: the time limit asked, not the wall clock's rest
            root, unbuffered = self.workspace.root, {"PYTHONUNBUFFERED": "1"}  # lines as printed
            running = command_started(command, root, env=unbuffered, approver=self.approver,
                                      isolate_network=self.isolate_network)  # fmt: skip
            return self.jobs.start(command, running, bounded / 1000)
        done = run_shell(
            command,
            self.workspace.root,
            timeout_s=timeout_s,
            head_bytes=limits.command_head_bytes,
            tail_bytes=limits.command_tail_bytes,
            isolate_network=self.isolate_network,
            approver=self.approver,
        )
        notes = []
        if bounded != timeout_ms:
            notes.append(f"[timeout_ms {timeout_ms} is out of range; used {bounded}.]")
        if done.cancelled:
            notes.append(
                "[Stopped: the run was cancelled; the command and its child processes were killed.]"
            )
        elif done.timed_out and cut_by_deadline:
            mark_reached()
            notes.append(
                f"[Stopped after {timeout_s:.3g} s, when the task's wall clock ran out; the "
                "command and its child processes were killed.]"
            )
        elif done.timed_out:
            notes.append(
                f"[Timed out after {bounded / 1000:g} s; the command and its child processes "
                "were killed.]"
            )
        elif done.detached or done.stopped:
            notes.append(
                "[The command left background processes running; they were stopped when it "
                "returned. To keep a server running while you use it, start it with "
                "run_command's background: true, then wait for it.]"
            )
        if not (done.timed_out or done.cancelled):
            notes.append(_status(done.exit_code))
        boundary = sandbox_note(done.output, current_sandbox(), self.isolate_network)
        if boundary is not None:  # also when a later part of the command went on to succeed
            notes.append(boundary)
            if boundary.startswith(TMP_FULL):  # a limit met: one of the run's events too
                limit_hit(f"A command met a sandbox limit: {boundary[1:-1]}")
        if not self.isolate_network and available() is None:
            from localhand.safety.box.netbox import refusal_notes  # off the first request's path

            notes += refusal_notes(current_sandbox())
        if kept:
            notes.append(kept)
        text = "\n".join([done.output.rstrip("\n") or "(no output)", *notes])
        return ToolResult(text, ok=done.exit_code == 0 and not (done.timed_out or done.cancelled))

    def _checkpoint(self, command: str, risk: Risk) -> str | None:
        """Keep a copy of the workspace before a dangerous command (the hook's line for the
        tool result), whatever the policy: --approve never drops the question, not the copy.
        None where the command cannot write the workspace (the read-only sandbox)."""
        if self.checkpoint is None or risk.level != "dangerous":
            return None
        box = current_sandbox()
        if box.on and box.mode == "read-only" and available() is None:
            return None
        return self.checkpoint(command)

    def refusal(self, command: str, risk: Risk) -> str | None:
        """Why ``command``, of ``risk``, may not run (the tool result), or None when it may."""
        if not needs_approval(risk, self.policy) or self.approver.approve(command, risk):
            return None
        return refusal_message("command", risk, self.policy, self.approver)

    def close(self) -> None:
        """Nothing to do: every command's processes end when it returns. Kept for the
        registry's ``close()``, which calls it on every tool owner."""


def _status(code: int | None) -> str:
    if code is None:
        return "[The command's exit status is unknown: its supervisor ended early.]"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"[Killed by {name}.]"
    return f"[Exit code {code}.]"

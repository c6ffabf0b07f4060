"""Starting a command under its supervisor (``_supervisor.py``) and making sure it ends.

Why a separate supervisor process rather than a process group: a command can leave its group
(``setsid``, ``nohup`` plus a double fork), and if localhand itself is killed with SIGKILL
nothing in it runs to clean up. The supervisor is a child subreaper, so whatever the command
starts stays below it, and it watches a pipe (the lifeline) that the kernel closes when
localhand dies, however it dies. As a last resort every command's environment carries a
unique marker that ``proc.kill_marked`` can find in ``/proc``.
"""

from __future__ import annotations

import functools
import importlib
import os
import secrets
import select
import selectors
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from localhand.cancel import POLL_S, Cancellation
from localhand.safety.box.proc import kill_group, kill_marked

SUPERVISOR = str(Path(__file__).with_name("_supervisor.py"))
SUPERVISOR_FILES = (SUPERVISOR, str(Path(__file__).with_name("_netrelay.py")))
"""What the sandbox must show of localhand for its supervisor to run: the supervisor and the
network relay it imports from beside it (shown on their own where their folder is hidden:
localhand's source under /tmp or $HOME)."""
MARKER_VAR = "LOCALHAND_COMMAND_ID"
"""Set in every command's environment to a value unique to that command."""
KILL_GRACE_S = 0.5
"""Between SIGTERM and SIGKILL for what a command leaves behind."""
DETACH_GRACE_S = 0.5
"""How long to keep reading after the shell exits while a background process holds the output."""

_BOOT = "import sys; sys.path.append({!r}); import _supervisor; _supervisor.main(sys.argv)"


@functools.cache
def supervisor_command() -> tuple[str, ...]:
    """How the supervisor is started: an interpreter that ignores the environment and the
    workspace (``-I -S``), importing the script so that its compiled form is reused, not
    compiled again for every command (1.5 ms). Importing it here once writes that compiled
    form where the package is writable (an installed wheel has it already); stdlib modules
    come first on the path, so no module of the package's folder can stand in for one."""
    importlib.import_module("localhand.safety.box._supervisor")
    importlib.import_module("localhand.safety.box._netrelay")  # what it imports for a relay
    boot = _BOOT.format(os.path.dirname(SUPERVISOR))
    return (sys.executable, "-I", "-S", "-c", boot)


class Supervised:
    """One command running under its supervisor."""

    def __init__(
        self,
        argv: Sequence[str],
        cwd: str | os.PathLike[str],
        env: Mapping[str, str],
        wrap: Callable[[list[str]], list[str]] | None = None,
        *,
        flags: Sequence[str] = (),
        stdin: int | None = None,
        split_stderr: bool = False,
        keep_fds: Sequence[int] = (),
    ):
        """Start ``argv`` under a supervisor; ``wrap`` (a sandbox) turns the supervisor's own
        command line into the one that runs it, so the supervisor lives inside the sandbox
        with the command and reports its real status. ``flags`` confine the command further
        (see ``Sandbox.offline_flags``). ``stdin``: a file descriptor the command reads
        (default ``/dev/null``); ``split_stderr``: its stderr on ``error_fd``, not with its
        stdout on ``output_fd``; ``keep_fds``: descriptors ``wrap`` passes on (``netbox``)."""
        self.marker = secrets.token_hex(8)
        status_r, status_w = os.pipe()
        life_r, self.lifeline = os.pipe()
        # The command writes to a pipe of its own that only it holds, so its end of file means
        # the command's processes are done even while a sandbox around the supervisor lives
        # on; what the supervisor or the sandbox say themselves goes to ``diagnostics``.
        self._output, output_w = os.pipe()
        self._errors, errors_w = os.pipe() if split_stderr else (-1, -1)
        kept = (status_w, life_r, output_w) + ((errors_w,) if split_stderr else ())
        if split_stderr:
            flags = (*flags, f"--stderr={errors_w}")
        self.diagnostics = tempfile.TemporaryFile()  # noqa: SIM115 (closed in _close_pipes)
        supervisor = [*supervisor_command(), str(status_w), str(life_r), str(output_w),
                      str(KILL_GRACE_S), *flags, "--", *argv]  # fmt: skip
        try:
            self.proc = subprocess.Popen(
                wrap(supervisor) if wrap is not None else supervisor,
                cwd=cwd,
                stdin=subprocess.DEVNULL if stdin is None else stdin,
                stdout=self.diagnostics,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env={**env, MARKER_VAR: self.marker},
                pass_fds=(*kept, *keep_fds),
            )  # fmt: skip
        except BaseException:
            for fd in (status_r, self.lifeline, self._output, self._errors):
                if fd >= 0:
                    os.close(fd)
            self.diagnostics.close()
            raise
        finally:
            for fd in kept:
                os.close(fd)
        os.set_blocking(status_r, False)
        self.status_fd: int | None = status_r
        self.exit_code: int | None = None
        self.exited = False
        """The command's own process has ended (or its supervisor is gone)."""
        self.stopped = 0
        """Processes the command left running that the supervisor had to stop."""
        self.said = ""
        """What the supervisor or the sandbox wrote themselves, once the command has ended:
        why a command never started, when its exit status is unknown."""

    @property
    def output_fd(self) -> int:
        return self._output

    @property
    def error_fd(self) -> int | None:
        """The command's stderr, when it was asked for apart (``split_stderr``)."""
        return self._errors if self._errors >= 0 else None

    def read_status(self, *, block: bool = False) -> None:
        """Take in the supervisor's lines: ``exit N`` / ``signal N`` when the command's own
        process ends, ``ended N`` when it had to stop N processes the command left behind."""
        if self.status_fd is None:
            return
        os.set_blocking(self.status_fd, block)
        try:
            data = os.read(self.status_fd, 4096)
        except BlockingIOError:
            return
        if not data:  # the supervisor is gone
            self.exited = True
            os.close(self.status_fd)
            self.status_fd = None
            return
        for line in data.decode("ascii", "replace").splitlines():
            kind, _, number = line.strip().partition(" ")
            if not number.isdigit():
                continue
            if kind in ("exit", "signal"):
                self.exited = True
                self.exit_code = int(number) if kind == "exit" else -int(number)
            elif kind == "ended":
                self.stopped += int(number)

    def pump(
        self,
        sinks: Mapping[int, Callable[[bytes], None]],
        deadline: float,
        stop: Cancellation | None,
    ) -> str | None:
        """Read the output (and stderr, when it comes apart) into ``sinks`` until the command
        has exited and its output ended (then None), or say why it is to be ended first:
        "timed out" (the ``time.monotonic()`` deadline passed), "cancelled" (``stop`` was
        flipped, which wakes this at once), "detached" (a short while after it exits with a
        background process still holding the pipe)."""
        exited_at: float | None = None
        open_fds = set(sinks)
        with selectors.DefaultSelector() as selector:
            for fd in sinks:
                selector.register(fd, selectors.EVENT_READ, "output")
            assert self.status_fd is not None
            selector.register(self.status_fd, selectors.EVENT_READ, "status")
            if stop is not None:
                selector.register(stop.wake_fd(), selectors.EVENT_READ, "cancel")
            while True:
                now = time.monotonic()
                if exited_at is not None and not open_fds:
                    return None
                if stop is not None and stop.requested:  # also a request file
                    return "cancelled"
                if now >= deadline:
                    return "timed out"
                if exited_at is not None and now - exited_at >= DETACH_GRACE_S:
                    return "detached"
                for key, _ in selector.select(min(deadline - now, POLL_S)):
                    if key.data == "output":
                        chunk = os.read(key.fd, 1 << 16)
                        if chunk:
                            sinks[key.fd](chunk)
                            continue
                        selector.unregister(key.fd)  # end of output; the exit status may follow
                        open_fds.discard(key.fd)
                        continue
                    if key.data == "cancel":
                        continue  # seen at the top of the loop
                    selector.unregister(key.fd)
                    self.read_status()
                    if self.status_fd is not None:  # more may come: keep listening
                        selector.register(self.status_fd, selectors.EVENT_READ, "status")
                    if self.exited and exited_at is None:
                        exited_at = time.monotonic()

    def end(self) -> None:
        """End the command and everything it started (the supervisor: SIGTERM, then SIGKILL
        after ``KILL_GRACE_S``), and wait until it is done."""
        os.close(self.lifeline)
        try:
            _wait(self.proc, KILL_GRACE_S + 5)
        except subprocess.TimeoutExpired:  # a stuck supervisor: end its group the hard way
            kill_group(self.proc.pid, proc=self.proc, grace_s=0.2)
        while self.status_fd is not None:
            self.read_status(block=True)
        if self.exit_code is None or self.proc.returncode != 0:
            kill_marked(MARKER_VAR, self.marker)  # the supervisor died early: find the rest
        self._close_pipes()

    def _close_pipes(self) -> None:
        if not self.diagnostics.closed:
            self.diagnostics.seek(0)
            self.said = self.diagnostics.read(4000).decode("utf-8", "replace").strip()
            self.diagnostics.close()
        if self._output >= 0:
            os.close(self._output)
            self._output = -1
        if self._errors >= 0:
            os.close(self._errors)
            self._errors = -1
        if self.status_fd is not None:
            os.close(self.status_fd)
            self.status_fd = None


def _wait(proc: subprocess.Popen[bytes], timeout: float) -> None:
    """Wait for ``proc`` to exit, waking the moment it does: ``Popen.wait(timeout)`` polls
    with growing sleeps, which cost about a millisecond of every command."""
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # not Linux 5.3+, or already reaped
        proc.wait(timeout=timeout)
        return
    try:
        if not select.select([pidfd], [], [], timeout)[0]:
            raise subprocess.TimeoutExpired(proc.args, timeout)
    finally:
        os.close(pidfd)
    proc.wait()


@functools.cache
def network_isolation() -> tuple[str, ...] | None:
    """The command prefix that runs a command without network access here, or None.

    ``unshare -n`` needs root; ``--map-current-user`` and ``-r`` use an unprivileged user
    namespace where the kernel allows one. The loopback interface stays down.
    """
    unshare = shutil.which("unshare")
    if unshare is None:
        return None
    for options in (("-n",), ("--map-current-user", "-n"), ("-r", "-n")):
        try:
            probe = subprocess.run(
                [unshare, *options, "true"], capture_output=True, timeout=5, check=False
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        if probe.returncode == 0:
            return (unshare, *options)
    return None

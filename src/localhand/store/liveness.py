"""Is the process that wrote a run still alive? That is how a killed run is told apart.

A run records its pid, the host and a token naming that process's start time (Linux's
``/proc/PID/stat``), because pids are reused: a new process with the old pid must not keep a
dead run "running" forever. On another host the pid means nothing, so a run there counts as
alive while its heartbeat (the time of its last event) is recent.
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass

REMOTE_STALE_S = 6 * 3600
"""A run on another host with no event for this long is taken as interrupted."""

HOSTNAME = socket.gethostname()


@dataclass(frozen=True, slots=True)
class Owner:
    """The process writing a run."""

    pid: int
    token: str
    hostname: str

    @classmethod
    def current(cls) -> Owner:
        return cls(os.getpid(), process_token(os.getpid()), HOSTNAME)


def process_token(pid: int) -> str:
    """The process's start time in clock ticks since boot, or "" where /proc is not available."""
    fields = _proc_stat(pid)
    return fields[19] if len(fields) > 19 else ""


def is_alive(pid: int | None, token: str | None, hostname: str | None, heartbeat: float) -> bool:
    if hostname != HOSTNAME or pid is None:
        return time.time() - heartbeat < REMOTE_STALE_S
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, under another user
    except OSError:
        return False
    fields = _proc_stat(pid)
    if fields and fields[0] in ("Z", "X"):  # killed, not yet reaped by its parent
        return False
    # A token that differs: the pid now belongs to another process.
    return not (token and len(fields) > 19 and fields[19] != token)


def _proc_stat(pid: int) -> list[str]:
    """The fields of ``/proc/PID/stat`` after the command's name (state first); [] where it
    cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rsplit(")", 1)[-1].split()
    except OSError:
        return []

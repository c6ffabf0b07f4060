"""Process-group helpers: is anything of a group still running, and end all of it.

Zombies do not count as running: in containers PID 1 often never reaps orphans, so a killed
grandchild can stay a zombie for ever and a plain ``killpg(pgid, 0)`` would say it is alive.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import suppress
from typing import Any

_PROC = "/proc"


def group_members(pgid: int) -> list[int] | None:
    """PIDs of the group's processes that are not zombies; None where /proc is unavailable."""
    if not os.path.isdir(_PROC):
        return None
    return [
        pid for pid, stat in _each("stat") if (fields := _stat(stat)) and int(fields[2]) == pgid
    ]


def group_alive(pgid: int) -> bool:
    """True while some process of the group runs."""
    members = group_members(pgid)
    if members is not None:
        return bool(members)
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def kill_group(
    pgid: int, *, proc: subprocess.Popen[Any] | None = None, grace_s: float = 1.0
) -> None:
    """SIGTERM the whole group, then SIGKILL what is left after ``grace_s``; reap ``proc``."""
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGTERM)
    end = time.monotonic() + grace_s
    while time.monotonic() < end:
        if proc is not None:
            proc.poll()  # reap the shell, so it stops counting as a member
        if not group_alive(pgid):
            break
        time.sleep(0.02)
    else:
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
    if proc is not None:
        with suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=grace_s)


def find_marked(name: str, value: str) -> list[int]:
    """PIDs of the live processes whose environment has ``name=value`` (not this one)."""
    wanted = f"{name}={value}".encode()
    marked = [pid for pid, environ in _each("environ") if wanted in environ.split(b"\0")]
    return [pid for pid in marked if pid != os.getpid() and _running(pid)]


def _each(name: str) -> Iterator[tuple[int, bytes]]:
    """Each process's ``/proc/PID/NAME`` (none where there is no /proc), but of those that
    ended while it was read."""
    for entry in os.listdir(_PROC) if os.path.isdir(_PROC) else ():
        try:
            with open(f"{_PROC}/{entry}/{name}", "rb") as handle:
                yield int(entry), handle.read()
        except (OSError, ValueError):  # gone, or not a process (``self``, ``sys``...)
            continue


def _stat(stat: bytes) -> list[bytes] | None:
    """The fields of a ``/proc/PID/stat`` after the command's name (state, parent, group...)
    of a process that runs; None for a zombie. The name, in parentheses, may itself hold
    spaces or parentheses."""
    fields = stat[stat.rindex(b")") + 2 :].split()
    return fields if len(fields) > 2 and fields[0] not in (b"Z", b"X") else None


MARKED_SCANS = 3
"""Scans of /proc before "no process has the marker" is believed (see ``kill_marked``)."""


def kill_marked(name: str, value: str) -> list[int]:
    """SIGKILL every process whose environment has ``name=value``; returns their PIDs.

    The last resort when a command's supervisor is gone: a process keeps the environment it
    was started with through ``setsid``, ``nohup`` and double forks.
    """
    killed: list[int] = []
    # A process in the middle of an exec can briefly show no environment in /proc (a `cmd &`
    # forked just before the supervisor died): a scan that finds nothing new is repeated.
    for _ in range(MARKED_SCANS):
        found = [pid for pid in find_marked(name, value) if pid not in killed]
        for pid in found:
            with suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
        if not found:
            time.sleep(0.02)
    end = time.monotonic() + 1.0  # SIGKILL takes effect when the process is next scheduled
    while any(_running(pid) for pid in killed) and time.monotonic() < end:
        time.sleep(0.01)
    return killed


def _running(pid: int) -> bool:
    try:
        with open(f"{_PROC}/{pid}/stat", "rb") as handle:
            return _stat(handle.read()) is not None
    except (OSError, ValueError):
        return False

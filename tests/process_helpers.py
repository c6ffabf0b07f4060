"""Following a process by its PID from outside, as the tests of what a command leaves behind do.

PYTEST_DONT_REWRITE: a helper module; it asserts nothing."""

from __future__ import annotations

import time


def running(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie (PID 1 in containers may never reap it)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except FileNotFoundError:
        return False


def ended(pid: int, within: float = 3.0) -> bool:
    """Whether ``pid`` stops running within ``within`` seconds (a kill takes effect when the
    process is next scheduled)."""
    deadline = time.monotonic() + within
    while running(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not running(pid)

"""What the tests of Stop share: a command that would sleep a minute, leaving processes in the
background and in a session of their own, and how to tell that none of them survived."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

from localhand.safety.box.proc import find_marked
from localhand.safety.box.supervise import MARKER_VAR

SLEEPERS = f"echo ${MARKER_VAR} > marker; sleep 60 & setsid sleep 60 & sleep 60"
"""Writes its marker (see ``supervise``) to ``marker``, then sleeps a minute three ways."""


def wait_until_started(workspace: Path, timeout_s: float = 30) -> None:
    """Return once ``SLEEPERS`` runs in ``workspace`` (its marker written, its sleeps begun)."""
    end = time.monotonic() + timeout_s
    while not (workspace / "marker").exists():
        assert time.monotonic() < end, "the command never started"
        time.sleep(0.01)
    time.sleep(0.1)


def once_started(workspace: Path, then: Callable[[], object]) -> None:
    """Call ``then`` from another thread once ``SLEEPERS`` runs in ``workspace``."""

    def wait() -> None:
        wait_until_started(workspace)
        then()

    threading.Thread(target=wait, daemon=True).start()


def survivors(workspace: Path) -> list[int]:
    """The command's processes still running a second after it was ended (a process killed
    under load dies only when it is next scheduled), found by the marker in their
    environment wherever they went."""
    marker = (workspace / "marker").read_text().strip()
    assert marker, "the command wrote its marker"
    end = time.monotonic() + 1
    while (left := find_marked(MARKER_VAR, marker)) and time.monotonic() < end:
        time.sleep(0.02)
    return left

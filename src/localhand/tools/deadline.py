"""The task's deadline, visible to tools, so a command in flight ends with the wall clock.

The loop sets it around each round of tool calls; ``run_command`` and ``search_files``
shorten their own time limits to what is left, and say when they stopped because of it
(``mark_reached``). The loop then ends the run as a timeout even if the clock it reads
afterwards shows a few microseconds left: timers stop slightly early or late, and a run
whose last tool was cut by the wall clock has run out of time whatever the next reading says.
A context variable keeps the deadline per thread, so batch tasks don't share one.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass
class Deadline:
    """When tools must be done, and whether one of them stopped because of it."""

    at: float | None
    reached: bool = False


_deadline: ContextVar[Deadline | None] = ContextVar("localhand_deadline", default=None)


@contextmanager
def deadline(at: float | None) -> Iterator[Deadline]:
    """Tools called inside this block must be done by ``at`` (a ``time.monotonic()`` value)."""
    current = Deadline(at)
    token = _deadline.set(current)
    try:
        yield current
    finally:
        _deadline.reset(token)


def remaining_s() -> float | None:
    """Seconds left before the deadline, or ``None`` when there is none."""
    current = _deadline.get()
    if current is None or current.at is None:
        return None
    return current.at - time.monotonic()


def mark_reached() -> None:
    """A tool stopped because the deadline came: the run is out of time."""
    current = _deadline.get()
    if current is not None:
        current.reached = True

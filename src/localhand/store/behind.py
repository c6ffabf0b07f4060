"""Writes behind the run: the store's events and ledger rows, committed by a thread of their own.

The emitting thread queues each write; a writer thread commits what is queued in one
transaction, a few milliseconds later, so the loop does not wait for SQLite (three commits an
iteration were a fifth of what it added to a bare client). Every other read or write of the
``Store`` commits the queue first, so this process reads what it wrote; closing the store and
leaving the interpreter (an answer, an error, Ctrl-C) commit it too. What a crash can lose: a
SIGKILL, the queue (the last milliseconds' events); a power cut, also the last commits
(``synchronous=NORMAL``). docs/architecture.md says the same for every write localhand makes.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sqlite3
import threading
import weakref
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol

Queued = Callable[[sqlite3.Connection], tuple[str, int] | None]
"""A write behind: run in the writer's transaction; an event's returns ``(run_id, seq)``."""


class Committing(Protocol):
    def commit_queued(self) -> None: ...


class WriteBehind:
    """One store's queue of writes behind, and the thread that commits it (started with the
    first write; it ends when the store is closed or gone)."""

    def __init__(self, store: Committing) -> None:
        self.queued: deque[Queued] = deque()
        self.closed = False
        self._store = weakref.ref(store)
        self._wake = threading.Event()
        self._writer: threading.Thread | None = None
        self._failed: Exception | None = None
        self._pid = os.getpid()

    def add(self, job: Queued) -> None:
        """Queue ``job``; raise what the writer's last commit failed with."""
        if self._failed is not None:
            failed, self._failed = self._failed, None
            raise failed
        self.queued.append(job)
        store = self._store()
        if store is not None and os.getpid() != self._pid:  # a forked child has no writer
            store.commit_queued()
        elif self._writer is None:
            self._writer = threading.Thread(target=self._write, daemon=True)
            self._writer.start()
            if store is not None:
                weakref.finalize(store, self._wake.set)  # a store gone: its writer ends
                _OPEN.add(store)
        self._wake.set()

    @contextmanager
    def batch(self) -> Iterator[list[Queued]]:
        """The queued writes, taken for one transaction: put back in front if it does not
        commit (a Ctrl-C, the caller's own write failing), but for one that failed itself."""
        jobs = [self.queued.popleft() for _ in range(len(self.queued))]
        try:
            yield jobs
        except BaseException:
            self.queued.extendleft(reversed(jobs))  # committed with the next write
            raise

    def close(self) -> None:
        self.closed = True
        self._wake.set()

    def _write(self) -> None:
        while self._wake.wait() and not self.closed and (store := self._store()) is not None:
            self._wake.clear()
            try:
                store.commit_queued()
            except sqlite3.ProgrammingError:  # closed meanwhile
                return
            except Exception as exc:  # a full disk: the thread stays, later writes may land
                self._failed = exc
            del store  # no strong reference while waiting: the store may go


def run_all(jobs: list[Queued], db: sqlite3.Connection) -> list[tuple[str, int] | None]:
    """Each job's result; one that raises is dropped from ``jobs`` (never tried again)."""
    done = []
    for job in list(jobs):
        try:
            done.append(job(db))
        except BaseException:
            jobs.remove(job)
            raise
    return done


_OPEN: weakref.WeakSet[Committing] = weakref.WeakSet()


@atexit.register
def _commit_all() -> None:
    """Leaving the interpreter (an answer, an error, Ctrl-C): what is queued is committed."""
    for store in list(_OPEN):
        with contextlib.suppress(Exception):
            store.commit_queued()

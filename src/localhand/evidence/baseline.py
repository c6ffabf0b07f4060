"""The workspace as it was before the run, taken while the first request goes out.

Two things record it: the change tracker's snapshot (a stat walk) and, in a git repository,
a commit of the working tree (``gitstate.record_before``). In a 2,000-file repository they take
~100 ms, all of it before the first request if done first. Nothing in the workspace changes
before the first tool runs, so they are taken in a thread that starts with the run and is
waited for before the first tool call (and before the end, if no tool ever ran). A call that
only reads waits for the snapshot alone (``recorded``); the first that may change a file waits
for the tests' collection too (``ready``).

The same thread keeps the checks' own files and the hidden places (``CheckGuard.capture``),
from the list of files the tracker's walk made: no second walk. Last, it has each check
command's test runner collect the tests the workspace has (``evidence.reporting``): the tests
that must still run and pass at the end (``CheckGuard.collected``).
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import sys
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextvars import Token
from pathlib import Path
from typing import Any

from localhand.events import collect_holds, release_holds
from localhand.evidence import gitstate
from localhand.evidence.changes import READ_ONLY_TOOLS
from localhand.evidence.checkguard import CheckGuard
from localhand.evidence.project_checks import detect_check
from localhand.evidence.snapshot import ChangeTracker
from localhand.evidence.verify import Check


class Baseline:
    """The tracker and the git state of one run's starting point (``ready`` waits for them)."""

    def __init__(
        self,
        workspace: Path,
        task_id: str,
        checks: Sequence[Check] = (),
        task: str = "",
        before: Mapping[str, Any] | None = None,
    ) -> None:
        self.workspace, self.task_id, self.task = workspace, task_id, task
        self._before = before  # a continued run's: the tests its chain's first run collected
        found = None if checks else detect_check(workspace, task)  # one the run may adopt
        self.guard = CheckGuard(workspace, checks, task, found.command if found else "")
        """The checks' own files as they were (ready once the tracker is)."""
        self._tracker: ChangeTracker | None = None
        self._git: gitstate.GitState | None = None
        self._error: BaseException | None = None
        self._recorded = threading.Event()
        """Set once the tracker and the git state are taken (the tests' collection comes after)."""
        self._holds: list[Callable[[], None]] = []  # the store's copy, taken at task_started
        self._token: Token[list[Callable[[], None]] | None] | None = collect_holds(self._holds)
        # The run's context goes with it: the sandbox in force decides where localhand's git runs.
        context = contextvars.copy_context()
        self._thread = threading.Thread(
            target=context.run, args=(self._take,), name="localhand-baseline", daemon=True
        )
        self._thread.start()

    def _take(self) -> None:
        commands = self.guard.commands
        try:
            if commands:
                # Loaded on this thread: a run's start never loads the reports.
                from localhand.evidence.reporting import Collected, collect_before

                self.guard.collected.update({c: Collected(task=self.task) for c in commands})
            try:
                self._tracker = ChangeTracker(self.workspace, keep=self.guard.keeps)
            finally:
                self.guard.capture(self._tracker)  # a check waits for this, then its tests
            self._git = gitstate.record_before(self.workspace, self.task_id)
            self._recorded.set()
            if commands and sys.platform == "linux":  # nice is per thread there, and inherited:
                # the collection yields the CPU to the loop and to a model served on this machine
                with contextlib.suppress(OSError):
                    os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
            for command, collected in self.guard.collected.items():
                if not collected.reuse((self._before or {}).get(command)):
                    collect_before(command, self.workspace, collected)
        except BaseException as error:  # raised again where the run waits for it
            self._error = error
        finally:
            self._recorded.set()
            for collected in self.guard.collected.values():
                collected.done.set()  # what could not be collected is taken from a first run

    def ready(self) -> Baseline:
        """Wait until both are taken, and what subscribers hold (``localhand.events.hold``);
        what went wrong taking them is raised here."""
        self._thread.join()
        while self._holds:
            self._holds.pop(0)()
        if self._error is not None:
            raise self._error
        return self

    def recorded(self) -> Baseline:
        """Wait for the starting point alone, not for the tests' collection: all that a call
        which only reads needs (the collection still runs before the first one that changes)."""
        self._recorded.wait()
        if self._error is not None:
            raise self._error
        return self

    def before(self, tools: Iterable[str]) -> None:
        """Wait for what must be taken before ``tools`` run: the starting point before any,
        and the tests' collection too before one that may change a file."""
        if all(name in READ_ONLY_TOOLS for name in tools):
            self.recorded()
        else:
            self.ready()

    def close(self) -> None:
        """The run is over: wait for everything, and stop collecting holds on this thread."""
        try:
            self.ready()
        finally:
            if self._token is not None:
                release_holds(self._token)
                self._token = None

    @property
    def tracker(self) -> ChangeTracker:
        tracker = self.recorded()._tracker
        assert tracker is not None
        return tracker

    @property
    def git(self) -> gitstate.GitState | None:
        return self.recorded()._git

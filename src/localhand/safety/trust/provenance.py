"""Which recorded run of the model wrote a file, so that a file the user names is not trusted
at its first use when the model wrote it (``localhand.safety.trust.store.use_named``).

The run store (``localhand.store``) records each finished run's Result, whose
``files_modified`` are relative to its task's workspace. The store stands floors above the
trust store, so this reads the two columns it needs straight from its SQLite file: the
store's schema, read-only (``tests/safety/test_trust_written_by.py`` records runs through the
real store, so a change of schema fails there). The stores looked at are the default one
(``LOCALHAND_DB`` or the data directory) and every one this process opened (``--db``). A
store that cannot be read fails closed: the file is treated as written by the model.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localhand.paths import claimed_stores, db_path

SHOWN = 3
"""Runs named at most, the latest first."""
_WRITES = (
    "SELECT r.id, COALESCE(t.workspace, ''), COALESCE(t.description, ''), r.started_at, "
    "json_extract(r.result, '$.files_modified') FROM runs r LEFT JOIN tasks t "
    "ON t.id = r.task_id WHERE r.result IS NOT NULL ORDER BY r.started_at DESC"
)


@dataclass(frozen=True, slots=True)
class Written:
    """One recorded run that changed or created the file."""

    run_id: str
    file: str
    """The file as the run's workspace and Result name it."""
    task: str
    started_at: float

    def said(self) -> str:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(self.started_at))
        task = self.task if len(self.task) <= 60 else self.task[:59] + "…"
        return f"run {self.run_id} ({when}, task {task!r}) changed or created {self.file}"


def written_by(path: Path, found: str) -> list[str]:
    """What a person reads about the runs that wrote ``path`` (found at ``found``, its folder
    resolved), the latest first; empty when no recorded run did."""
    import json  # only for a file named for the first time: off every run's start-up
    import sqlite3  # only for a file named for the first time: off every run's start-up

    targets = {found, os.path.realpath(path)}
    stores = {os.path.realpath(db_path()), *claimed_stores()}
    said: list[str] = []
    for store in sorted(stores):
        if not os.path.isfile(store):
            continue
        try:
            with sqlite3.connect(store, timeout=5) as db:
                rows = db.execute(_WRITES).fetchall()
        except sqlite3.Error as exc:
            if "no such table" in str(exc):  # a store no run was recorded in yet
                continue
            said.append(
                f"the run store {store} cannot be read ({exc}): whether a run wrote it is unknown"
            )
            continue
        said += [w.said() for w in _matching(rows, targets, json.loads)][:SHOWN]
    return said


def found_path(path: str | os.PathLike[str]) -> str:
    """The path a file was found at, as trust is keyed: its folder's real path and its own
    name, so that a symlink is its own path and never the file it points to."""
    absolute = os.path.abspath(path)
    folder, name = os.path.split(absolute)
    return os.path.join(os.path.realpath(folder), name)


def _matching(rows: list[Any], targets: set[str], loads: Callable[[str], Any]) -> list[Written]:
    """The rows (run, workspace, task, start, files as JSON) whose files hold a target."""
    names = {os.path.basename(target) for target in targets}
    roots: dict[str, str] = {}
    found = []
    for run_id, workspace, task, started_at, files in rows:
        if not workspace or not files:
            continue
        root = roots.setdefault(workspace, os.path.realpath(workspace))
        for name in map(str, loads(files)):
            if os.path.basename(name) not in names:  # the cheap test first
                continue
            written = os.path.join(root, name)
            if {found_path(written), os.path.realpath(written)} & targets:
                file = os.path.join(workspace, name)
                found.append(Written(str(run_id), file, str(task), float(started_at)))
                break
    return found


__all__ = ["Written", "found_path", "written_by"]

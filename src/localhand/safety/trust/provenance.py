"""Which recorded runs of the model wrote a file, so that a file the user names is not trusted
at its first use when the model wrote it (``localhand.safety.trust.store.use_named``).

The run store records each finished run's Result, whose ``files_modified`` are relative to its
task's workspace. The store stands floors above, so this reads those columns from its SQLite
file itself (``tests/safety/test_trust_written_by.py`` records runs through the real store, so
a change of schema fails there): the default store and every one this process opened
(``--db``). A store that cannot be read fails closed: the file counts as the model's.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from localhand.events import clip
from localhand.paths import claimed_stores, db_path

SHOWN = 3
"""Runs named at most per store, the latest first."""
_WRITES = (
    "SELECT r.id, COALESCE(t.workspace, ''), COALESCE(t.description, ''), r.started_at, "
    "json_extract(r.result, '$.files_modified') FROM runs r LEFT JOIN tasks t "
    "ON t.id = r.task_id WHERE r.result IS NOT NULL ORDER BY r.started_at DESC"
)


def found_path(path: str | os.PathLike[str]) -> str:
    """The path a file was found at, as trust is keyed: its folder's real path and its own
    name, so that a symlink is its own path and never the file it points to."""
    folder, name = os.path.split(os.path.abspath(path))
    return os.path.join(os.path.realpath(folder), name)


def written_by(path: Path, found: str) -> list[str]:
    """What a person reads about the runs that changed or created ``path`` (found at
    ``found``), the latest first; empty when no recorded run did."""
    import contextlib  # only for a file named for the first time: off every run's start-up
    import json  # only for a file named for the first time: off every run's start-up
    import sqlite3  # only for a file named for the first time: off every run's start-up

    targets = {found, os.path.realpath(path)}
    said: list[str] = []
    default = os.path.realpath(db_path())
    for store in sorted({default, *claimed_stores()}):
        if not os.path.isfile(store):
            continue
        try:
            with contextlib.closing(sqlite3.connect(store, timeout=5)) as db:
                rows = db.execute(_WRITES).fetchall()
        except sqlite3.Error as exc:
            # A store no run was recorded in yet, or a --db this process tried and failed to
            # open as one (so it recorded nothing there), holds no run's files.
            unrecorded = "no such table" in str(exc)
            if not unrecorded and not (store != default and "not a database" in str(exc)):
                said.append(f"the run store {store} cannot be read ({exc}): any run may have")
            continue
        roots: dict[str, str] = {}
        for run_id, workspace, task, started_at, files in rows:
            root = roots.setdefault(workspace, os.path.realpath(workspace or "/"))
            names = [str(name) for name in json.loads(files or "[]")] if workspace else []
            name = next((name for name in names if _is(os.path.join(root, name), targets)), None)
            if name is not None and len(said) < SHOWN:
                when = time.strftime("%Y-%m-%d %H:%M", time.localtime(started_at))
                about = clip(task, 60)
                where = os.path.join(workspace, name)
                said.append(f"run {run_id} ({when}, task {about!r}) changed or created {where}")
    return said


def _is(written: str, targets: set[str]) -> bool:
    """Whether the file a run wrote is one of ``targets`` (the name compared first: cheap)."""
    if os.path.basename(written) not in {os.path.basename(target) for target in targets}:
        return False
    return bool({found_path(written), os.path.realpath(written)} & targets)


__all__ = ["found_path", "written_by"]

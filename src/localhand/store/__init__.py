"""The run store: every run's events, its Result and the token ledger, in SQLite.

store = open_store()                      # LOCALHAND_DB, or the user's data directory
bus.subscribe(store.recorder())           # events written as they happen
store.runs()                              # newest first; killed runs show "interrupted"
store.find_run("last")                    # or a run id, a unique prefix, or a task id
store.events(run_id, after=seq)           # a run's timeline, resumable by sequence number
store.ledger_spent(day=date.today())      # tokens booked by every task today
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from localhand.errors import ConfigError
from localhand.paths import data_dir, db_path, tighten
from localhand.store.db import RunInfo, RunMatch, Spent, Store, StoredEvent, StoreError
from localhand.store.recorder import Recorder

__all__ = [
    "Recorder",
    "RunInfo",
    "RunMatch",
    "Spent",
    "Store",
    "StoreError",
    "StoredEvent",
    "open_store",
    "open_store_or_none",
]


def open_store(path: str | Path | None = None) -> Store:
    """Open (creating and migrating as needed) the store at ``path`` or the default path.
    The store's files are private (see ``localhand.store.connection``); localhand's data
    directory is tightened to 0700 too if it exists, wherever the store itself is."""
    tighten(data_dir())
    return Store(path if path is not None else db_path())


def open_store_or_none(path: str | Path | None, warn: Callable[[str], object]) -> Store | None:
    """``open_store``, or ``None`` when the store cannot be opened (a full or read-only disk, a
    bad ``LOCALHAND_DB``), ``warn`` told why: the caller goes on without recording."""
    try:
        return open_store(path)
    except ConfigError as exc:
        warn(str(exc))
        return None

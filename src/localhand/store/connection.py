"""The SQLite file under the store: opened private and in WAL mode, and written in
transactions that an interrupt cannot leave open (``migrations`` migrates it in them).

WAL lets other processes (a ``localhand run`` in one terminal, ``localhand serve`` in another)
read while one writes; ``busy_timeout`` makes concurrent writers wait for each other instead
of failing.

The store is private: the database file is created 0600 before SQLite opens it, and an
existing one (and its -wal, -shm and -journal files) is tightened to 0600. SQLite creates
those side files with the database file's own mode (checked with SQLite 3.40 under umask 022),
so they are 0600 too without touching the process-wide umask, which would also change the
mode of the files the model's tools write in other threads meanwhile. The directory is made
0700 when localhand creates it or when it is localhand's data directory.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from localhand.paths import (
    SQLITE_SIDE_FILES,
    claim,
    create_private_file,
    is_data_dir,
    private_dir,
    tighten,
)


def open_database(path: str) -> sqlite3.Connection:
    """The store's database at ``path`` (``":memory:"`` or ``""`` for one in memory), made
    private, in WAL mode (``Store`` migrates it); in autocommit, for any thread (the caller
    serialises). Raises ``OSError`` or ``sqlite3.Error`` when it cannot be opened."""
    if path not in (":memory:", ""):
        _make_private(Path(path).expanduser())
        claim(path)  # never a change of a workspace it happens to be in
    db = sqlite3.connect(os.path.expanduser(path), check_same_thread=False, isolation_level=None)
    db.execute("PRAGMA busy_timeout = 10000")
    db.execute("PRAGMA journal_mode = WAL")
    # NORMAL in WAL mode: a commit survives the process being killed (not a power cut).
    db.execute("PRAGMA synchronous = NORMAL")
    return db


@contextmanager
def write_transaction(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` on ``db``, rolled back on any exception, Ctrl-C
    included. The caller holds the connection's lock."""
    if db.in_transaction:  # left open by a Ctrl-C that landed just after BEGIN
        db.execute("ROLLBACK")
    try:
        db.execute("BEGIN IMMEDIATE")
        yield db
    except BaseException:
        # Ctrl-C can land after BEGIN took effect but before execute() returned: roll
        # back whatever is open, or every later write fails ("within a transaction").
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _make_private(db: Path) -> None:
    """The database file 0600 (its side files too) before SQLite opens it; its directory 0700
    when it is created here or is the data directory. A directory the user chose with
    ``--db``/``LOCALHAND_DB`` (a project folder, say) keeps its mode."""
    parent = db.parent
    if not parent.is_dir():
        private_dir(parent)
    elif is_data_dir(parent):
        tighten(parent)
    create_private_file(db)
    for suffix in SQLITE_SIDE_FILES:
        tighten(db.with_name(db.name + suffix))


def unwritable(doing: str, path: str, exc: BaseException) -> str:
    """One line: why the store at ``path`` cannot be opened or written, and what to do."""
    text, code = str(exc), getattr(exc, "errno", None)
    elsewhere = "point LOCALHAND_HOME (or LOCALHAND_DB, --db) to"
    if code == errno.ENOSPC or "disk is full" in text:
        why = f"the disk is full: free some space, or {elsewhere} another disk"
    elif code in (errno.EROFS, errno.EACCES) or "readonly" in text:
        why = f"it is read-only ({text}): {elsewhere} a writable folder"
    else:
        why = f"{text}: {elsewhere} a writable folder"
    return f"cannot {doing} the run store at {path}: {why}"

"""Append-only, named schema migrations on stdlib ``sqlite3``.

Each migration is a function registered in order with ``@migration``; its name is stored in
``_migrations`` once applied. Never edit or reorder an applied migration: add a new one. That
way a database written by any earlier version upgrades in place, and two processes opening the
same file at once apply each migration exactly once (``BEGIN IMMEDIATE`` serialises them).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable

from localhand.store.connection import write_transaction

Migration = Callable[[sqlite3.Connection], None]

MIGRATIONS: list[tuple[str, Migration]] = []


def migration(fn: Migration) -> Migration:
    MIGRATIONS.append((fn.__name__, fn))
    return fn


def migrate(db: sqlite3.Connection) -> list[str]:
    """Apply the migrations this database lacks; return their names. ``db`` is in autocommit."""
    db.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at REAL)")
    applied: list[str] = []
    for name, fn in MIGRATIONS:
        with write_transaction(db):
            done = db.execute("SELECT 1 FROM _migrations WHERE name = ?", (name,)).fetchone()
            if not done:
                fn(db)
                db.execute("INSERT INTO _migrations VALUES (?, ?)", (name, time.time()))
                applied.append(name)
    return applied


@migration
def m001_runs_and_events(db: sqlite3.Connection) -> None:
    db.execute(
        """CREATE TABLE tasks (
            id TEXT PRIMARY KEY,
            description TEXT NOT NULL,
            workspace TEXT NOT NULL,
            spec TEXT NOT NULL DEFAULT '{}',
            created_at REAL NOT NULL
        )"""
    )
    # status: running | interrupted | pass | partial_pass | fail | error. A run left "running"
    # by a process that is gone is turned into "interrupted" when it is next read.
    db.execute(
        """CREATE TABLE runs (
            id TEXT PRIMARY KEY,
            task_id TEXT NOT NULL,
            kind TEXT NOT NULL DEFAULT 'run',
            replay_of TEXT,
            model TEXT NOT NULL DEFAULT '',
            status TEXT NOT NULL DEFAULT 'running',
            termination_reason TEXT,
            iterations INTEGER NOT NULL DEFAULT 0,
            tokens_in INTEGER NOT NULL DEFAULT 0,
            tokens_out INTEGER NOT NULL DEFAULT 0,
            error TEXT,
            result TEXT,
            started_at REAL NOT NULL,
            heartbeat_at REAL NOT NULL,
            finished_at REAL,
            pid INTEGER,
            pid_token TEXT,
            hostname TEXT
        )"""
    )
    db.execute("CREATE INDEX runs_by_start ON runs(started_at)")
    db.execute("CREATE INDEX runs_by_task ON runs(task_id)")
    # seq is global and increases in commit order (SQLite has one writer at a time), so a
    # reader that asks for "seq > last seen" never misses or repeats an event.
    db.execute(
        """CREATE TABLE events (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            run_id TEXT NOT NULL REFERENCES runs(id),
            type TEXT NOT NULL,
            ts REAL NOT NULL,
            data TEXT NOT NULL
        )"""
    )
    db.execute("CREATE INDEX events_by_run ON events(run_id, seq)")


@migration
def m002_token_ledger(db: sqlite3.Connection) -> None:
    # One row per model call. Concurrent tasks (threads or processes) append to the same table,
    # so per-task and per-day totals are plain SUMs that see every writer.
    db.execute(
        """CREATE TABLE ledger (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            task_id TEXT NOT NULL,
            run_id TEXT,
            day TEXT NOT NULL,
            ts REAL NOT NULL,
            model TEXT NOT NULL DEFAULT '',
            tokens_in INTEGER NOT NULL DEFAULT 0,
            tokens_out INTEGER NOT NULL DEFAULT 0,
            cost REAL NOT NULL DEFAULT 0
        )"""
    )
    db.execute("CREATE INDEX ledger_by_task ON ledger(task_id)")
    db.execute("CREATE INDEX ledger_by_day ON ledger(day)")


@migration
def m003_workspace_snapshots(db: sqlite3.Connection) -> None:
    # The workspace as it was when a run started, so `replay` can start from the same files.
    db.execute(
        """CREATE TABLE snapshots (
            run_id TEXT PRIMARY KEY REFERENCES runs(id),
            files INTEGER NOT NULL,
            bytes INTEGER NOT NULL,
            data BLOB,
            note TEXT NOT NULL DEFAULT ''
        )"""
    )


@migration
def m004_continued_runs(db: sqlite3.Connection) -> None:
    # `localhand run --continue RUN`: the run a run carries on (its parent), and each tool-loop
    # run's conversation as its last request sent it plus the final reply, which the
    # continuing run sends again unchanged so that the server's cached prefix is reused.
    db.execute("ALTER TABLE runs ADD COLUMN continues TEXT")
    db.execute(
        """CREATE TABLE conversations (
            run_id TEXT PRIMARY KEY REFERENCES runs(id),
            messages TEXT NOT NULL
        )"""
    )


@migration
def m005_tests_collected(db: sqlite3.Connection) -> None:
    # The tests each check collected before the first change of a chain's first run: a run
    # that continues it is graded against those, not against what the earlier run left.
    db.execute("ALTER TABLE conversations ADD COLUMN collected TEXT")


@migration
def m006_saved_slots(db: sqlite3.Connection) -> None:
    # Which run's llama-server slot each of the ring's names holds (store.lineage).
    db.execute("CREATE TABLE saved_slots (name TEXT PRIMARY KEY, run_id TEXT, saved_at REAL)")

"""The SQLite store: tasks, runs, their events and the token ledger, in one WAL database.

One connection per ``Store``, shared by every thread behind a lock: the loop's thread writes
events while the dashboard's thread reads them. How the file is opened (private, WAL) and
written (transactions a Ctrl-C cannot leave open) is ``connection``'s; ``migrations`` its schema.

Events and ledger rows are written behind the run: ``behind`` says when they are committed.
"""

from __future__ import annotations

import contextlib
import json
import re
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, replace
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localhand.errors import ConfigError
from localhand.store.archive import MAX_BYTES, Archive
from localhand.store.behind import WriteBehind, run_all
from localhand.store.connection import open_database, unwritable, write_transaction
from localhand.store.liveness import Owner, is_alive
from localhand.store.migrations import migrate
from localhand.store.records import SELECT_RUNS, RunInfo, RunMatch, Spent, StoredEvent

if TYPE_CHECKING:
    from localhand.run.task import Task
    from localhand.store.recorder import Recorder

Listener = Callable[[str, int], None]
"""Called with ``(run_id, seq)`` after each event is committed, and with ``(run_id, 0)`` when
a run is closed; on the writing thread."""

FINAL_STATUSES = ("pass", "unverified", "partial_pass", "fail", "error")
"""The statuses a finished run is stored with as they are; any other is stored as ``error``.
The column has no CHECK constraint, so a new status needs no migration, only this list."""
_RUN_REF = re.compile(r"[A-Za-z0-9_-]{1,64}")


class StoreError(ConfigError):
    """The store cannot be opened, or it has no such run: the message says what to do."""


class Store:
    """Runs, events and the ledger in a SQLite file (``":memory:"`` for tests)."""

    def __init__(self, path: str | Path = ":memory:") -> None:
        self.path = str(path)
        self._lock = threading.RLock()
        self._listeners: list[Listener] = []
        self._owner = Owner.current()
        self._behind = WriteBehind(self)
        try:
            self._db = open_database(self.path)
            migrate(self._db)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(unwritable("open", self.path, exc)) from None

    # -- plumbing -------------------------------------------------------------------------
    def close(self) -> None:
        with self._lock:
            with contextlib.suppress(StoreError):
                self.commit_queued()
            self._db.close()
        self._behind.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction; a full disk or a read-only one is a ``StoreError`` that says
        what to do, not a traceback."""
        try:
            with self._lock, self._behind.batch() as jobs, write_transaction(self._db) as db:
                committed = run_all(jobs, db)
                yield db
        except (OSError, sqlite3.OperationalError) as exc:
            raise StoreError(unwritable("write", self.path, exc)) from None
        for run_id, seq in filter(None, committed):  # the doorbells, outside the lock
            self._notify(run_id, seq)

    def _query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            self.commit_queued()
            return self._db.execute(sql, params).fetchall()

    def commit_queued(self) -> None:
        """Commit the writes queued behind (``behind``) now; none queued, nothing to do (the
        writer woken for writes a read has committed opens no empty transaction)."""
        if self._behind.queued:
            with self._write():
                pass

    def add_listener(self, listener: Listener) -> Callable[[], None]:
        """Be told of each new event (a doorbell: read the events themselves from the store).
        Returns a function that removes the listener."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def recorder(
        self,
        *,
        ledger: bool = False,
        archive_bytes: int = MAX_BYTES,
        archive_secrets: bool = False,
    ) -> Recorder:
        """A bus subscriber that writes every event as it happens (see ``Recorder``)."""
        from localhand.store.recorder import Recorder  # it reads db's Store: one way only

        return Recorder(
            self, ledger=ledger, archive_bytes=archive_bytes, archive_secrets=archive_secrets
        )

    # -- tasks and runs -------------------------------------------------------------------
    def record_task(self, task: Task) -> None:
        """Keep a task's spec in task-file form (limits, checks), so replay can run it the
        same way. Checks that have no task-file form are left out."""
        try:
            spec = task.to_dict()
        except TypeError:
            spec = {**task.with_changes(checks=()).to_dict(), "verify_incomplete": True}
        self._upsert_task(task.id, task.description, str(task.workspace), spec)

    def _upsert_task(
        self, task_id: str, description: str, workspace: str, spec: dict[str, Any] | None = None
    ) -> None:
        with self._write() as db:
            db.execute(
                "INSERT INTO tasks VALUES (?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET "
                "description = excluded.description, workspace = excluded.workspace, "
                "spec = CASE WHEN excluded.spec = '{}' THEN tasks.spec ELSE excluded.spec END",
                (task_id, description, workspace, json.dumps(spec or {}), time.time()),
            )

    def task_spec(self, task_id: str) -> dict[str, Any]:
        rows = self._query("SELECT spec FROM tasks WHERE id = ?", (task_id,))
        return json.loads(rows[0][0]) if rows else {}

    def begin_run(
        self,
        task: Task | str,
        *,
        model: str = "",
        kind: str = "run",
        replay_of: str | None = None,
    ) -> str:
        """Open a run for a task (a ``Task``, or a task id) and return its id. The recorder
        writes the task's events into it; without this call it opens one at the first event."""
        if isinstance(task, str):
            task_id = task
            if not self._query("SELECT 1 FROM tasks WHERE id = ?", (task_id,)):
                self._upsert_task(task_id, "", "")
        else:
            task_id = task.id
            self.record_task(task)
        run_id = uuid.uuid4().hex[:12]
        now, owner = time.time(), self._owner
        with self._write() as db:
            db.execute(
                "INSERT INTO runs (id, task_id, kind, replay_of, model, started_at, heartbeat_at,"
                " pid, pid_token, hostname) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (run_id, task_id, kind, replay_of, model, now, now, *asdict(owner).values()),
            )
        return run_id

    def open_run_for(self, task_id: str) -> str | None:
        """The newest run of this task that this process opened and that is still running."""
        rows = self._query(
            "SELECT id FROM runs WHERE task_id = ? AND status = 'running' AND pid = ? "
            "AND hostname = ? ORDER BY started_at DESC LIMIT 1",
            (task_id, self._owner.pid, self._owner.hostname),
        )
        return rows[0][0] if rows else None

    def note_start(self, run_id: str, task_id: str, data: dict[str, Any]) -> None:
        """Fill in what ``task_started`` tells about the run."""
        self._upsert_task(task_id, str(data.get("description", "")), str(data.get("workspace", "")))
        with self._write() as db:
            db.execute(
                "UPDATE runs SET model = ? WHERE id = ?", (str(data.get("model", "")), run_id)
            )

    def finish_run(self, run_id: str, result: dict[str, Any]) -> None:
        """Close a run with its Result (the ``task_finished`` event's ``result``)."""
        status = result.get("status")
        with self._write() as db:
            db.execute(
                "UPDATE runs SET status = ?, termination_reason = ?, iterations = ?, "
                "tokens_in = ?, tokens_out = ?, error = ?, result = ?, finished_at = ?, "
                "heartbeat_at = ? WHERE id = ?",
                (
                    status if status in FINAL_STATUSES else "error",
                    result.get("termination_reason"),
                    int(result.get("iterations_used") or 0),
                    int(result.get("tokens_in") or 0),
                    int(result.get("tokens_out") or 0),
                    result.get("error"),
                    json.dumps(result, default=str),
                    time.time(),
                    time.time(),
                    run_id,
                ),
            )
        self._notify(run_id, 0)

    def runs(self, limit: int = 50, *, task_id: str | None = None) -> list[RunInfo]:
        """Newest first. Runs whose process is gone come back as ``interrupted``."""
        where, params = ("WHERE r.task_id = ?", (task_id,)) if task_id else ("", ())
        rows = self._query(
            f"{SELECT_RUNS} {where} ORDER BY r.started_at DESC, r.rowid DESC LIMIT ?",
            (*params, limit),
        )
        return [self._run_info(row) for row in rows]

    def run(self, ref: str) -> RunInfo:
        """A run by id, unique id prefix, or ``last``; ``StoreError`` if there is none."""
        if ref in ("last", "latest"):
            found = self.runs(limit=1)
            if not found:
                raise StoreError("no runs recorded yet; start one with `localhand run`")
            return found[0]
        if not _RUN_REF.fullmatch(ref):
            raise StoreError(f"{ref!r} is not a run id; `localhand runs` lists them")
        rows = self._runs_starting(ref)
        exact = [row for row in rows if row[0] == ref]
        if len(rows) == 1 or exact:
            return self._run_info((exact or rows)[0])
        if not rows:
            raise StoreError(f"no run {ref!r} in {self.path}; `localhand runs` lists them")
        raise StoreError(f"run id {ref!r} is ambiguous; give more of it")

    def find_run(self, ref: str) -> RunMatch:
        """A run by whatever the user has at hand: ``last``, a run id or a unique prefix of
        one (as ``run``), or a task id, the Result's ``task_id``, which gives that task's
        latest run. A whole run id wins over a task id, and a task id over a run-id prefix;
        the match says how many runs the task has, so that a caller can say which it took."""
        if ref in ("last", "latest") or self._query("SELECT 1 FROM runs WHERE id = ?", (ref,)):
            return RunMatch(self.run(ref))
        ((count,),) = self._query("SELECT COUNT(*) FROM runs WHERE task_id = ?", (ref,))
        if count:
            latest = self.runs(limit=1, task_id=ref)[0]
            prefix = bool(_RUN_REF.fullmatch(ref)) and bool(self._runs_starting(ref))
            return RunMatch(latest, task_runs=count, prefix_too=prefix)
        if not _RUN_REF.fullmatch(ref) or not self._runs_starting(ref):
            raise StoreError(
                f"no run {ref!r} in {self.path}, and no task with that id; "
                "`localhand runs` lists them"
            )
        return RunMatch(self.run(ref))

    def _runs_starting(self, prefix: str) -> list[tuple[Any, ...]]:
        """Up to two runs whose id starts with ``prefix`` (two are enough to call it
        ambiguous)."""
        return self._query(
            f"{SELECT_RUNS} WHERE substr(r.id, 1, ?) = ? LIMIT 2",
            (len(prefix), prefix),
        )

    def _run_info(self, row: tuple[Any, ...]) -> RunInfo:
        *fields, continues, pid, token, hostname = row
        result = json.loads(fields[16]) if fields[16] else None
        info = RunInfo(*fields[:16], result, continues)  # type: ignore[call-arg]  # 16 before it
        if info.status == "running" and not is_alive(pid, token, hostname, info.heartbeat_at):
            with contextlib.suppress(StoreError), self._write() as db:  # a read-only store reads
                db.execute(
                    "UPDATE runs SET status = 'interrupted', finished_at = heartbeat_at "
                    "WHERE id = ? AND status = 'running'",
                    (info.id,),
                )
            return replace(info, status="interrupted", finished_at=info.heartbeat_at)
        return info

    # -- events ---------------------------------------------------------------------------
    def append_event(
        self, run_id: str, data: dict[str, Any], prepare: Callable[[Any], Any] | None = None
    ) -> None:
        """Write one event (its public JSON, a copy no one changes) behind (``behind``),
        through ``prepare`` (the secrets' scrub) on the writer's thread."""
        kind, now = str(data.get("type", "")), time.time()
        ts = float(data.get("ts") or now)
        tokens = (int(data.get("tokens_in") or 0), int(data.get("tokens_out") or 0))
        iteration = int(data.get("iteration") or 0)

        def write(db: sqlite3.Connection) -> tuple[str, int]:
            text = json.dumps(prepare(data) if prepare else data, ensure_ascii=False, default=str)
            cursor = db.execute(
                "INSERT INTO events (run_id, type, ts, data) VALUES (?, ?, ?, ?)",
                (run_id, kind, ts, text),
            )
            db.execute("UPDATE runs SET heartbeat_at = ? WHERE id = ?", (now, run_id))
            if kind == "model_reply":
                # Running totals, so a run that never finishes still shows what it spent.
                db.execute(
                    "UPDATE runs SET tokens_in = tokens_in + ?, tokens_out = tokens_out + ?, "
                    "iterations = MAX(iterations, ?) WHERE id = ?",
                    (*tokens, iteration, run_id),
                )
            return run_id, int(cursor.lastrowid or 0)

        self._behind.add(write)

    def _notify(self, run_id: str, seq: int) -> None:
        for listener in list(self._listeners):
            with contextlib.suppress(Exception):  # a doorbell must not break the recording
                listener(run_id, seq)

    def events(
        self, run_id: str, *, after: int = 0, types: tuple[str, ...] = ()
    ) -> list[StoredEvent]:
        """A run's events with ``seq > after``, in order."""
        sql, params = "SELECT seq, data FROM events WHERE run_id = ? AND seq > ?", [run_id, after]
        if types:
            sql += f" AND type IN ({', '.join('?' * len(types))})"
            params.extend(types)
        rows = self._query(sql + " ORDER BY seq", tuple(params))
        return [StoredEvent(seq, run_id, json.loads(data)) for seq, data in rows]

    def waiting_approvals(self) -> dict[str, int]:
        """Approvals nobody has answered yet, per running run: its ``approval_needed`` events
        not yet followed by an ``approval_decided`` (each request gets one, whoever answers,
        in this process or another). Runs whose process is gone are left out."""
        rows = self._query(
            "SELECT e.run_id, SUM(e.type = 'approval_needed') - SUM(e.type = 'approval_decided')"
            " FROM events e JOIN runs r ON r.id = e.run_id WHERE r.status = 'running' AND"
            " e.type IN ('approval_needed', 'approval_decided') GROUP BY e.run_id"
        )
        open_ = {run_id: int(n) for run_id, n in rows if n and n > 0}
        return {run_id: n for run_id, n in open_.items() if self.run(run_id).status == "running"}

    # -- workspace snapshots --------------------------------------------------------------
    def save_archive(self, run_id: str, archive: Archive) -> None:
        with self._write() as db:
            db.execute(
                "INSERT OR REPLACE INTO snapshots VALUES (?, ?, ?, ?, ?)",
                (run_id, archive.files, archive.bytes, archive.data, archive.note),
            )

    def archive(self, run_id: str) -> Archive | None:
        rows = self._query(
            "SELECT files, bytes, data, note FROM snapshots WHERE run_id = ?", (run_id,)
        )
        return Archive(*rows[0]) if rows else None

    # -- token ledger ---------------------------------------------------------------------
    def ledger_add(
        self,
        task_id: str,
        tokens_in: int,
        tokens_out: int,
        *,
        run_id: str | None = None,
        model: str = "",
        cost: float = 0.0,
        ts: float | None = None,
    ) -> None:
        """Book one model call's tokens (and cost, for paid endpoints) against a task and the
        local calendar day it happened on (behind, as events are)."""
        ts = time.time() if ts is None else ts
        day = datetime.fromtimestamp(ts).date().isoformat()
        row = (task_id, run_id, day, ts, model, int(tokens_in), int(tokens_out), float(cost))

        def write(db: sqlite3.Connection) -> None:
            db.execute(
                "INSERT INTO ledger (task_id, run_id, day, ts, model, tokens_in, tokens_out, cost)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                row,
            )

        self._behind.add(write)

    def ledger_spent(self, task_id: str | None = None, day: date | str | None = None) -> Spent:
        """Totals booked so far, for one task, one local day (``date`` or ``YYYY-MM-DD``), both,
        or everything. Every process writing to this file is counted."""
        clauses, params = [], []
        if task_id is not None:
            clauses.append("task_id = ?")
            params.append(task_id)
        if day is not None:
            clauses.append("day = ?")
            params.append(day.isoformat() if isinstance(day, date) else str(day))
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        row = self._query(
            "SELECT COALESCE(SUM(tokens_in), 0), COALESCE(SUM(tokens_out), 0), "
            f"COALESCE(SUM(cost), 0), COUNT(*) FROM ledger {where}",
            tuple(params),
        )[0]
        return Spent(int(row[0]), int(row[1]), float(row[2]), int(row[3]))

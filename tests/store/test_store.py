"""The run store on real SQLite files: migrations, live recording, killed runs, the ledger."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from datetime import date
from pathlib import Path

import pytest

from localhand import Agent
from localhand.events import Event, EventBus, ModelReply, TaskFinished, TaskStarted, Warning
from localhand.models.scripted import ScriptedModel, call
from localhand.paths import db_path
from localhand.store import Store, StoreError, open_store, open_store_or_none
from localhand.store.archive import pack, unpack
from localhand.store.migrations import MIGRATIONS
from localhand.store.recorder import close_unfinished
from workspaces import BUGGY, workspace_with

FIX = [
    call("read_file", path="calc.py"),
    call("edit_file", path="calc.py", old_text="return a - b", new_text="return a + b"),
    "Fixed.",
]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return workspace_with(tmp_path / "ws", {"calc.py": BUGGY})


MAIN = threading.main_thread()


def started(task_id: str, workspace: str = "") -> TaskStarted:
    return TaskStarted(
        task_id=task_id, description="d", model="m", workspace=workspace, max_iterations=5
    )


def test_migrations_apply_once_in_order_on_a_wal_file(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    Store(path).close()
    Store(path).close()  # a second open applies nothing and breaks nothing
    db = sqlite3.connect(path)
    names = [row[0] for row in db.execute("SELECT name FROM _migrations ORDER BY rowid")]
    assert names == [name for name, _ in MIGRATIONS]
    assert len(names) == len(set(names)) >= 3
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"tasks", "runs", "events", "ledger", "snapshots"} <= tables


def test_a_real_run_is_recorded_event_by_event(tmp_path: Path, workspace: Path) -> None:
    store = Store(tmp_path / "runs.db")
    bus = EventBus()
    bus.subscribe(store.recorder())
    seen_in_store: list[int] = []

    # A later subscriber reads each event back as it is delivered: written behind, yet this
    # process reads what it wrote.
    def check(event: Event) -> None:
        run_id = store.runs(1)[0].id
        seen_in_store.append(len(store.events(run_id)))

    bus.subscribe(check)
    result = Agent(ScriptedModel(FIX), workspace, bus=bus, task_id="t1").run("Fix add")

    assert bus.errors == []
    assert seen_in_store == list(range(1, len(seen_in_store) + 1))
    # A second connection, as another process, has all of it once the run has ended.
    reader = Store(tmp_path / "runs.db")
    assert len(reader.events(reader.runs(1)[0].id)) == len(seen_in_store)
    run = store.runs()[0]
    # No checks: the model's word alone, stored as itself (no pass without evidence).
    assert (run.task_id, run.status, run.termination_reason) == (
        "t1",
        "unverified",
        "final_answer",
    )
    assert (run.iterations, run.tokens_in, run.tokens_out) == (
        result.iterations_used,
        result.tokens_in,
        result.tokens_out,
    )
    assert run.description == "Fix add" and run.workspace == str(workspace)
    assert run.result is not None and run.result["files_modified"] == ["calc.py"]
    events = store.events(run.id)
    types = [e.type for e in events]
    assert types[0] == "task_started" and types[-1] == "task_finished"
    assert types.count("tool_call") == 2
    assert [e.seq for e in events] == sorted({e.seq for e in events})
    assert store.events(run.id, after=events[2].seq) == events[3:]
    tool = next(e for e in events if e.type == "tool_call").data
    assert tool["tool_name"] == "read_file" and tool["ok"] is True
    kept = store.archive(run.id)
    assert kept is not None and kept.data is not None
    restored = tmp_path / "restored"
    unpack(kept.data, restored)
    assert (restored / "calc.py").read_text() == BUGGY, "the workspace as the run found it"


def test_concurrent_tasks_on_one_bus_keep_their_own_runs_in_order() -> None:
    store = Store()
    bus = EventBus()
    bus.subscribe(store.recorder())
    tasks = [f"task{i}" for i in range(6)]

    def work(task_id: str) -> None:
        bus.emit(started(task_id))
        for i in range(40):
            bus.emit(Warning(task_id=task_id, message=str(i)))
        bus.emit(TaskFinished(task_id=task_id, result={"status": "pass", "iterations_used": 1}))

    threads = [threading.Thread(target=work, args=(t,)) for t in tasks]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert bus.errors == []
    runs = store.runs()
    assert sorted(r.task_id for r in runs) == tasks
    for run in runs:
        events = store.events(run.id)
        assert run.status == "pass"
        assert {e.data["task_id"] for e in events} == {run.task_id}
        assert [e.data.get("message") for e in events[1:-1]] == [str(i) for i in range(40)]
    assert len({e.seq for r in runs for e in store.events(r.id)}) == 6 * 42


def test_the_same_task_run_twice_gets_two_runs() -> None:
    store = Store()
    recorder = store.recorder()
    for _ in range(2):
        recorder(started("same"))
        recorder(TaskFinished(task_id="same", result={"status": "fail"}))
    assert [r.task_id for r in store.runs()] == ["same", "same"]
    assert all(len(store.events(r.id)) == 2 for r in store.runs())


def test_an_event_after_the_result_joins_its_run_not_a_new_one() -> None:
    """A plan's memory summary may still be written when the plan ends: its model call is
    recorded (and its tokens counted) in the finished run, whose Result stands."""
    store = Store()
    recorder = store.recorder(ledger=True)
    recorder(started("plan"))
    recorder(TaskFinished(task_id="plan", result={"status": "pass", "iterations_used": 3}))
    recorder(ModelReply(task_id="plan", iteration=4, content="Summary.", tool_calls=[],
                        tokens_in=160, tokens_out=8))  # fmt: skip
    (run,) = store.runs()
    assert (run.status, run.tokens_in, run.tokens_out) == ("pass", 160, 8)
    assert [e.data["type"] for e in store.events(run.id)] == [
        "task_started",
        "task_finished",
        "model_reply",
    ]
    spent = store.ledger_spent("plan")
    assert (spent.tokens_in, spent.tokens_out, spent.calls) == (160, 8, 1)


class _InterruptedAfterBegin:
    """A connection on which Ctrl-C lands once just after BEGIN took effect, before
    ``execute`` returned: what a SIGINT at the wrong moment does."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db, self.armed = db, True

    def execute(self, sql: str, *args: object) -> sqlite3.Cursor:
        cursor = self.db.execute(sql, *args)
        # Python runs a signal's handler on the main thread only: the store's writer is spared.
        if sql.startswith("BEGIN") and self.armed and threading.current_thread() is MAIN:
            self.armed = False
            raise KeyboardInterrupt
        return cursor

    def __getattr__(self, name: str) -> object:
        return getattr(self.db, name)


def test_a_ctrl_c_just_after_begin_does_not_break_later_writes() -> None:
    store = Store()
    recorder = store.recorder()
    recorder(started("task"))
    store._db = _InterruptedAfterBegin(store._db)  # type: ignore[assignment]
    with store._lock:  # the writer waits: the warning is still queued when Ctrl-C lands
        recorder(Warning(task_id="task", message="written behind"))
        with pytest.raises(KeyboardInterrupt):
            store.commit_queued()
    recorder(TaskFinished(task_id="task", result={"status": "fail"}))  # the cleanup still lands
    (run,) = store.runs()
    assert run.status == "fail"
    kinds = [e.data["type"] for e in store.events(run.id)]
    assert kinds == ["task_started", "warning", "task_finished"]  # nothing lost to it


def test_begin_run_is_used_by_the_recorder(workspace: Path) -> None:
    from localhand.run.task import Task

    store = Store()
    task = Task("Fix add", workspace=workspace)
    run_id = store.begin_run(task, model="scripted")
    assert store.run(run_id).status == "running"
    assert store.task_spec(task.id)["description"] == "Fix add"
    bus = EventBus()
    bus.subscribe(store.recorder())
    Agent(ScriptedModel(FIX), workspace, bus=bus, task_id=task.id).run(task.description)
    assert [r.id for r in store.runs()] == [run_id]
    assert store.run(run_id).status == "unverified"  # no checks: not a pass


def test_a_run_that_never_got_its_result_is_closed_once_with_why(workspace: Path) -> None:
    from localhand.run.task import Task

    store = Store()
    run_id = store.begin_run(Task("Fix add", workspace=workspace), model="m")
    close_unfinished(store, run_id)
    close_unfinished(store, run_id, {"status": "pass"})  # closed already: left as it is
    run = store.run(run_id)
    assert (run.status, run.termination_reason) == ("error", "error")
    assert run.error == "the run ended without a result"
    [finished] = store.events(run_id)  # what ``localhand show`` prints
    assert finished.type == "task_finished"
    assert finished.data["result"]["model_used"] == "m"


CHILD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from localhand import Agent
    from localhand.events import EventBus
    from localhand.models.scripted import ScriptedModel, call
    from localhand.store import Store

    def hang(messages):
        print("HANGING", flush=True)
        time.sleep(120)

    store = Store(sys.argv[1])
    bus = EventBus()
    bus.subscribe(store.recorder())
    steps = [call("read_file", path="calc.py"), call("write_file", path="n.txt", content="x"), hang]
    Agent(ScriptedModel(steps), Path(sys.argv[2]), bus=bus, task_id="killed").run("Fix add")
    """
)


def test_a_killed_run_shows_interrupted_with_every_event_up_to_the_kill(
    tmp_path: Path, workspace: Path
) -> None:
    db = tmp_path / "runs.db"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(db), str(workspace)],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "HANGING"
        store = Store(db)
        assert store.runs()[0].status == "running", "a live process's run is running"
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait(timeout=10)
    run = store.runs()[0]
    assert run.status == "interrupted"
    assert run.finished_at is not None and run.result is None
    types = [e.type for e in store.events(run.id)]
    assert types == [
        "task_started",
        "model_request",
        "model_reply",
        "tool_call",
        "model_request",
        "model_reply",
        "tool_call",
        "model_request",
    ]
    assert run.tokens_in > 0, "tokens spent before the kill are counted"
    assert Store(db).run(run.id).status == "interrupted", "and it stays so"


def test_a_reused_pid_does_not_keep_a_dead_run_alive() -> None:
    store = Store()
    run_id = store.begin_run("t")
    store._db.execute("UPDATE runs SET pid_token = 'not-this-process' WHERE id = ?", (run_id,))
    assert store.run(run_id).status == "interrupted"


def test_run_references(tmp_path: Path) -> None:
    store = Store()
    first = store.begin_run("a")
    time.sleep(0.01)
    second = store.begin_run("b")
    assert store.run("last").id == second
    assert store.run(first[:6]).id == first
    with pytest.raises(StoreError, match="no run 'zzzz'"):
        store.run("zzzz")
    with pytest.raises(StoreError, match="not a run id"):
        store.run("'; DROP TABLE runs; --")
    with pytest.raises(StoreError, match="no runs recorded"):
        Store().run("last")


def test_ledger_totals_per_task_and_day_across_connections(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    stores = [Store(path), Store(path)]  # as two processes would
    yesterday = time.time() - 86400

    def book(store: Store, task: str) -> None:
        for _ in range(50):
            store.ledger_add(task, 10, 2, model="m")

    threads = [threading.Thread(target=book, args=(s, f"t{i}")) for i, s in enumerate(stores * 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stores[0].ledger_add("t0", 1000, 0, ts=yesterday, cost=0.5)
    stores[0].commit_queued()  # the other process's writer commits within milliseconds
    today = stores[1].ledger_spent(day=date.today())
    assert (today.tokens_in, today.tokens_out, today.calls) == (4 * 500, 4 * 100, 200)
    assert stores[1].ledger_spent(task_id="t2").tokens == 50 * 12
    assert stores[1].ledger_spent(task_id="t0").tokens == 50 * 12 + 1000
    assert stores[1].ledger_spent(task_id="t0", day=date.today().isoformat()).tokens == 600
    assert stores[1].ledger_spent().cost == 0.5
    assert stores[1].ledger_spent(task_id="nope").tokens == 0


def test_recorder_books_model_replies_in_the_ledger_when_asked() -> None:
    store = Store()
    recorder = store.recorder(ledger=True)
    recorder(started("t"))
    recorder(
        ModelReply(task_id="t", iteration=1, content="", tool_calls=[], tokens_in=7, tokens_out=3)
    )
    assert store.ledger_spent(task_id="t").tokens == 10
    plain = Store()
    plain.recorder()(ModelReply(task_id="t", iteration=1, content="", tool_calls=[], tokens_in=7))
    assert plain.ledger_spent().calls == 0


def test_default_path_and_clear_errors(tmp_path: Path) -> None:
    assert db_path({"LOCALHAND_DB": "/x/y.db"}) == Path("/x/y.db")
    assert db_path({"XDG_DATA_HOME": "/d", "HOME": "/h"}) == Path("/d/localhand/runs.db")
    assert db_path({"HOME": "/h"}) == Path("/h/.local/share/localhand/runs.db")
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(StoreError, match=r"cannot open the run store.*LOCALHAND_DB"):
        open_store(blocker / "runs.db")
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match="cannot open the run store"):
        open_store(garbage)
    said: list[str] = []
    assert open_store_or_none(garbage, said.append) is None
    assert len(said) == 1 and said[0].startswith("cannot open the run store")


def test_big_workspaces_are_not_kept(tmp_path: Path) -> None:
    (tmp_path / "big.bin").write_bytes(b"x" * 5000)
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "objects").write_bytes(b"y" * 100_000)
    assert pack(tmp_path, max_bytes=10_000).data is not None, ".git is never counted"
    too_big = pack(tmp_path, max_bytes=1000)
    assert too_big.data is None and "too big" in too_big.note


def test_events_written_behind_are_committed_when_the_process_leaves(tmp_path: Path) -> None:
    """Written behind the run, yet nothing is lost by a process that ends without closing
    its store (an answer printed, an error, Ctrl-C): what is queued is committed on exit."""
    db = tmp_path / "runs.db"
    script = textwrap.dedent(
        f"""
        import os
        from localhand.store import Store
        store = Store({str(db)!r})
        run = store.begin_run("t")
        for n in range(500):
            store.append_event(run, {{"type": "warning", "message": str(n)}})
        store.ledger_add("t", 10, 2)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    with Store(db) as store:
        (run,) = store.runs()
        assert [e.data["message"] for e in store.events(run.id)] == [str(n) for n in range(500)]
        assert store.ledger_spent(task_id="t").tokens == 12

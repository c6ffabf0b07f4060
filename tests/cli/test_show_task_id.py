"""``localhand show`` takes what the user has at hand: the run id, or the Result's ``task_id``
(a task run several times shows its latest run, and says so)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from localhand.cli import main
from localhand.events import EventBus, TaskFinished, TaskStarted
from localhand.store import Store, StoreError
from localhand.types import Result


def record(store: Store, task_id: str, output: str) -> str:
    """One finished run of ``task_id`` whose Result's answer is ``output``."""
    run_id = store.begin_run(task_id)
    bus = EventBus()
    bus.subscribe(store.recorder())
    bus.emit(TaskStarted(task_id=task_id, description="Fix add", model="m", workspace="",
                         max_iterations=3))  # fmt: skip
    result = Result(task_id, "pass", output, "m", 10, 2, "final_answer", 1)
    bus.emit(TaskFinished(task_id=task_id, result=result.to_dict()))
    return run_id


def test_a_task_id_finds_its_latest_run_and_says_there_were_more() -> None:
    store = Store()
    first = record(store, "fix-add", "first try")
    latest = record(store, "fix-add", "second try")
    once = record(store, "only-once", "done")

    match = store.find_run("fix-add")
    assert match.run.id == latest and match.task_runs == 2
    assert match.note is not None
    assert "'fix-add' has 2 runs: this is the latest, run " + latest in match.note
    assert store.find_run("only-once").run.id == once
    assert store.find_run("only-once").note is None, "one run: nothing to choose"
    assert store.find_run(first).run.id == first, "a run id as before"
    assert store.find_run(first[:6]).run.id == first
    assert store.find_run("last").run.id == once
    with pytest.raises(StoreError, match=r"no run 'fix-ad' in .*, and no task with that id"):
        store.find_run("fix-ad")  # task ids are matched whole
    with pytest.raises(StoreError, match="no task with that id"):
        store.find_run("fix add.py")


def test_a_whole_run_id_wins_and_a_task_id_beats_a_run_id_prefix() -> None:
    store = Store()
    run = record(store, "t", "by run")
    named_like_a_run = record(store, run, "a task whose id is that run's id")
    assert store.find_run(run).run.id == run
    prefix = named_like_a_run[:4]
    shadow = record(store, prefix, "a task named like the start of a run id")
    match = store.find_run(prefix)
    assert match.run.id == shadow and match.prefix_too
    assert match.note is not None and "give the whole run id" in match.note


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_show_accepts_the_results_task_id(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "runs.db"
    store = Store(db)
    record(store, "fix-add", "first try")
    latest = record(store, "fix-add", "second try")
    store.close()

    code, out, err = cli(capsys, "show", "fix-add", "--db", str(db))
    assert code == 0, err
    assert f"run {latest}" in out and "second try" in out and "first try" not in out
    assert "note:" in err and "has 2 runs: this is the latest" in err

    code, out, err = cli(capsys, "show", "fix-add", "--db", str(db), "--json")
    assert code == 0 and json.loads(out)["run"]["id"] == latest, "stdout stays one document"

    code, out, err = cli(capsys, "show", "no-such-task", "--db", str(db))
    assert code == 2
    assert "no run 'no-such-task'" in err and "no task with that id" in err
    assert "Traceback" not in out + err

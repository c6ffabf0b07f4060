"""A run's cache kept on llama-server (``--slot-save-path``) for the run that continues it,
against the fake server answering the slot actions as llama-server does: saved when a run
ends, under a ring of names the store remembers; restored into the continuing run's slot
before its first request, and counted in the Result; a failed restore is a warning; a server
without ``--slot-save-path`` is left alone. The real server: ``tests/models/
test_real_kept_cache.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from localhand.config.settings import Settings
from localhand.events import EventBus
from localhand.run.task import Task
from localhand.session.continuing import carried_on, continuation
from localhand.session.door import Session
from localhand.store import Store, open_store
from localhand.store.lineage import saved_slot
from localhand.testing import FakeOllama
from localhand.types import Result

QWEN = {"qwen3:8b": {}}
HELLO = ["Hello."] * 8
"""Replies enough for any run here (a short answer may be objected to once)."""


def settings(server: FakeOllama, ring: int = 8) -> Settings:
    return Settings(model="qwen3:8b", backend="openai", host=server.url + "/v1", saved_slots=ring)


def run(
    server: FakeOllama,
    workspace: Path,
    store: Store,
    what: str = "Say hi",
    *,
    continue_from: str | None = None,
    ring: int = 8,
    warnings: list[str] | None = None,
    task_id: str | None = None,
) -> Result:
    """One run recorded in ``store``'s file, as the command line records it."""
    bus = EventBus()
    if warnings is not None:
        bus.subscribe(lambda e: warnings.append(e.message) if e.type == "warning" else None)
    task = Task(description=what, workspace=workspace, agentic=True)
    task = task.with_changes(id=task_id) if task_id else task
    parent = continuation(store, continue_from, what) if continue_from else None
    session = Session(
        carried_on(parent, task) if parent else task, settings(server, ring), bus=bus,
        continuing=parent,
    )  # fmt: skip
    with session.recording(db=Path(store.path)):
        result = session.run()
    assert isinstance(result, Result)
    return result


def slot_actions(server: FakeOllama) -> list[tuple[str, object]]:
    return [(r.path, r.body) for r in server.requests if r.path.startswith("/slots/")]


def name_of(store: Store, run_id: str) -> str | None:
    return saved_slot(store, run_id, "")


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return open_store(tmp_path / "runs.db")


def test_saved_at_the_end_and_restored_before_the_continued_runs_first_request(
    tmp_path: Path, store: Store
) -> None:
    with FakeOllama(HELLO, models=QWEN, props=True, slot_save=True) as fake:
        first = run(fake, tmp_path, store)
        (parent,) = store.runs()
        assert name_of(store, parent.id) == "localhand-slot-0.bin"
        saved = fake.saved_slots["localhand-slot-0.bin"]
        (save,) = slot_actions(fake)
        assert save == ("/slots/0?action=save", {"filename": "localhand-slot-0.bin"})
        asked = len(fake.requests)
        continued = run(fake, tmp_path, store, "And again", continue_from=parent.id)
        later = fake.requests[asked:]
    assert first.status == continued.status == "unverified"
    assert first.prefill.restored_tokens is None
    paths = [r.path for r in later if r.path != "/props"]
    restore = "/slots/0?action=restore"
    assert paths[:2] == [restore, "/v1/chat/completions"], "restored before it asks"
    assert continued.prefill.restored_tokens == saved > 0
    assert continued.to_dict()["prefill"]["restored_tokens"] == saved
    assert name_of(store, store.runs()[0].id) == "localhand-slot-1.bin"


def test_the_ring_overwrites_the_oldest_and_forgets_whose_it_was(
    tmp_path: Path, store: Store
) -> None:
    with FakeOllama(HELLO, models=QWEN, props=True, slot_save=True) as fake:
        for _ in range(3):
            assert run(fake, tmp_path, store, ring=2).output == "Hello."
        names = [p for p, _ in slot_actions(fake)]
    oldest, middle, newest = reversed(store.runs())
    assert len(names) == 3 and set(fake.saved_slots) == {
        "localhand-slot-0.bin",
        "localhand-slot-1.bin",
    }
    assert name_of(store, oldest.id) is None, "its file now holds the newest run"
    assert name_of(store, middle.id) == "localhand-slot-1.bin"
    assert name_of(store, newest.id) == "localhand-slot-0.bin"


def test_a_restore_that_fails_is_a_warning(tmp_path: Path, store: Store) -> None:
    with FakeOllama(HELLO, models=QWEN, props=True, slot_save=True) as fake:
        run(fake, tmp_path, store)
        fake.saved_slots.clear()  # the file is gone (the server's disk was cleaned)
        warnings: list[str] = []
        parent = store.runs()[0].id
        result = run(fake, tmp_path, store, "Again", continue_from=parent, warnings=warnings)
    assert result.status != "error" and result.output == "Hello.", result.error
    assert result.prefill.restored_tokens is None
    (warning,) = [w for w in warnings if "restored" in w]
    assert "localhand-slot-0.bin" in warning and "invalid slot save file" in warning


def test_a_task_run_again_gets_its_earlier_runs_cache(tmp_path: Path, store: Store) -> None:
    """A batch's retry or resume runs the same task (its id) afresh: its first prompt is the
    earlier run's, so that run's saved slot is restored."""
    with FakeOllama(HELLO, models=QWEN, props=True, slot_save=True) as fake:
        first = run(fake, tmp_path, store, task_id="batch-task-7")
        again = run(fake, tmp_path, store, task_id="batch-task-7")
        other = run(fake, tmp_path, store, task_id="batch-task-8")
        restores = [p for p, _ in slot_actions(fake) if "restore" in p]
    assert first.prefill.restored_tokens is None and other.prefill.restored_tokens is None
    assert again.prefill.restored_tokens == fake.saved_slots["localhand-slot-0.bin"]
    assert restores == ["/slots/0?action=restore"]


def test_without_slot_save_path_nothing_is_kept_and_nothing_said(
    tmp_path: Path, store: Store
) -> None:
    with FakeOllama(HELLO, models=QWEN, props=True) as fake:
        warnings: list[str] = []
        run(fake, tmp_path, store, warnings=warnings)
        parent = store.runs()[0].id
        result = run(fake, tmp_path, store, "Again", continue_from=parent, warnings=warnings)
        actions = slot_actions(fake)
    assert [path for path, _ in actions] == ["/slots/0?action=save"] * 2, "refused 501: no restore"
    assert name_of(store, parent) is None and result.prefill.restored_tokens is None
    assert warnings == []


def test_a_ring_of_none_keeps_nothing(tmp_path: Path, store: Store) -> None:
    with FakeOllama(HELLO, models=QWEN, props=True, slot_save=True) as fake:
        run(fake, tmp_path, store, ring=0)
        assert slot_actions(fake) == [] and fake.saved_slots == {}


@pytest.mark.parametrize(
    ("saving", "path", "body", "status", "message"),
    [
        (False, "/slots/0?action=save", {"filename": "a.bin"}, 501, "--slot-save-path"),
        (True, "/slots/0?action=doctor", {}, 400, "Invalid action"),
        (True, "/slots/0?action=save", {}, 400, "key 'filename' not found"),
        (True, "/slots/0?action=restore", {"filename": "../x.bin"}, 400, "Invalid filename"),
        (True, "/slots/1?action=restore", {"filename": "nope.bin"}, 400, "invalid slot save"),
    ],
)
def test_the_fake_refuses_slot_actions_as_llama_server_does(
    saving: bool, path: str, body: dict, status: int, message: str
) -> None:
    import httpx

    with FakeOllama(models=QWEN, props=True, slot_save=saving) as fake:
        answer = httpx.post(fake.url + path, json=body)
    assert answer.status_code == status
    error = answer.json()["error"]
    assert error["code"] == status and message in error["message"]
    kind = "not_supported_error" if status == 501 else "invalid_request_error"
    assert error["type"] == kind

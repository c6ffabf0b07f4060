"""localhand's own files inside a workspace (``--workspace ~``, ``LOCALHAND_HOME`` or ``--db``
in a project) are never workspace changes: not in ``files_modified``, not progress for the
stall guardrail, not in the replay archive."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from localhand import Agent
from localhand.events import EventBus
from localhand.evidence.snapshot import ChangeTracker
from localhand.models.scripted import ScriptedModel, call
from localhand.paths import OwnPaths, own_paths_in
from localhand.run.guardrails import Limits
from localhand.store import Store, open_store
from localhand.store.archive import pack

DATA = os.path.join(".local", "share", "localhand")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home directory as the workspace, with localhand's data directory where it goes by
    default (``~/.local/share/localhand``) and the run store in it."""
    root = tmp_path / "home"
    (root / DATA).mkdir(parents=True)
    (root / "notes.txt").write_text("first\n")
    monkeypatch.setenv("HOME", str(root))
    monkeypatch.delenv("LOCALHAND_HOME")
    monkeypatch.delenv("LOCALHAND_DB")
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    return root


def write_own_files(data: Path) -> None:
    for name in ("runs.db", "runs.db-wal", "runs.db-shm", "checkpoints/r1/1/data", "tasks/t.json"):
        path = data / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"written by localhand: {name}\n")


def test_the_data_directory_in_the_workspace_is_never_a_change(home: Path) -> None:
    store_files = {
        os.path.join(DATA, "runs.db" + side) for side in ("", "-wal", "-shm", "-journal")
    }
    assert own_paths_in(home) == OwnPaths(frozenset({DATA}), frozenset(store_files))
    tracker = ChangeTracker(home)
    write_own_files(home / DATA)
    (home / "notes.txt").write_text("second\n")
    assert tracker.new_changes() == {"notes.txt"}
    assert tracker.changes_in([home / DATA / "runs.db-wal", home / DATA / "tasks/t.json"]) == set()
    assert tracker.files_modified() == ["notes.txt"]


def test_a_workspace_given_through_a_symlink_still_holds_the_data_directory(
    home: Path, tmp_path: Path
) -> None:
    link = tmp_path / "link-to-home"
    link.symlink_to(home, target_is_directory=True)
    assert own_paths_in(link).dirs == {DATA}


def test_a_workspace_that_is_the_data_directory_keeps_its_other_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOCALHAND_HOME", str(tmp_path))
    monkeypatch.setenv("LOCALHAND_DB", str(tmp_path / "runs.db"))
    tracker = ChangeTracker(tmp_path)
    write_own_files(tmp_path)
    (tmp_path / "mine.txt").write_text("the user's\n")
    assert tracker.files_modified() == ["mine.txt"]


def test_a_store_opened_at_a_path_of_its_own_is_never_a_change(tmp_path: Path) -> None:
    workspace = tmp_path / "project"
    workspace.mkdir()
    store = Store(workspace / "my-runs.db")  # --db: neither LOCALHAND_DB nor the data dir
    tracker = ChangeTracker(workspace)
    store.begin_run("t")
    (workspace / "a.txt").write_text("a\n")
    assert (workspace / "my-runs.db-wal").exists()
    assert tracker.new_changes() == {"a.txt"}
    assert tracker.files_modified() == ["a.txt"]
    store.close()


def test_outside_the_workspace_nothing_is_left_out(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    assert not own_paths_in(workspace)  # conftest puts the data directory elsewhere
    (workspace / "runs.db").write_text("the project's own database\n")
    tracker = ChangeTracker(workspace)
    (workspace / "runs.db").write_text("changed by the model\n")
    assert tracker.files_modified() == ["runs.db"]


def test_the_store_writing_its_wal_is_neither_progress_nor_a_modification(home: Path) -> None:
    """The run is recorded in a store inside its own workspace: every event rewrites
    ``runs.db-wal``. The stall guardrail still sees rounds that change nothing."""
    store = open_store()
    assert Path(store.path) == home / DATA / "runs.db"
    bus = EventBus()
    bus.subscribe(store.recorder())
    script = [
        call("write_file", path="a.txt", content="a\n"),
        call("run_command", command="true"),
        call("run_command", command="true"),
        call("run_command", command="true"),
        "done",
    ]
    agent = Agent(ScriptedModel(script), home, bus=bus, limits=Limits(stall_iterations=2))
    result = agent.run("Write a.txt")
    assert (home / DATA / "runs.db-wal").exists(), "the store did write inside the workspace"
    store.close()
    assert result.files_modified == ["a.txt"]
    assert result.termination_reason == "stall"


def test_the_replay_archive_leaves_the_store_out(home: Path) -> None:
    write_own_files(home / DATA)
    archive = pack(home)
    assert archive.data is not None
    with tarfile.open(fileobj=io.BytesIO(archive.data), mode="r:gz") as tar:
        assert tar.getnames() == ["notes.txt"]

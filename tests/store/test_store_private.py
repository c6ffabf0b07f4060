"""The store is private: its directory 0700, its files 0600 (SQLite's -wal and -shm too) under
any umask, and the replay archive leaves secret-looking files out unless asked."""

from __future__ import annotations

import io
import os
import sqlite3
import stat
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from localhand.config.settings import load_settings
from localhand.events import EventBus, TaskStarted
from localhand.paths import private_data_dir
from localhand.run.task import Task
from localhand.session.recording import RunRecording
from localhand.store import Store, open_store
from localhand.store.archive import pack, unpack

NORMAL = {"main.py", "docs/readme.md", ".env.example", "keys.py", ".ssh.md", "id_rsa.pub"}
SECRET = {
    ".env",
    ".env.local",
    "app/.env.production",
    ".envrc",
    "id_rsa",
    "deploy/id_ed25519",
    "server.pem",
    "tls/private.key",
    "store.p12",
    "vault.kdbx",
    ".netrc",
    ".npmrc",
    ".git-credentials",
    "credentials",
    "gcp-credentials-prod.json",
    ".ssh/config",
    ".aws/credentials",
    ".aws/config",
    ".gnupg/pubring.kbx",
}


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def record_something(store: Store) -> None:
    run_id = store.begin_run("t1", model="m")
    store.append_event(run_id, {"type": "warning", "message": "hello"})


def test_a_new_store_is_private_under_umask_022(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, umask_022: None
) -> None:
    home = tmp_path / "share" / "localhand"
    monkeypatch.setenv("LOCALHAND_HOME", str(home))
    monkeypatch.delenv("LOCALHAND_DB")
    store = open_store()
    record_something(store)
    db = home / "runs.db"
    # While the store is open SQLite keeps its -wal and -shm files next to the database.
    files = [db, db.with_name("runs.db-wal"), db.with_name("runs.db-shm")]
    assert all(f.exists() for f in files)
    assert mode(home) == 0o700
    assert {f.name: mode(f) for f in files} == {f.name: 0o600 for f in files}
    store.close()
    # An unrelated file made meanwhile keeps the umask's mode: the umask was not changed.
    (tmp_path / "other.txt").write_text("x")
    assert mode(tmp_path / "other.txt") == 0o644


def test_a_loose_existing_store_is_tightened_on_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, umask_022: None
) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o755)
    monkeypatch.setenv("LOCALHAND_HOME", str(home))
    monkeypatch.setenv("LOCALHAND_DB", str(home / "runs.db"))
    # An older localhand's store, still open in another process: all 0644.
    older = sqlite3.connect(home / "runs.db", isolation_level=None)
    older.execute("PRAGMA journal_mode = WAL")
    older.execute("CREATE TABLE leftover (x)")
    wal, shm = home / "runs.db-wal", home / "runs.db-shm"
    assert mode(home / "runs.db") == mode(wal) == mode(shm) == 0o644
    assert mode(home) == 0o755

    with open_store() as store:
        record_something(store)
    older.close()
    assert mode(home) == 0o700
    assert mode(home / "runs.db") == 0o600
    assert not wal.exists() or mode(wal) == 0o600
    assert not shm.exists() or mode(shm) == 0o600


def test_a_folder_the_user_chose_keeps_its_mode(tmp_path: Path, umask_022: None) -> None:
    project = tmp_path / "project"
    project.mkdir(mode=0o755)
    with Store(project / "runs.db") as store:
        record_something(store)
        assert mode(project / "runs.db-wal") == 0o600
    assert mode(project) == 0o755, "not localhand's to lock: it is the user's project"
    assert mode(project / "runs.db") == 0o600

    created = tmp_path / "new" / "deeper"
    with Store(created / "runs.db") as store:
        record_something(store)
    assert mode(created) == 0o700, "a folder localhand made for the store is private"


def test_the_data_directory_is_tightened_wherever_the_store_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, umask_022: None
) -> None:
    home = tmp_path / "home"
    (home / "tasks").mkdir(parents=True)
    home.chmod(0o755)
    monkeypatch.setenv("LOCALHAND_HOME", str(home))
    with open_store(tmp_path / "elsewhere.db"):
        pass
    assert mode(home) == 0o700
    assert private_data_dir() == home
    fresh = tmp_path / "fresh"
    monkeypatch.setenv("LOCALHAND_HOME", str(fresh))
    assert private_data_dir() == fresh and mode(fresh) == 0o700


def write_workspace(root: Path) -> None:
    for name in NORMAL | SECRET:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"contents of {name}\n")


def names_in(data: bytes | None) -> set[str]:
    assert data is not None
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        return {member.name for member in tar.getmembers() if member.isfile()}


def test_the_archive_leaves_secret_looking_files_out(tmp_path: Path) -> None:
    write_workspace(tmp_path / "ws")
    kept = pack(tmp_path / "ws")
    assert names_in(kept.data) == NORMAL
    assert kept.files == len(NORMAL)
    assert "left out secret-looking files: " in kept.note
    assert ".env" in kept.note

    restored = tmp_path / "restored"
    unpack(kept.data or b"", restored)
    assert (restored / "main.py").read_text() == "contents of main.py\n"
    assert not (restored / ".env").exists() and not (restored / ".ssh").exists()


def test_the_archive_keeps_secrets_when_asked(tmp_path: Path) -> None:
    write_workspace(tmp_path / "ws")
    kept = pack(tmp_path / "ws", include_secrets=True)
    assert names_in(kept.data) == NORMAL | SECRET
    assert kept.note == ""


def test_a_recorded_run_keeps_no_secret_in_the_store(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    write_workspace(workspace)
    store = Store(tmp_path / "runs.db")
    bus = EventBus()
    bus.subscribe(store.recorder())
    bus.emit(
        TaskStarted(
            task_id="t", description="d", model="m", workspace=str(workspace), max_iterations=1
        )
    )
    run = store.runs()[0]
    kept = store.archive(run.id)
    assert kept is not None
    assert names_in(kept.data) == NORMAL
    store.close()


def test_a_run_keeps_secrets_in_its_copy_only_when_the_settings_ask(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    write_workspace(workspace)
    for asked in (False, True):
        settings = load_settings(env={"LOCALHAND_ARCHIVE_SECRETS": str(asked).lower()})
        task = Task(description="d", workspace=workspace, id=f"t{asked}")
        bus = EventBus()
        with RunRecording(task, bus, settings=settings, db=tmp_path / "runs.db") as recording:
            bus.emit(
                TaskStarted(
                    task_id=task.id,
                    description="d",
                    model="m",
                    workspace=str(workspace),
                    max_iterations=1,
                )
            )
            assert recording.store is not None and recording.run_id is not None
            kept = recording.store.archive(recording.run_id)
        assert kept is not None
        assert names_in(kept.data) == (NORMAL | SECRET if asked else NORMAL)

"""Undo does not trust checkpoint content: a forged checkpoint (its manifest rewritten, as a
model could where the data directory was in its reach) never makes ``undo`` write or delete
outside the workspace it belongs to, nor into localhand's own files there."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from localhand.safety.undo import checkpoint
from localhand.safety.undo import restore as undo
from localhand.safety.undo.checkpoint import UndoError
from workspaces import workspace_with

RUN = "run-forged"
TASK = "task-forged"


@pytest.fixture
def taken(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace with a real checkpoint of it; returns (workspace, checkpoint location)."""
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "app.py").write_text("print('app')\n")
    (ws / "README.md").write_text("# readme\n")
    kept = checkpoint.take(ws, "rm -rf *", task_id=TASK, run_id=RUN)
    (ws / "README.md").write_text("changed\n")
    return ws, kept.location


def forge(location: Path, change: Callable[[dict[str, Any]], None]) -> None:
    manifest = location / checkpoint.MANIFEST
    data = json.loads(manifest.read_text())
    change(data)
    manifest.write_text(json.dumps(data))


def found(ws: Path) -> list[checkpoint.Checkpoint]:
    return undo.find(RUN, TASK, 0.0, None, str(ws))


def restore(ws: Path) -> None:
    """What ``localhand undo RUN --yes`` does: find, plan, restore."""
    (chosen,) = found(ws)
    undo.undo(chosen, undo.plan_undo(chosen))


def test_an_honest_checkpoint_still_restores(taken: tuple[Path, Path]) -> None:
    ws, _ = taken
    restore(ws)
    assert (ws / "README.md").read_text() == "# readme\n"


def test_a_checkpoint_naming_another_workspace_is_refused(
    taken: tuple[Path, Path], tmp_path: Path
) -> None:
    ws, location = taken
    victim = workspace_with(tmp_path / "victim", {"precious": "keep me\n"})
    forge(location, lambda data: data.update(workspace=str(victim)))
    with pytest.raises(UndoError, match="not the run's"):
        found(ws)
    assert sorted(p.name for p in victim.iterdir()) == ["precious"]


@pytest.mark.parametrize(
    ("entry", "why"),
    [
        ({"path": "../victim/evil", "kind": "file"}, "outside its workspace"),
        ({"path": "/etc/evil", "kind": "file"}, "outside its workspace"),
        ({"path": "src/./x", "kind": "file"}, "outside its workspace"),
        ({"path": ".venv/lib/site-packages/evil.pth", "kind": "file"}, "copy nothing"),
        ({"path": "node_modules/x/index.js", "kind": "file"}, "copy nothing"),
        ({"path": "run.sh", "kind": "file", "mode": 0o4755}, "set-user-ID"),
        ({"path": "x", "kind": "device"}, "wrong type"),
        ({"path": "y", "kind": "file", "size": -5}, "negative"),
        ({"path": "README.md", "kind": "file"}, "twice"),
    ],
)
def test_a_forged_entry_is_refused_before_anything_is_written(
    taken: tuple[Path, Path], tmp_path: Path, entry: dict[str, Any], why: str
) -> None:
    ws, location = taken
    forge(location, lambda data: data["entries"].append(entry))
    before = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    with pytest.raises(UndoError, match=why):
        restore(ws)
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == before
    assert (ws / "README.md").read_text() == "changed\n"


def test_a_symlinked_checkpoint_directory_is_not_followed(
    taken: tuple[Path, Path], tmp_path: Path
) -> None:
    ws, location = taken
    elsewhere = tmp_path / "elsewhere"
    os.rename(location, elsewhere)
    location.symlink_to(elsewhere)
    assert found(ws) == []


def test_localhand_own_files_in_the_workspace_are_left_alone(
    taken: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, _ = taken
    own = ws / "src"  # as if localhand's package lived here (an editable install)
    from localhand.safety.box import own_files

    monkeypatch.setattr(own_files, "install_paths", lambda: (str(own),))
    (own / "app.py").write_text("print('planted by a forged checkpoint? no: kept')\n")
    (own / "new.py").write_text("new\n")
    (chosen,) = found(ws)
    plan = undo.plan_undo(chosen)
    assert all(not e.path.startswith("src/") for e in plan.restore)
    assert all(not p.startswith("src") for p in (*plan.remove, *plan.remove_dirs))
    undo.undo(chosen, plan)
    assert (own / "new.py").exists() and "kept" in (own / "app.py").read_text()
    assert (ws / "README.md").read_text() == "# readme\n"

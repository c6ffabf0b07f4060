from __future__ import annotations

import os
import time
from pathlib import Path

from localhand.snapshot import RACY_NS, ChangeTracker, Snapshot


def test_real_edits_are_seen_and_same_bytes_rewrites_are_not(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("a = 1\n")
    (tmp_path / "b.py").write_text("b = 1\n")
    tracker = ChangeTracker(tmp_path)
    assert tracker.new_changes() == set()

    (tmp_path / "a.py").write_text("a = 2\n")
    (tmp_path / "b.py").write_text("b = 1\n")  # same bytes, new mtime
    os.utime(tmp_path / "b.py", ns=(1, 1))
    (tmp_path / "new.txt").write_text("x")
    assert tracker.new_changes() == {"a.py", "new.txt"}
    assert tracker.new_changes() == set()

    (tmp_path / "a.py").write_text("a = 1\n")  # back to the original: activity, not a modification
    assert tracker.new_changes() == {"a.py"}
    assert tracker.files_modified() == ["new.txt"]


def test_caches_and_git_internals_are_ignored(tmp_path: Path) -> None:
    tracker = ChangeTracker(tmp_path)
    for name in (".git/index", "__pycache__/m.cpython-311.pyc", "pkg/__pycache__/x.pyc", "m.pyc"):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
    assert tracker.new_changes() == set()
    assert tracker.files_modified() == []


def test_deleted_files_count(tmp_path: Path) -> None:
    (tmp_path / "gone.py").write_text("x")
    tracker = ChangeTracker(tmp_path)
    (tmp_path / "gone.py").unlink()
    assert tracker.files_modified() == ["gone.py"]


def test_fifo_is_never_opened(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    tracker = ChangeTracker(tmp_path)  # would block forever if it read the FIFO
    os.utime(tmp_path / "pipe", ns=(1, 1))
    assert tracker.new_changes() == {"pipe"}
    assert tracker.files_modified() == ["pipe"]


def test_changes_in_named_files_match_what_a_walk_finds(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("a = 1\n")
    (tmp_path / "b.py").write_text("b = 1\n")
    (tmp_path / "gone.py").write_text("x")
    tracker = ChangeTracker(tmp_path)
    (tmp_path / "a.py").write_text("a = 2\n")
    (tmp_path / "b.py").write_text("b = 1\n")  # same bytes, new mtime
    (tmp_path / "gone.py").unlink()
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "new.txt").write_text("x")
    (tmp_path / "to-sub").symlink_to("sub", target_is_directory=True)
    (tmp_path / "to-a").symlink_to("a.py")
    named = [tmp_path / "a.py", "b.py", tmp_path / "gone.py", "sub/new.txt", "sub", "to-sub"]
    assert tracker.changes_in(named) == {"a.py", "gone.py", os.path.join("sub", "new.txt")}
    assert tracker.changes_in(named) == set()
    assert tracker.new_changes() == {"to-a"}, "what changes_in saw is not counted again"
    (tmp_path / "a.py").write_text("a = 1\n")
    assert tracker.new_changes() == {"a.py"}
    assert tracker.files_modified() == ["gone.py", os.path.join("sub", "new.txt"), "to-a"]


def test_changes_in_leaves_out_what_a_walk_does_not_see(tmp_path: Path) -> None:
    tracker = ChangeTracker(tmp_path)
    outside = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    named = [".git/config", "pkg/__pycache__/x.txt", "m.pyc", outside, tmp_path, "..", "."]
    for path in named[:4]:
        target = tmp_path / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("x")
    assert tracker.changes_in(named) == set()
    assert tracker.new_changes() == set()


def test_an_edit_within_the_same_timestamp_tick_is_seen(tmp_path: Path) -> None:
    """Racily clean (git's term): the edit keeps the size and, as a coarse file system clock
    can, the mtime; only the contents tell."""
    target = tmp_path / "calc.py"
    target.write_text("return a - b\n")
    tracker = ChangeTracker(tmp_path)
    before = target.stat()
    target.write_text("return a + b\n")
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert tracker.new_changes() == {"calc.py"}
    assert tracker.files_modified() == ["calc.py"]


def test_an_old_file_is_not_hashed_again_when_its_stat_is_unchanged(tmp_path: Path) -> None:
    target = tmp_path / "old.txt"
    target.write_text("same\n")
    old = time.time_ns() - 10 * RACY_NS
    os.utime(target, ns=(old, old))
    before = Snapshot.take(tmp_path)
    assert Snapshot.take(tmp_path).changed_since(before) == set()

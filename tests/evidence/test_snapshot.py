from __future__ import annotations

import os
from pathlib import Path

import pytest

from localhand.evidence.snapshot import RACY_NS, ChangeTracker, FileState, Snapshot


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
    new = os.path.join("sub", "new.txt")
    assert tracker.changes_in(named) == {"a.py", "gone.py", new, "to-sub"}  # a link is an entry
    assert tracker.changes_in(named) == set()
    assert tracker.new_changes() == {"to-a"}, "what changes_in saw is not counted again"
    (tmp_path / "a.py").write_text("a = 1\n")
    assert tracker.new_changes() == {"a.py"}
    assert tracker.files_modified() == ["gone.py", new, "to-a", "to-sub"]


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
    (tmp_path / "old.txt").write_text("same\n")
    before = Snapshot.take(tmp_path)
    before.taken_ns += 10 * RACY_NS  # as if taken long after the file's last change
    assert Snapshot.take(tmp_path).changed_since(before) == set()


@pytest.mark.parametrize(
    ("mtime", "ctime", "racy"),
    [
        (0, 0, True),  # modified as the snapshot began: the same tick may hold another edit
        (5, 5, True),  # after it began (the walk takes time)
        (-RACY_NS, -RACY_NS, True),  # the margin: a coarse clock's tick
        (-RACY_NS - 1, -RACY_NS - 1, False),  # older than the snapshot: its stat vouches
        (-10 * RACY_NS, 0, True),  # an old mtime set back on a file just written (touch -r)
    ],
)
def test_a_file_not_older_than_its_snapshot_is_compared_by_content(
    tmp_path: Path, mtime: int, ctime: int, racy: bool
) -> None:
    """git's rule: a file whose mtime is not older than the snapshot that recorded it may
    have changed again within the same timestamp tick, so the next comparison reads it."""
    taken = 100 * RACY_NS
    state = FileState(6, taken + mtime, ctime_ns=taken + ctime)
    before = Snapshot(tmp_path, {"f.txt": state}, taken_ns=taken)
    after = Snapshot(tmp_path, {"f.txt": state}, taken_ns=taken + 10 * RACY_NS)
    assert after.changed_since(before) == ({"f.txt"} if racy else set())


def test_an_edit_whose_mtime_was_set_back_is_seen(tmp_path: Path) -> None:
    """``cp -p``, ``touch -r`` or ``rsync -t``: same size, the old mtime, new contents."""
    target = tmp_path / "calc.py"
    target.write_text("return a - b\n")
    old = 1_000_000_000 * 1_000_000_000
    os.utime(target, ns=(old, old))
    tracker = ChangeTracker(tmp_path)
    target.write_text("return a + b\n")
    os.utime(target, ns=(old, old))
    assert tracker.new_changes() == {"calc.py"}
    assert tracker.files_modified() == ["calc.py"]


def test_what_the_file_tools_wrote_is_compared_by_content_at_the_end(tmp_path: Path) -> None:
    """Even where the file system's stat shows nothing (no ctime, timestamps coarser than
    the margin): the files the tools reported are hashed again for the Result."""
    (tmp_path / "a.py").write_text("a = 1\n")
    (tmp_path / "b.py").write_text("b = 1\n")
    tracker = ChangeTracker(tmp_path)
    (tmp_path / "a.py").write_text("a = 2\n")
    (tmp_path / "b.py").write_text("b = 2\n")
    assert tracker.changes_in([tmp_path / "a.py"]) == {"a.py"}
    # The stat, as such a file system would show it: as it was at the start of the run.
    for name in ("a.py", "b.py"):
        tracker.baseline.files[name] = Snapshot.of(tmp_path, [name]).files[name]
    tracker.baseline.taken_ns += 10 * RACY_NS  # and long after its last change
    assert tracker.files_modified() == ["a.py"], "b.py was not reported, and its stat says no"


def test_a_walk_compares_what_the_file_tools_wrote_by_content(tmp_path: Path) -> None:
    """A round with a command and a write walks the workspace; the written file is read
    even where its stat shows nothing (as above), and counted once."""
    (tmp_path / "a.py").write_text("a = 1\n")
    tracker = ChangeTracker(tmp_path)
    tracker._last.taken_ns += 10 * RACY_NS  # the last walk long after a.py's last change
    (tmp_path / "a.py").write_text("a = 2\n")
    tracker._last.files["a.py"] = Snapshot.of(tmp_path, ["a.py"]).files["a.py"]
    assert tracker.new_changes() == set(), "by its stat alone, nothing changed"
    tracker._last.taken_ns += 10 * RACY_NS
    assert tracker.new_changes([tmp_path / "a.py"]) == {"a.py"}
    assert tracker.new_changes([tmp_path / "a.py"]) == set(), "counted once"

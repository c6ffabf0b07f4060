"""Undo: find a run's checkpoints and put its workspace back as one of them kept it.

``localhand undo RUN`` (wiring in ``localhand.cli.undo``) finds the run's checkpoints
(``find``), shows what would change (``plan_undo``) and then changes exactly that (``undo``).
What a checkpoint holds, and what it leaves out, is ``localhand.safety.undo.checkpoint``'s; what was
left out is neither compared nor touched here.

Undo runs in a workspace that a command the classifier called dangerous may have rearranged,
so nothing met there is trusted: the workspace must still be the directory the checkpoint was
taken of, every path is reached through real directories (a symlink on the way is replaced,
never followed), and each file is written back through a temporary file renamed over it.

Nor is the checkpoint itself trusted, although it lives in the data directory that commands
can neither read nor write: a forged one must not make undo write or delete outside its
workspace (``checked``). Its workspace must be the run's own, every path a plain relative one
(no ``..``, no absolute path) outside what checkpoints leave out (``.venv``...), every kind
and number what ``take`` writes, and no mode it restores carries set-user-ID, set-group-ID or
sticky bits. localhand's own files in the workspace (its installation, its data directory) are
left as they are, like what a checkpoint leaves out.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from localhand.paths import IGNORED_SUFFIXES, PRIVATE_DIR_MODE, REBUILT_DIRS
from localhand.safety.box.own_files import protected
from localhand.safety.undo.checkpoint import (
    DATA,
    MANIFEST,
    Checkpoint,
    Entry,
    UndoError,
    checkpoints_home,
    load,
    run_key,
    scan,
)
from localhand.safety.undo.copying import CHUNK, CLOEXEC, NOFOLLOW, Copier, create_private


@dataclass(frozen=True, slots=True)
class UndoPlan:
    """What ``undo`` changes: nothing else in the workspace is touched."""

    restore: tuple[Entry, ...]
    """Files and symlinks missing or different now, written back."""
    remove: tuple[str, ...]
    """Files and symlinks that were not there at the checkpoint."""
    create: tuple[str, ...] = ()
    """Directories missing now."""
    remove_dirs: tuple[str, ...] = ()
    """Directories that were not there at the checkpoint (removed once empty)."""
    unchanged: int = 0

    @property
    def empty(self) -> bool:
        return not (self.restore or self.remove or self.create or self.remove_dirs)


# -- finding ---------------------------------------------------------------------------------
def find(
    run_id: str,
    task_id: str,
    started_at: float,
    finished_at: float | None,
    workspace: str | None = None,
) -> list[Checkpoint]:
    """The checkpoints of a run, oldest first and numbered from 1: those filed under its run
    id, and those filed under its task id (a run the runner could not name) that were taken
    while it ran. With ``workspace`` (the run's, from the store), one of another workspace is
    refused: it was not taken by this run."""
    home = checkpoints_home()
    found = list(_load_all(home / run_key(run_id, task_id)))
    by_task = home / run_key(None, task_id)
    end = (finished_at if finished_at is not None else time.time()) + 1
    for checkpoint in _load_all(by_task):
        if checkpoint.task_id == task_id and started_at - 1 <= checkpoint.taken_at <= end:
            found.append(checkpoint)
    if workspace is not None:
        expected = os.path.realpath(workspace)
        for checkpoint in found:
            if os.path.realpath(checkpoint.workspace) != expected:
                raise UndoError(
                    f"the checkpoint in {checkpoint.location} names the workspace "
                    f"{checkpoint.workspace}, not the run's {workspace}; it was not taken by "
                    "this run, so nothing was restored (remove it if you did not put it there)"
                )
    found.sort(key=lambda c: c.taken_at)
    return [replace(c, number=i) for i, c in enumerate(found, 1)]


def _load_all(run_dir: Path) -> Iterator[Checkpoint]:
    if run_dir.is_symlink() or not run_dir.is_dir():
        return  # a link in the checkpoints' directory was not made by localhand
    for path in run_dir.iterdir():
        if path.name.isdigit() and not path.is_symlink() and (path / MANIFEST).is_file():
            yield load(path)


# -- undoing ---------------------------------------------------------------------------------
def workspace_root(checkpoint: Checkpoint) -> str:
    """The checkpoint's workspace, checked: it must still exist, and still be itself (no
    symlink on its path now leads somewhere else)."""
    root = str(checkpoint.workspace)
    if not os.path.isdir(root):
        raise UndoError(
            f"the workspace {root} no longer exists, so nothing was restored; create the "
            "directory again (mkdir -p) and rerun undo to fill it"
        )
    if os.path.realpath(root) != root:
        raise UndoError(
            f"the workspace path {root} now leads to {os.path.realpath(root)} (a symlink on "
            "its way), so nothing was restored; put the directory back where it was and rerun "
            "undo"
        )
    checked(checkpoint)
    return root


def checked(checkpoint: Checkpoint) -> None:
    """``UndoError`` unless every entry of ``checkpoint`` is one ``take`` could have written
    (see the module's text)."""
    seen: set[str] = set()
    for entry in checkpoint.entries:
        problem = _entry_problem(entry, seen)
        if problem is not None:
            raise UndoError(
                f"the checkpoint in {checkpoint.location} is not one localhand took: its entry "
                f"{entry.path!r} {problem}; nothing was restored (remove that checkpoint)"
            )
        seen.add(entry.path)


def _entry_problem(entry: Entry, seen: set[str]) -> str | None:
    """What is wrong with ``entry``, or None."""
    path = entry.path
    if not isinstance(path, str) or entry.kind not in ("file", "link", "dir"):
        return "has a kind or path of the wrong type"
    parts = path.split("/")  # each a plain name: ``load`` refuses any other path
    if path in seen:
        return "is listed twice"
    if any(part in REBUILT_DIRS for part in parts) or (
        entry.kind == "file" and path.endswith(IGNORED_SUFFIXES)
    ):
        return "lies where checkpoints copy nothing"
    numbers = (entry.mode, entry.size, entry.mtime_ns, entry.offset)
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in numbers):
        return "has a negative or non-integer size, mode, time or offset"
    if entry.mode & ~0o777:
        return "has set-user-ID, set-group-ID or sticky bits"
    if not isinstance(entry.target, str) or "\0" in entry.target:
        return "has a link target that is not text"
    return None


def plan_undo(checkpoint: Checkpoint) -> UndoPlan:
    """Compare the workspace with ``checkpoint``: what ``undo`` will write back and remove.
    Files are compared byte for byte (and by mode); what was left out is not looked at, nor
    are localhand's own files."""
    root = workspace_root(checkpoint)
    current = dict(scan(root, frozenset(checkpoint.left_out))[0])
    restore, create = [], []
    unchanged = 0
    with _opened_data(checkpoint) as data:
        for entry in checkpoint.entries:
            if protected(os.path.join(root, entry.path)) is not None:
                continue  # localhand's own: never written by undo either
            st = current.get(entry.path)
            if entry.kind == "dir":
                if st is None or not stat.S_ISDIR(st.st_mode):
                    create.append(entry.path)
            elif _same(entry, st, os.path.join(root, entry.path), data):
                unchanged += 1
            else:
                restore.append(entry)
    known = {entry.path for entry in checkpoint.entries}
    extra = [
        (rel, st)
        for rel, st in current.items()
        if rel not in known and protected(os.path.join(root, rel)) is None
    ]
    return UndoPlan(
        restore=tuple(restore),
        remove=tuple(rel for rel, st in extra if not stat.S_ISDIR(st.st_mode)),
        create=tuple(create),
        remove_dirs=tuple(rel for rel, st in extra if stat.S_ISDIR(st.st_mode)),
        unchanged=unchanged,
    )


@contextlib.contextmanager
def _opened_data(checkpoint: Checkpoint) -> Iterator[int]:
    try:
        fd = os.open(checkpoint.location / DATA, os.O_RDONLY | NOFOLLOW | CLOEXEC)
    except OSError as exc:
        raise UndoError(
            f"the checkpoint in {checkpoint.location} cannot be read ({exc.strerror}); "
            "nothing was restored"
        ) from None
    try:
        yield fd
    finally:
        os.close(fd)


def _same(entry: Entry, st: os.stat_result | None, path: str, data: int) -> bool:
    if st is None:
        return False
    if entry.kind == "link":
        return stat.S_ISLNK(st.st_mode) and os.readlink(path) == entry.target
    if not stat.S_ISREG(st.st_mode) or st.st_size != entry.size:
        return False
    return stat.S_IMODE(st.st_mode) == entry.mode and _same_bytes(path, data, entry)


def _same_bytes(path: str, data: int, entry: Entry) -> bool:
    """Whether the file at ``path`` holds exactly ``entry``'s bytes in ``data``."""
    offset, end = entry.offset, entry.offset + entry.size
    with open(path, "rb") as current:
        while offset < end:
            want = min(CHUNK, end - offset)
            kept = os.pread(data, want, offset)
            if not kept or current.read(want) != kept:
                return False
            offset += len(kept)
        return current.read(1) == b""


def undo(checkpoint: Checkpoint, plan: UndoPlan) -> None:
    """Carry out ``plan``: remove what is new, recreate directories, write each file back
    through a temporary file renamed over it (a file is either as it was or as it is, never
    half written), and restore modes and modification times. Every path is reached through
    real directories of the workspace: a symlink met on the way is replaced, never followed,
    so nothing outside the workspace is touched."""
    root = workspace_root(checkpoint)
    with _opened_data(checkpoint) as data:
        for rel in plan.remove:
            _remove(root, rel)
        for rel in sorted(plan.remove_dirs, key=_depth, reverse=True):
            # One that still holds what undo leaves alone (a left-out directory) stays.
            path = _existing(root, rel)
            if path is not None:
                with contextlib.suppress(OSError):
                    os.rmdir(path)
        for rel in sorted(plan.create, key=_depth):
            _real_dir(root, rel)
        copier = Copier()
        for entry in plan.restore:
            _put(root, entry, data, copier)

    for entry in sorted(checkpoint.entries, key=lambda e: _depth(e.path), reverse=True):
        if entry.kind == "dir" and protected(os.path.join(root, entry.path)) is None:
            path = _real_dir(root, entry.path)
            if stat.S_IMODE(os.lstat(path).st_mode) != entry.mode:
                os.chmod(path, entry.mode)


def _depth(rel: str) -> int:
    return rel.count("/")


def _name(rel: str) -> str:
    return rel.rsplit("/", 1)[-1]


def _real_dir(root: str, rel: str) -> str:
    """``root/rel`` as a real directory, made so component by component: a file or symlink
    in the way is removed (itself, never what it points to) and a directory made instead."""
    path = root
    for part in rel.split("/"):
        path = os.path.join(path, part)
        try:
            if stat.S_ISDIR(os.lstat(path).st_mode):
                continue
            os.unlink(path)
        except FileNotFoundError:
            pass
        os.mkdir(path, PRIVATE_DIR_MODE)  # its own mode is set once its files are back
    return path


def _real_parent(root: str, rel: str) -> str:
    parent = rel.rpartition("/")[0]
    return _real_dir(root, parent) if parent else root


def _existing(root: str, rel: str) -> str | None:
    """``root/rel`` if every directory on its way is a real one (no symlink), else None."""
    path = root
    for part in rel.split("/")[:-1]:
        path = os.path.join(path, part)
        try:
            if not stat.S_ISDIR(os.lstat(path).st_mode):
                return None
        except FileNotFoundError:
            return None
    return os.path.join(path, _name(rel))


def _remove(root: str, rel: str) -> None:
    path = _existing(root, rel)
    if path is None:
        return
    try:
        if stat.S_ISDIR(os.lstat(path).st_mode):
            shutil.rmtree(path)
        else:
            os.unlink(path)
    except FileNotFoundError:
        pass


def _put(root: str, entry: Entry, data: int, copier: Copier) -> None:
    """Write ``entry`` back: to a temporary name beside it, then renamed over what is there."""
    parent = _real_parent(root, entry.path)
    path = os.path.join(parent, _name(entry.path))
    temporary = os.path.join(parent, f".localhand-undo-{uuid.uuid4().hex[:12]}")
    try:
        if entry.kind == "link":
            os.symlink(entry.target, temporary)
        else:
            fd = create_private(temporary)
            try:
                if copier.copy(data, fd, entry.size, entry.offset) != entry.size:
                    raise UndoError(f"the checkpoint's copy of {entry.path} is cut short")
                os.fchmod(fd, entry.mode)
                os.utime(fd, ns=(entry.mtime_ns, entry.mtime_ns))
            finally:
                os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISDIR(os.lstat(path).st_mode):
                shutil.rmtree(path)  # a directory now stands where the file was
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise

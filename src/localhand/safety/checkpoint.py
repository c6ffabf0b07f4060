"""Checkpoints: a copy of the workspace taken before a dangerous command, and its undo.

The sandbox keeps commands inside the workspace, not from destroying it: ``rm -rf *``,
``git reset --hard``, ``git clean -fdx`` and ``rm -rf .git`` all stay inside. The classifier
asks a person first, and people say yes to commands they regret. So before a command the
classifier calls dangerous runs, the workspace is copied into localhand's private data
directory, and ``localhand undo RUN`` puts it back (see ``plan_undo`` and ``undo``).

What is copied: every file, symlink (as a link) and directory of the workspace, ``.git``
included, because ``git reset --hard`` rewrites the index and the branch and ``rm -rf .git``
takes the history; untracked and ignored files too (``.env``, local notes), because
``git clean -fdx`` deletes exactly those. Secret-looking files are kept, unlike in the store's
replay archive (kept for good and read by the dashboard): a checkpoint is local, 0600 in a 0700
directory, and those files are among the most worth having back. Left out: what tools
regenerate (``LEFT_OUT_DIRS``: ``node_modules``, ``.venv``, caches), and FIFOs, sockets and
devices. Undo leaves what was left out as it finds it. A workspace of more than ``MAX_BYTES``
or ``MAX_FILES`` is not copied at all, and the tool result says so.

Contents are copied, never hard-linked: a hard link shares the inode, so a command that
rewrites a file in place would rewrite its checkpoint too. They are appended to one data file
(``copy_file_range``, in the kernel), not copied as a tree: creating a file costs far more
than copying a small one, and on a busy disk it is the whole cost (1,000 files of 4 KiB:
about 13 ms into one file, 0.3 to 1 s as 1,000 new files on the machine this was measured on).

Layout: ``<data dir>/checkpoints/<run id>/<n>/`` holds ``data`` (the contents, end to end) and
``manifest.json`` (workspace, command, time, and each entry's kind, mode, mtime, and where its
bytes are in ``data``). A checkpoint is written under a temporary name and renamed when
complete, so a half-taken one is never offered. Checkpoints of runs untouched for
``KEEP_DAYS`` are removed when a new one is taken.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import shutil
import stat
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from localhand.errors import ConfigError
from localhand.paths import (
    PRIVATE_DIR_MODE,
    PRIVATE_FILE_MODE,
    data_dir,
    private_data_dir,
    private_dir,
)

MAX_BYTES = 100 * 1024 * 1024
MAX_FILES = 20_000
"""Past either, no checkpoint: copying a monorepo before every dangerous command would cost
seconds each time and fill the disk."""
KEEP_DAYS = 14
LEFT_OUT_DIRS = frozenset(
    {"node_modules", ".venv", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"}
)
"""Directory names never copied (nor touched by undo): large, and rebuilt by their tools."""
LEFT_OUT_SUFFIXES = (".pyc", ".pyo")
MANIFEST = "manifest.json"
DATA = "data"

_RUN_KEY = re.compile(r"[A-Za-z0-9_-]{1,64}")
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # a FIFO swapped in must not block the open
_CHUNK = 1 << 20

Kind = Literal["file", "link", "dir"]


class UndoError(ConfigError):
    """Undo cannot go ahead: the message says why and what to do."""


class TooBig(Exception):
    """The workspace is over the size limits: no checkpoint was taken."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One path of the workspace at the checkpoint, relative and ``/``-separated."""

    path: str
    kind: Kind
    mode: int = 0
    size: int = 0
    mtime_ns: int = 0
    offset: int = 0
    """Where a file's bytes start in the checkpoint's data file."""
    target: str = ""
    """A symlink's target, as it was written."""


@dataclass(frozen=True, slots=True)
class Checkpoint:
    location: Path
    """The checkpoint's directory (``data`` and ``manifest.json`` in it)."""
    workspace: Path
    command: str
    taken_at: float
    task_id: str
    run_id: str | None
    entries: tuple[Entry, ...]
    left_out: tuple[str, ...] = ()
    bytes: int = 0
    number: int = 0
    """1-based position among its run's checkpoints, oldest first (``undo --checkpoint N``)."""


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


def checkpoints_home() -> Path:
    """``checkpoints/`` in localhand's data directory (0700)."""
    return private_dir(private_data_dir() / "checkpoints")


def run_key(run_id: str | None, task_id: str) -> str:
    """The directory a run's checkpoints go in: its run id, or, when the run id is not known
    (a run not recorded by this process's store), one derived from the task id, which
    ``find`` then matches by time."""
    if run_id is not None and _RUN_KEY.fullmatch(run_id):
        return run_id
    return "task-" + hashlib.sha256(task_id.encode()).hexdigest()[:16]


# -- taking ----------------------------------------------------------------------------------
def checkpoint_note(workspace: Path, command: str, *, task_id: str, run_id: str | None) -> str:
    """Take a checkpoint before ``command`` and return the line for its tool result, which
    says whether one was taken. Never raises for the file system: a checkpoint that cannot be
    taken is reported, and the approved command still runs."""
    undo = f"localhand undo {run_id or 'RUN'}"
    try:
        take(workspace, command, task_id=task_id, run_id=run_id)
    except TooBig as exc:
        return f"[No checkpoint was taken ({exc}); `{undo}` cannot restore what this changes.]"
    except OSError as exc:
        why = exc.strerror or str(exc)
        return f"[No checkpoint was taken ({why}); `{undo}` cannot restore what this changes.]"
    return f"[A checkpoint of the workspace was taken first; the user can restore it: `{undo}`.]"


def take(
    workspace: Path,
    command: str,
    *,
    task_id: str,
    run_id: str | None,
    max_bytes: int | None = None,
    max_files: int | None = None,
) -> Checkpoint:
    """Copy ``workspace`` into a new checkpoint of the run; ``TooBig`` when it is over the
    limits (default ``MAX_BYTES`` and ``MAX_FILES``; nothing is copied then)."""
    max_bytes = MAX_BYTES if max_bytes is None else max_bytes
    max_files = MAX_FILES if max_files is None else max_files
    root = os.path.realpath(workspace)
    home = checkpoints_home()
    taken_at = time.time()
    found, left_out = _scan(root)
    total = sum(st.st_size for _, st in found if stat.S_ISREG(st.st_mode))
    if total > max_bytes or len(found) > max_files:
        raise TooBig(
            f"the workspace has more than {max_bytes / 2**20:g} MiB or {max_files:,} files, "
            "caches, node_modules and .venv aside"
        )
    key = run_key(run_id, task_id)
    _prune(home, keep=key)
    run_dir = private_dir(home / key)
    partial = run_dir / f".partial-{uuid.uuid4().hex}"
    os.mkdir(partial, PRIVATE_DIR_MODE)
    try:
        entries = _copy_tree(root, found, partial / DATA, left_out)
        checkpoint = Checkpoint(
            location=partial,
            workspace=Path(root),
            command=command,
            taken_at=taken_at,
            task_id=task_id,
            run_id=run_id,
            entries=tuple(entries),
            left_out=tuple(left_out),
            bytes=total,
        )
        _write_private(partial / MANIFEST, json.dumps(_to_json(checkpoint)).encode())
        return replace(checkpoint, location=_publish(partial, run_dir))
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise


def _scan(
    root: str, left: frozenset[str] = frozenset()
) -> tuple[list[tuple[str, os.stat_result]], list[str]]:
    """Every path under ``root`` (relative, top-down) with its lstat, and what was left out:
    ``LEFT_OUT_DIRS``, the paths in ``left`` (directories end in ``/``), directories that
    cannot be read, and localhand's own data directory should it lie inside the workspace.
    Symlinked directories are listed as links, never entered."""
    found: list[tuple[str, os.stat_result]] = []
    left_out: list[str] = []
    own = os.path.realpath(data_dir())
    stack = [("", root)]
    while stack:
        prefix, directory = stack.pop()
        try:
            with os.scandir(directory) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError:
            if not prefix:
                raise
            left_out.append(prefix)  # unreadable: neither copied nor, by undo, touched
            continue
        for item in entries:
            rel = prefix + item.name
            try:
                st = item.stat(follow_symlinks=False)
            except OSError:
                continue  # gone since it was listed
            if stat.S_ISDIR(st.st_mode):
                if item.name in LEFT_OUT_DIRS or rel + "/" in left or item.path == own:
                    left_out.append(rel + "/")
                    continue
                found.append((rel, st))
                stack.append((rel + "/", item.path))
            elif (
                (stat.S_ISLNK(st.st_mode) or stat.S_ISREG(st.st_mode))
                and not item.name.endswith(LEFT_OUT_SUFFIXES)
                and rel not in left
            ):
                found.append((rel, st))
    return found, left_out


def _copy_tree(
    root: str, found: list[tuple[str, os.stat_result]], data: Path, left_out: list[str]
) -> list[Entry]:
    """Append the contents of the files ``_scan`` found to ``data``; the entries of the
    manifest. A file that cannot be read is added to ``left_out`` (undo leaves it alone too)."""
    out = _create_private(data)
    copier = _Copier()
    entries = []
    try:
        for rel, st in found:
            source = os.path.join(root, rel)
            mode = stat.S_IMODE(st.st_mode)
            if stat.S_ISDIR(st.st_mode):
                entries.append(Entry(rel, "dir", mode))
            elif stat.S_ISLNK(st.st_mode):
                entries.append(Entry(rel, "link", target=os.readlink(source)))
            else:
                offset = os.lseek(out, 0, os.SEEK_CUR)
                try:
                    size = copier.append(source, out)
                except FileNotFoundError:
                    continue  # gone since the scan: nothing to keep
                except PermissionError:
                    left_out.append(rel)
                    continue
                entries.append(Entry(rel, "file", mode, size, st.st_mtime_ns, offset))
    finally:
        os.close(out)
    return entries


class _Copier:
    """Copies bytes in the kernel (``copy_file_range``) where it can, else by read and write,
    remembering a failure so that each file does not try again."""

    def __init__(self) -> None:
        self.in_kernel = hasattr(os, "copy_file_range")

    def append(self, source: str, out: int) -> int:
        """Copy the regular file ``source`` (never followed if a symlink) to ``out`` at its
        position; the bytes copied."""
        fin = os.open(source, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC)
        try:
            if not stat.S_ISREG(os.fstat(fin).st_mode):
                raise FileNotFoundError(errno.ENOENT, "no longer a regular file", source)
            return self.copy(fin, out)
        finally:
            os.close(fin)

    def copy(self, fin: int, fout: int, size: int | None = None, offset: int | None = None) -> int:
        """Copy from ``fin`` (at ``offset``, else its position) to ``fout``'s position:
        ``size`` bytes, or up to the end; the bytes copied."""
        done, left = 0, (1 << 62) if size is None else size
        if self.in_kernel:
            try:
                while left and (n := os.copy_file_range(fin, fout, min(left, 1 << 30), offset)):
                    done, left = done + n, left - n
                    offset = None if offset is None else offset + n
                return done
            except OSError:
                if done:
                    raise
                self.in_kernel = False
        while left:
            want = min(left, _CHUNK)
            chunk = os.read(fin, want) if offset is None else os.pread(fin, want, offset)
            if not chunk:
                break
            view = memoryview(chunk)
            while view:
                view = view[os.write(fout, view) :]
            done, left = done + len(chunk), left - len(chunk)
            offset = None if offset is None else offset + len(chunk)
        return done


def _create_private(path: Path | str) -> int:
    """A new file, 0600 whatever the umask, open for writing; never through a symlink."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
    return os.open(path, flags, PRIVATE_FILE_MODE)


def _write_private(path: Path, data: bytes) -> None:
    with os.fdopen(_create_private(path), "wb") as out:
        out.write(data)


def _publish(partial: Path, run_dir: Path) -> Path:
    """Rename the finished checkpoint to the run's next number."""
    number = 1 + max((int(p.name) for p in run_dir.iterdir() if p.name.isdigit()), default=0)
    while True:
        final = run_dir / str(number)
        try:
            os.rename(partial, final)
            return final
        except OSError as exc:  # taken meanwhile (another thread of the same run)
            if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                raise
            number += 1


def _prune(home: Path, *, keep: str) -> None:
    """Remove the checkpoints of runs untouched for ``KEEP_DAYS`` (best effort)."""
    cutoff = time.time() - KEEP_DAYS * 86400
    try:
        runs = list(os.scandir(home))
    except OSError:
        return
    for run in runs:
        try:
            old = run.stat(follow_symlinks=False).st_mtime < cutoff
        except OSError:
            continue
        if old and run.name != keep and run.is_dir(follow_symlinks=False):
            shutil.rmtree(run.path, ignore_errors=True)


# -- finding ---------------------------------------------------------------------------------
def find(
    run_id: str, task_id: str, started_at: float, finished_at: float | None
) -> list[Checkpoint]:
    """The checkpoints of a run, oldest first and numbered from 1: those filed under its run
    id, and those filed under its task id (a run the runner could not name) that were taken
    while it ran."""
    home = checkpoints_home()
    found = list(_load_all(home / run_key(run_id, task_id)))
    by_task = home / run_key(None, task_id)
    end = (finished_at if finished_at is not None else time.time()) + 1
    for checkpoint in _load_all(by_task):
        if checkpoint.task_id == task_id and started_at - 1 <= checkpoint.taken_at <= end:
            found.append(checkpoint)
    found.sort(key=lambda c: c.taken_at)
    return [replace(c, number=i) for i, c in enumerate(found, 1)]


def _load_all(run_dir: Path) -> Iterator[Checkpoint]:
    if not run_dir.is_dir():
        return
    for path in run_dir.iterdir():
        if path.name.isdigit() and (path / MANIFEST).is_file():
            yield load(path)


def load(location: Path) -> Checkpoint:
    """The checkpoint in ``location``; ``UndoError`` when its manifest is damaged."""
    try:
        data = json.loads((location / MANIFEST).read_bytes())
        entries = tuple(Entry(**item) for item in data["entries"])
        checkpoint = Checkpoint(
            location=location,
            workspace=Path(data["workspace"]),
            command=str(data["command"]),
            taken_at=float(data["taken_at"]),
            task_id=str(data["task_id"]),
            run_id=data.get("run_id"),
            entries=entries,
            left_out=tuple(data.get("left_out", ())),
            bytes=int(data.get("bytes", 0)),
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UndoError(
            f"the checkpoint in {location} is damaged ({exc}); nothing was restored"
        ) from None
    bad = next((e.path for e in entries if not _is_relative(e.path)), None)
    if bad is not None or not checkpoint.workspace.is_absolute():
        raise UndoError(f"the checkpoint in {location} names a path outside its workspace")
    return checkpoint


def _to_json(checkpoint: Checkpoint) -> dict[str, Any]:
    return {
        "version": 1,
        "workspace": str(checkpoint.workspace),
        "command": checkpoint.command,
        "taken_at": checkpoint.taken_at,
        "task_id": checkpoint.task_id,
        "run_id": checkpoint.run_id,
        "bytes": checkpoint.bytes,
        "left_out": list(checkpoint.left_out),
        "entries": [
            {k: v for k, v in _entry_json(e).items() if v or k in ("path", "kind")}
            for e in checkpoint.entries
        ],
    }


def _entry_json(entry: Entry) -> dict[str, Any]:
    return {
        "path": entry.path,
        "kind": entry.kind,
        "mode": entry.mode,
        "size": entry.size,
        "mtime_ns": entry.mtime_ns,
        "offset": entry.offset,
        "target": entry.target,
    }


def _is_relative(path: str) -> bool:
    parts = path.split("/")
    return bool(path) and "\0" not in path and all(p not in ("", ".", "..") for p in parts)


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
    return root


def plan_undo(checkpoint: Checkpoint) -> UndoPlan:
    """Compare the workspace with ``checkpoint``: what ``undo`` will write back and remove.
    Files are compared byte for byte (and by mode); what was left out is not looked at."""
    root = workspace_root(checkpoint)
    current = dict(_scan(root, frozenset(checkpoint.left_out))[0])
    restore, create = [], []
    unchanged = 0
    with _opened_data(checkpoint) as data:
        for entry in checkpoint.entries:
            st = current.get(entry.path)
            if entry.kind == "dir":
                if st is None or not stat.S_ISDIR(st.st_mode):
                    create.append(entry.path)
            elif _same(entry, st, os.path.join(root, entry.path), data):
                unchanged += 1
            else:
                restore.append(entry)
    known = {entry.path for entry in checkpoint.entries}
    extra = [(rel, st) for rel, st in current.items() if rel not in known]
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
        fd = os.open(checkpoint.location / DATA, os.O_RDONLY | _NOFOLLOW | _CLOEXEC)
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
            want = min(_CHUNK, end - offset)
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
        copier = _Copier()
        for entry in plan.restore:
            _put(root, entry, data, copier)
    for entry in sorted(checkpoint.entries, key=lambda e: _depth(e.path), reverse=True):
        if entry.kind == "dir":
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


def _put(root: str, entry: Entry, data: int, copier: _Copier) -> None:
    """Write ``entry`` back: to a temporary name beside it, then renamed over what is there."""
    parent = _real_parent(root, entry.path)
    path = os.path.join(parent, _name(entry.path))
    temporary = os.path.join(parent, f".localhand-undo-{uuid.uuid4().hex[:12]}")
    try:
        if entry.kind == "link":
            os.symlink(entry.target, temporary)
        else:
            fd = _create_private(temporary)
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

"""Checkpoints: a copy of the workspace taken before a dangerous command.

The sandbox keeps commands inside the workspace, not from destroying it: ``rm -rf *``,
``git reset --hard``, ``git clean -fdx`` and ``rm -rf .git`` all stay inside. The classifier
asks a person first, and people say yes to commands they regret. So before a command the
classifier calls dangerous runs, the workspace is copied into localhand's private data
directory, and ``localhand undo RUN`` puts it back (``localhand.safety.undo.restore``).

What is copied: every file, symlink (as a link) and directory of the workspace, ``.git``
included, because ``git reset --hard`` rewrites the index and the branch and ``rm -rf .git``
takes the history; untracked and ignored files too (``.env``, local notes), because
``git clean -fdx`` deletes exactly those. Secret-looking files are kept, unlike in the store's
replay archive (kept for good and read by the dashboard): a checkpoint is local, 0600 in a 0700
directory, and those files are among the most worth having back. Left out: what tools
regenerate (``REBUILT_DIRS``: ``node_modules``, ``.venv``, caches), and FIFOs, sockets and
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

import errno
import hashlib
import json
import os
import re
import shutil
import stat
import time
import uuid
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Literal

from localhand.errors import ConfigError
from localhand.paths import (
    IGNORED_SUFFIXES,
    PRIVATE_DIR_MODE,
    REBUILT_DIRS,
    data_dir,
    private_data_dir,
    private_dir,
)
from localhand.safety.undo.copying import Copier, create_private

MAX_BYTES = 100 * 1024 * 1024
MAX_FILES = 20_000
"""Past either, no checkpoint: copying a monorepo before every dangerous command would cost
seconds each time and fill the disk."""
KEEP_DAYS = 14
MANIFEST = "manifest.json"
DATA = "data"

_RUN_KEY = re.compile(r"[A-Za-z0-9_-]{1,64}")

Kind = Literal["file", "link", "dir"]


class UndoError(ConfigError):
    """Undo cannot go ahead: the message says why and what to do. Defined here, not in
    ``localhand.safety.undo.restore``, because ``load`` raises it for a damaged manifest."""


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


def checkpoints_home() -> Path:
    """``checkpoints/`` in localhand's data directory (0700)."""
    return private_dir(private_data_dir() / "checkpoints")


def run_key(run_id: str | None, task_id: str) -> str:
    """The directory a run's checkpoints go in: its run id, or, when the run id is not known
    (a run not recorded by this process's store), one derived from the task id, which
    ``localhand.safety.undo.restore.find`` then matches by time."""
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
    except (TooBig, OSError) as exc:
        why = (isinstance(exc, OSError) and exc.strerror) or str(exc)
        return f"[No checkpoint was taken ({why}); `{undo}` cannot restore what this changes.]"
    return f"[A checkpoint of the workspace was taken first; the user can restore it: `{undo}`.]"


def take(workspace: Path, command: str, *, task_id: str, run_id: str | None) -> Checkpoint:
    """Copy ``workspace`` into a new checkpoint of the run; ``TooBig`` when it is over the
    limits (``MAX_BYTES`` and ``MAX_FILES``; nothing is copied then)."""
    root = os.path.realpath(workspace)
    home = checkpoints_home()
    taken_at = time.time()
    found, left_out = scan(root)
    total = sum(st.st_size for _, st in found if stat.S_ISREG(st.st_mode))
    if total > MAX_BYTES or len(found) > MAX_FILES:
        raise TooBig(
            f"the workspace has more than {MAX_BYTES / 2**20:g} MiB or {MAX_FILES:,} files, "
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


def scan(
    root: str, left: frozenset[str] = frozenset()
) -> tuple[list[tuple[str, os.stat_result]], list[str]]:
    """Every path under ``root`` (relative, top-down) with its lstat, and what was left out:
    ``REBUILT_DIRS``, the paths in ``left`` (directories end in ``/``), directories that
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
                if item.name in REBUILT_DIRS or rel + "/" in left or item.path == own:
                    left_out.append(rel + "/")
                    continue
                found.append((rel, st))
                stack.append((rel + "/", item.path))
            elif (
                (stat.S_ISLNK(st.st_mode) or stat.S_ISREG(st.st_mode))
                and not item.name.endswith(IGNORED_SUFFIXES)
                and rel not in left
            ):
                found.append((rel, st))
    return found, left_out


def _copy_tree(
    root: str, found: list[tuple[str, os.stat_result]], data: Path, left_out: list[str]
) -> list[Entry]:
    """Append the contents of the files ``scan`` found to ``data``; the entries of the
    manifest. A file that cannot be read is added to ``left_out`` (undo leaves it alone too)."""
    out = create_private(data)
    copier = Copier()
    entries = []
    try:
        for rel, st in found:
            source = os.path.join(root, rel)
            mode = stat.S_IMODE(st.st_mode) & 0o777  # undo restores no set-ID bits
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


def _write_private(path: Path, data: bytes) -> None:
    with os.fdopen(create_private(path), "wb") as out:
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


# -- the manifest ----------------------------------------------------------------------------
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
            {k: v for k, v in asdict(e).items() if v or k in ("path", "kind")}
            for e in checkpoint.entries
        ],
    }


def _is_relative(path: object) -> bool:  # a manifest's path, not yet trusted
    if not isinstance(path, str) or not path or "\0" in path:
        return False
    return all(part not in ("", ".", "..") for part in path.split("/"))

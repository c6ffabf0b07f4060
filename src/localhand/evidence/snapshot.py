"""What changed in the workspace, seen from the files themselves.

Modifications are detected from the disk rather than from which tools ran, so a ``sed -i``
through ``run_command`` counts, and a ``write_file`` that wrote identical bytes does not.
A snapshot is a stat walk (size, mtime, ctime, inode); contents are hashed only for files
whose stat changed, to tell a real edit from a touch, and for two kinds of files whose stat
cannot be trusted to change:

- racily clean files (git's rule): a file whose mtime or ctime is not older than the snapshot
  that recorded it (``RACY_NS``) is compared by content next time, since an edit within the
  same timestamp tick keeps its size and its times;
- the files the file tools wrote: ``ChangeTracker.changes_in`` compares them by content, and
  ``files_modified`` always hashes them again.

localhand's own data files (the run store and its WAL, checkpoints, follow-up task files) are
left out of every walk when they lie inside the workspace (``localhand.paths.own_paths_in``):
they change while the run goes on, and are neither the run's work nor its progress.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from stat import S_ISDIR, S_ISREG

from localhand.paths import IGNORED_DIRS, IGNORED_SUFFIXES, OwnPaths, own_paths_in

MAX_FILES = 50_000
"""Stop walking past this many files: a huge tree should not make every iteration slow. A
snapshot cut short says so (``truncated``): the check guard cannot vouch for what it missed."""
HASH_LIMIT = 4 * 1024 * 1024
"""Files larger than this are compared by their stat only."""
KEEP_TOTAL = 64 * 1024 * 1024
"""The most a tracker keeps of the contents it is asked to keep (``ChangeTracker``'s ``keep``)."""
RACY_NS = 2_000_000_000
"""How close to the moment a snapshot began a file's mtime (or ctime) may be and still count
as "not older than the snapshot": such a file may change again without its size or times
changing, since file system timestamps move in ticks (2 s on FAT, 1 s on ext3 and HFS+; the
kernel's coarse clock lags the wall clock by a tick too). git calls these files racily clean
and compares them by content; so do we. The margin assumes the file system's clock is within
it of this machine's (true of local disks)."""


def content_hash(data: bytes) -> str:
    """What contents are compared by, here and in ``hidden``: the same bytes, the same hash."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


@dataclass(frozen=True, slots=True)
class FileState:
    size: int
    mtime_ns: int
    regular: bool = True
    """False for symlinks, FIFOs, sockets and devices: never opened, compared by stat only."""
    ctime_ns: int = 0
    """Changes with every write and cannot be set back: catches an edit whose mtime was
    restored (``touch -r``, ``cp -p``, ``rsync -t``), as git's stat check does."""
    ino: int = 0
    """A file replaced by another (an atomic write, ``mv``) has a new inode."""

    @classmethod
    def of(cls, stat: os.stat_result) -> FileState:
        return cls(
            stat.st_size, stat.st_mtime_ns, S_ISREG(stat.st_mode), stat.st_ctime_ns, stat.st_ino
        )

    def racy(self, since_ns: int) -> bool:
        """Whether this file was modified (contents or metadata) at ``since_ns`` or later."""
        return max(self.mtime_ns, self.ctime_ns) >= since_ns


@dataclass(slots=True)
class Snapshot:
    root: Path
    files: dict[str, FileState] = field(default_factory=dict)
    _digests: dict[str, str] = field(default_factory=dict)
    taken_ns: int = field(default_factory=time.time_ns)
    """When the snapshot began (wall clock, as mtimes are)."""
    bytecode: list[str] = field(default_factory=list)
    """The ``__pycache__`` folders and other compiled Python the walk passed by: Python runs
    what is there in place of the sources beside them when their stamps match (and a
    ``json.pyc`` beside none as ``json``), so a check hides them
    (``localhand.evidence.checkguard``)."""
    truncated: bool = False
    """The walk stopped at ``MAX_FILES``: files past it are not listed."""

    @classmethod
    def take(cls, root: Path, own: OwnPaths | None = None) -> Snapshot:
        """Every file under ``root`` but caches, ``.git`` and ``own`` (localhand's own files
        inside ``root``), with its stat."""
        # os.scandir with relative names built as we go: the same walk as os.walk (top-down,
        # directories sorted), about twice as fast, since os.walk + os.lstat +
        # os.path.relpath cost ~10 us a file. A symlinked directory is not entered but listed,
        # as a link: a folder replaced by a link to another is a change.
        own_dirs = own.dirs if own else frozenset()
        own_files = own.files if own else frozenset()
        snapshot = cls(root)
        stack = [("", str(root))]
        while stack:
            prefix, directory = stack.pop()
            try:
                entries = os.scandir(directory)
            except OSError:
                continue
            subdirs = []
            with entries:
                for entry in entries:
                    name = entry.name
                    try:
                        if entry.is_dir() and not entry.is_symlink():
                            if name not in IGNORED_DIRS and prefix + name not in own_dirs:
                                subdirs.append(name)
                            elif name == "__pycache__":
                                snapshot.bytecode.append(prefix + name)
                            continue
                        if name.endswith(IGNORED_SUFFIXES):  # outside __pycache__: run sourceless
                            snapshot.bytecode.append(prefix + name)
                            continue
                        if prefix + name in own_files:
                            continue
                        stat = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if len(snapshot.files) >= MAX_FILES:  # one more than it lists
                        snapshot.truncated = True
                        return snapshot
                    snapshot.files[prefix + name] = FileState.of(stat)
            for name in sorted(subdirs, reverse=True):
                stack.append((prefix + name + os.sep, os.path.join(directory, name)))
        return snapshot

    @classmethod
    def of(cls, root: Path, relpaths: Iterable[str]) -> Snapshot:
        """A snapshot of just these files (relative paths, as ``take`` names them): those that
        exist, stat'ed as the walk does, without following a final symlink (a link to a
        directory is listed, a directory not)."""
        snapshot = cls(root)
        for relpath in relpaths:
            path = os.path.join(root, relpath)
            try:
                stat = os.lstat(path)
                if S_ISDIR(stat.st_mode):
                    continue  # the walk does not list directories
            except OSError:
                continue
            snapshot.files[relpath] = FileState.of(stat)
        return snapshot

    def digest(self, relpath: str, keep: dict[str, bytes] | None = None) -> str | None:
        """Content hash of a file as it was when this snapshot was taken (computed lazily).
        ``keep``: where to keep the content read to hash it, when it is read."""
        if relpath not in self._digests:
            state = self.files.get(relpath)
            if state is None:
                return None
            if state.size > HASH_LIMIT or not state.regular:
                # Too big to hash, or not a plain file: its stat stands in for its contents.
                self._digests[relpath] = (
                    f"stat:{state.size}:{state.mtime_ns}:{state.ctime_ns}:{state.ino}"
                )
            else:
                try:
                    data = (self.root / relpath).read_bytes()
                except OSError:
                    return None
                self._digests[relpath] = content_hash(data)
                if keep is not None:
                    keep[relpath] = data
        return self._digests[relpath]

    def unvouched(self, before: Snapshot, changed: Iterable[str]) -> str | None:
        """Why a comparison of ``changed`` files (this snapshot taken after ``before``) cannot
        be trusted: a walk cut short, or a path that passes through a link that is not the one
        ``before`` listed there (the path leads somewhere else now)."""
        if before.truncated or self.truncated:
            return (
                f"the workspace holds more than {MAX_FILES:,} files, and localhand looks no "
                "further: check files past them could not be compared with the run's start"
            )
        for relpath in sorted(changed):
            path = relpath  # itself, when it is a link to a folder, then its folders
            while path:
                now = self.files.get(path)
                linked = path != relpath or os.path.isdir(os.path.join(self.root, path))
                if now is not None and not now.regular and before.files.get(path) != now and linked:
                    where = f"lies behind {path}," if path != relpath else "is"
                    return f"{relpath} {where} a link the run created or replaced"
                path = os.path.dirname(path)
        return None

    def changed_since(self, before: Snapshot) -> set[str]:
        """Paths added, removed or whose contents may differ from ``before``: those whose stat
        changed, and those not older than ``before`` itself, which its stat cannot vouch for
        (racily clean, see ``RACY_NS``)."""
        changed = set(before.files.keys() ^ self.files.keys())
        racy_since = before.taken_ns - RACY_NS
        for path in before.files.keys() & self.files.keys():
            state = before.files[path]
            if state != self.files[path] or state.racy(racy_since):
                changed.add(path)
        return changed


class ChangeTracker:
    """Keeps the workspace's state at the start of a run and after the last check.

    Every file is hashed up front (up to ``HASH_LIMIT`` bytes each), so that rewriting a file
    with the same bytes is neither progress for the stall guardrail nor a modification in the
    Result. localhand's own files inside ``root`` (``localhand.paths.own_paths_in``, found
    when the tracker is made) are never counted. ``keep``: which files' contents to keep as
    they were (``kept``, up to ``KEEP_TOTAL`` bytes in all), read once for both (the checks'
    own files, ``localhand.evidence.checkguard``).
    """

    def __init__(self, root: Path, keep: Callable[[str], bool] | None = None) -> None:
        self.root = root
        self.own = own_paths_in(root)
        self._reported: set[str] = set()
        """Every file the caller said the file tools wrote (``changes_in``, ``new_changes``):
        compared by content at the end, whatever its stat says."""
        self.baseline = Snapshot.take(root, self.own)
        self.kept: dict[str, bytes] = {}
        self._baseline_digests: dict[str, str | None] = {}
        kept_bytes = 0
        for path in self.baseline.files:
            wanted = keep is not None and kept_bytes < KEEP_TOTAL and keep(path)
            into = self.kept if wanted else None
            self._baseline_digests[path] = self.baseline.digest(path, into)
            if into is not None:
                kept_bytes += len(self.kept.get(path, b""))
        self._digests = dict(self._baseline_digests)
        self._last = self.baseline

    def new_changes(self, written: Iterable[str | os.PathLike[str]] = ()) -> set[str]:
        """Paths whose contents changed since the previous call (or since the start).
        ``written``: files the file tools wrote meanwhile (as ``changes_in`` takes them),
        compared by content whatever their stat says."""
        current = Snapshot.take(self.root, self.own)
        reported = {rel for rel in map(self._relative, written) if rel is not None}
        self._reported |= reported
        paths = current.changed_since(self._last) | (reported & current.files.keys())
        changed = self._compared(current, paths)
        self._last = current
        return changed

    def changes_in(self, paths: Iterable[str | os.PathLike[str]]) -> set[str]:
        """What ``new_changes`` would return, when nothing but the files at ``paths`` (absolute,
        or relative to the root) can have changed since its last call: a stat and a hash for
        each of them instead of a walk of the whole workspace. Paths a walk would not list
        (outside the root, in an ignored directory, a cache file) are left out.

        The next ``new_changes`` walks again from the last walk's state; files counted here
        are compared by content, so they are not counted twice.
        """
        if self._last.truncated:
            return self.new_changes(paths)  # the walk stops short: only it knows what it missed
        relpaths = {rel for rel in map(self._relative, paths) if rel is not None}
        self._reported |= relpaths
        return self._compared(Snapshot.of(self.root, relpaths), relpaths)

    def _compared(self, current: Snapshot, paths: Iterable[str]) -> set[str]:
        """Those of ``paths`` whose content in ``current`` differs from the last seen (which
        becomes theirs in ``current``)."""
        changed = set()
        for path in paths:
            digest = current.digest(path)
            if digest != self._digests.get(path):
                changed.add(path)
            self._digests[path] = digest
        return changed

    def _relative(self, path: str | os.PathLike[str]) -> str | None:
        """``path`` as the walk names it, or None when the walk would not list it."""
        absolute = os.path.join(self.root, path)  # an absolute path stays as it is
        relpath = os.path.relpath(absolute, self.root)
        if relpath == os.curdir or relpath.startswith(os.pardir + os.sep) or relpath == os.pardir:
            return None
        *dirs, name = relpath.split(os.sep)
        if name.endswith(IGNORED_SUFFIXES) or any(part in IGNORED_DIRS for part in dirs):
            return None
        if self.own and self.own.holds(relpath):
            return None
        return relpath

    def files_modified(self) -> list[str]:
        """Workspace-relative paths whose contents differ from the start of the run: those
        whose stat changed or was racily clean at the start, and every file the file tools
        wrote, compared by content."""
        current = Snapshot.take(self.root, self.own)
        candidates = current.changed_since(self.baseline)
        candidates |= self._reported & (current.files.keys() | self.baseline.files.keys())
        return sorted(p for p in candidates if current.digest(p) != self._baseline_digests.get(p))

"""What changed in the workspace, seen from the files themselves.

Modifications are detected from the disk rather than from which tools ran, so a ``sed -i``
through ``run_command`` counts, and a ``write_file`` that wrote identical bytes does not.
A snapshot is a stat walk (size, mtime); contents are hashed only for files whose stat
changed, to tell a real edit from a touch. When the caller knows which files can have changed
(the file tools say what they wrote), ``ChangeTracker.changes_in`` looks at those alone.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from stat import S_ISDIR, S_ISLNK, S_ISREG

IGNORED_DIRS = frozenset(
    {".git", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".venv", "node_modules"}
)
IGNORED_SUFFIXES = (".pyc", ".pyo")
MAX_FILES = 50_000
"""Stop walking past this many files: a huge tree should not make every iteration slow."""
HASH_LIMIT = 4 * 1024 * 1024
"""Files larger than this are compared by size and mtime only."""
RACY_NS = 2_000_000_000
"""A file modified this close to (or after) the moment its snapshot began may change again
without its size or mtime changing: file system timestamps move in ticks (and a coarse clock
can lag the real one). git calls these files racily clean and re-hashes them; so do we."""


@dataclass(frozen=True, slots=True)
class FileState:
    size: int
    mtime_ns: int
    regular: bool = True
    """False for symlinks, FIFOs, sockets and devices: never opened, compared by stat only."""


@dataclass(slots=True)
class Snapshot:
    root: Path
    files: dict[str, FileState] = field(default_factory=dict)
    _digests: dict[str, str] = field(default_factory=dict)
    taken_ns: int = field(default_factory=time.time_ns)
    """When the snapshot began (wall clock, as mtimes are)."""

    @classmethod
    def take(cls, root: Path) -> Snapshot:
        # os.scandir with relative names built as we go: the same walk as os.walk (top-down,
        # directories sorted, symlinked directories listed but not entered), about twice as
        # fast, since os.walk + os.lstat + os.path.relpath cost ~10 us a file.
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
                        if entry.is_dir():
                            if name not in IGNORED_DIRS and not entry.is_symlink():
                                subdirs.append(name)
                            continue
                        if name.endswith(IGNORED_SUFFIXES):
                            continue
                        stat = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    snapshot.files[prefix + name] = FileState(
                        stat.st_size, stat.st_mtime_ns, S_ISREG(stat.st_mode)
                    )
                    if len(snapshot.files) >= MAX_FILES:
                        return snapshot
            for name in sorted(subdirs, reverse=True):
                stack.append((prefix + name + os.sep, os.path.join(directory, name)))
        return snapshot

    @classmethod
    def of(cls, root: Path, relpaths: Iterable[str]) -> Snapshot:
        """A snapshot of just these files (relative paths, as ``take`` names them): those that
        exist, stat'ed as the walk does, without following a final symlink."""
        snapshot = cls(root)
        for relpath in relpaths:
            path = os.path.join(root, relpath)
            try:
                stat = os.lstat(path)
                if S_ISDIR(stat.st_mode) or (S_ISLNK(stat.st_mode) and os.path.isdir(path)):
                    continue  # the walk lists neither directories nor links to them
            except OSError:
                continue
            snapshot.files[relpath] = FileState(
                stat.st_size, stat.st_mtime_ns, S_ISREG(stat.st_mode)
            )
        return snapshot

    def digest(self, relpath: str) -> str | None:
        """Content hash of a file as it was when this snapshot was taken (computed lazily)."""
        if relpath not in self._digests:
            state = self.files.get(relpath)
            if state is None:
                return None
            if state.size > HASH_LIMIT or not state.regular:
                # Too big to hash, or not a plain file: its stat stands in for its contents.
                self._digests[relpath] = f"stat:{state.size}:{state.mtime_ns}"
            else:
                try:
                    data = (self.root / relpath).read_bytes()
                except OSError:
                    return None
                self._digests[relpath] = hashlib.blake2b(data, digest_size=16).hexdigest()
        return self._digests[relpath]

    def changed_since(self, before: Snapshot) -> set[str]:
        """Paths added, removed or whose contents may differ from ``before``: those whose stat
        changed, and those that were racily clean in ``before`` (see ``RACY_NS``)."""
        changed = set(before.files.keys() ^ self.files.keys())
        racy_after = before.taken_ns - RACY_NS
        for path in before.files.keys() & self.files.keys():
            state = before.files[path]
            if state != self.files[path] or state.mtime_ns >= racy_after:
                changed.add(path)
        return changed


class ChangeTracker:
    """Keeps the workspace's state at the start of a run and after the last check.

    Every file is hashed up front (up to ``HASH_LIMIT`` bytes each), so that rewriting a file
    with the same bytes is neither progress for the stall guardrail nor a modification in the
    Result.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.baseline = Snapshot.take(root)
        self._baseline_digests = {p: self.baseline.digest(p) for p in self.baseline.files}
        self._digests = dict(self._baseline_digests)
        self._last = self.baseline

    def new_changes(self) -> set[str]:
        """Paths whose contents changed since the previous call (or since the start)."""
        current = Snapshot.take(self.root)
        changed = set()
        for path in current.changed_since(self._last):
            digest = current.digest(path)
            if digest != self._digests.get(path):
                changed.add(path)
            self._digests[path] = digest
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
        if len(self._last.files) >= MAX_FILES:
            return self.new_changes()  # the walk stops short of some files: only it knows which
        relpaths = {rel for rel in map(self._relative, paths) if rel is not None}
        current = Snapshot.of(self.root, relpaths)
        changed = set()
        for path in relpaths:
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
        return relpath

    def files_modified(self) -> list[str]:
        """Workspace-relative paths whose contents differ from the start of the run."""
        current = Snapshot.take(self.root)
        candidates = current.changed_since(self.baseline)
        return sorted(p for p in candidates if current.digest(p) != self._baseline_digests.get(p))

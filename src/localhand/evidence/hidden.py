"""Changes the Result would not show otherwise: in folders the change tracker skips, and to
the files that instruct coding agents.

The change tracker leaves ``.git``, ``.venv`` and ``node_modules`` out of its walk (they are
large, and they are not the run's work). But a few places in them run code later: a ``.pth``
file or ``sitecustomize.py`` in a virtual environment's ``site-packages`` runs whenever its
Python starts, a script in its ``bin`` or in ``node_modules/.bin`` is what ``pytest`` or
``jest`` runs, ``.git/hooks`` and ``.git/config`` run on the user's next commit. And
``AGENTS.md``-style files steer the next agent that opens the project. ``HiddenState`` takes
just those places (a handful of ``scandir`` calls, however big the folders are), at the start
of the run and at its end, so the Result can list what changed there (``sensitive_changes``).

Not covered: the contents of installed packages themselves (``site-packages/foo/*.py``,
``node_modules/foo/*``): only which packages are there.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from stat import S_ISDIR, S_ISLNK, S_ISREG

from localhand.evidence.snapshot import HASH_LIMIT, content_hash

VENV_NAMES = (".venv", "venv", "env", ".env")
"""Folders at the top of the workspace taken as virtual environments (and any other that holds
a ``pyvenv.cfg``)."""
INSTRUCTION_FILES = frozenset(
    {"AGENTS.md", "AGENT.md", "CLAUDE.md", "CLAUDE.local.md", "GEMINI.md", ".cursorrules",
     ".windsurfrules", ".clinerules", "copilot-instructions.md", "CONVENTIONS.md",
     ".aider.conf.yml", "localhand.toml"}
)  # fmt: skip
"""Files that instruct coding agents (localhand's own settings among them), at any depth."""
INSTRUCTION_DIRS = (".cursor/rules/", ".github/instructions/", ".clinerules/", ".claude/")
KEEP_LIMIT = HASH_LIMIT
"""Files up to this size are kept whole, so that a check can be run against them (and compared
by the same hash as the change tracker's)."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One file's state: its content (small regular files), where a symlink points, or for
    folders and large files only that it is there."""

    kind: str
    """``file``, ``link``, ``dir`` or ``other``."""
    data: bytes | None = None
    fingerprint: str = ""
    target: str = ""
    """A symlink's target, resolved when it was taken (a check runs against that)."""
    mode: int = 0o644


@dataclass(slots=True)
class HiddenState:
    """The sensitive places under ignored folders of one workspace, relative path → Entry."""

    root: str
    entries: dict[str, Entry] = field(default_factory=dict)

    @classmethod
    def take(cls, root: str | os.PathLike[str]) -> HiddenState:
        state = cls(os.fspath(root))
        for relpath, listed_only in _places(state.root):
            entry = read_entry(os.path.join(state.root, relpath), listed_only)
            if entry is not None:
                state.entries[relpath] = entry
        return state

    def changed_since(self, before: HiddenState) -> list[str]:
        """Paths created, deleted or changed since ``before``."""
        paths = before.entries.keys() | self.entries.keys()
        return sorted(p for p in paths if differs(before.entries.get(p), self.entries.get(p)))


def is_instruction_file(relpath: str) -> bool:
    """Whether ``relpath`` is a file that instructs coding agents (``AGENTS.md`` and the like)."""
    posix = relpath.replace(os.sep, "/")
    return os.path.basename(posix) in INSTRUCTION_FILES or any(
        posix.startswith(folder) for folder in INSTRUCTION_DIRS
    )


def runs_in_checks(relpath: str) -> bool:
    """Whether a change at ``relpath`` (from ``HiddenState``) is in what a check's Python or
    Node runs: a virtual environment or ``node_modules``, not ``.git``."""
    return not relpath.startswith(".git" + os.sep)


def _places(root: str) -> Iterator[tuple[str, bool]]:
    """``(relative path, only whether it is there)`` for every sensitive place in ``root``."""
    git = os.path.join(root, ".git")
    if os.path.isdir(git) and not os.path.islink(git):
        yield os.path.join(".git", "config"), False
        for folder in ("hooks", "info"):
            yield from _children(root, os.path.join(".git", folder), listed_only=False)
    for venv in _venvs(root):
        yield os.path.join(venv, "pyvenv.cfg"), False
        yield from _children(root, os.path.join(venv, "bin"), listed_only=False)
        for site in _site_packages(root, venv):
            for relpath, _ in _children(root, site, listed_only=True):
                name = os.path.basename(relpath)
                code = name.endswith((".pth", ".py")) or name in ("sitecustomize", "usercustomize")
                yield relpath, not code
    modules = os.path.join(root, "node_modules")
    if os.path.isdir(modules):
        yield from _children(root, os.path.join("node_modules", ".bin"), listed_only=False)
        yield from _children(root, "node_modules", listed_only=True)


def _venvs(root: str) -> list[str]:
    try:
        names = [e.name for e in os.scandir(root) if e.is_dir(follow_symlinks=False)]
    except OSError:
        return []
    return [
        name
        for name in names
        if name in VENV_NAMES or os.path.isfile(os.path.join(root, name, "pyvenv.cfg"))
    ]


def _site_packages(root: str, venv: str) -> list[str]:
    lib = os.path.join(venv, "lib")
    versions = (os.path.basename(relpath) for relpath, _ in _children(root, lib, True))
    return [
        os.path.join(lib, version, "site-packages")
        for version in versions
        if version.startswith(("python", "pypy"))
    ]


def _children(root: str, relpath: str, listed_only: bool) -> Iterable[tuple[str, bool]]:
    try:
        with os.scandir(os.path.join(root, relpath)) as entries:
            names = sorted(entry.name for entry in entries)
    except OSError:
        return []
    return [(os.path.join(relpath, name), listed_only) for name in names]


def read_entry(path: str | os.PathLike[str], listed_only: bool = False) -> Entry | None:
    """The file at ``path`` as an ``Entry`` (never following a final link), or None."""
    path = os.fspath(path)
    try:
        stat = os.lstat(path)
    except OSError:
        return None
    if S_ISLNK(stat.st_mode):
        try:
            link = os.readlink(path)
        except OSError:
            link = ""
        return _link(path, link, listed_only)
    if S_ISDIR(stat.st_mode):
        return Entry("dir")
    if not S_ISREG(stat.st_mode):
        return Entry("other", fingerprint=f"{stat.st_mode}:{stat.st_ino}")
    if listed_only or stat.st_size > KEEP_LIMIT:
        fingerprint = f"{stat.st_size}:{stat.st_mtime_ns}:{stat.st_ctime_ns}:{stat.st_ino}"
        return Entry("file", fingerprint="" if listed_only else fingerprint, mode=stat.st_mode)
    data = _contents(path, os.O_NOFOLLOW)
    return None if data is None else kept_entry(data, stat.st_mode)


def _link(path: str, link: str, listed_only: bool) -> Entry:
    """A symlink, with the contents of the file it leads to (up to ``KEEP_LIMIT``): editing
    that file changes what runs through the link as much as re-pointing it does."""
    target = os.path.realpath(path)
    try:
        stat = os.stat(target)
    except OSError:
        return Entry("link", fingerprint=link, target=target)
    if listed_only or not S_ISREG(stat.st_mode) or stat.st_size > KEEP_LIMIT:
        return Entry("link", fingerprint=link, target=target)
    data = _contents(target, 0)
    if data is None:
        return Entry("link", fingerprint=link, target=target)
    return Entry("link", data, f"{link}:{content_hash(data)}", target, stat.st_mode & 0o7777)


def _contents(path: str, flags: int) -> bytes | None:
    try:  # never waits on a FIFO swapped in since the stat
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | flags)
        with os.fdopen(descriptor, "rb") as handle:
            return handle.read(KEEP_LIMIT + 1)
    except OSError:
        return None


def kept_entry(data: bytes, mode: int = 0o644) -> Entry:
    """The entry of a regular file with contents ``data``."""
    return Entry("file", data, content_hash(data), mode=mode & 0o7777)


def differs(before: Entry | None, after: Entry | None) -> bool:
    """Whether a file changed from ``before`` to ``after`` (None: not there)."""
    if before is None or after is None:
        return before is not after
    return (before.kind, before.fingerprint) != (after.kind, after.fingerprint)

"""Where localhand keeps its own files (the run store, follow-up task files), kept private.

What lands there is sensitive: a run's events hold tool output and file contents, and the
store keeps a copy of small workspaces for replay. So the data directory is made 0700 and the
files in it 0600, whatever the umask, and an existing directory or file that is looser is
tightened when localhand opens it.

Those files can sit inside a workspace (``--workspace ~`` holds ``~/.local/share/localhand``;
``LOCALHAND_HOME`` or ``--db`` can point into a project). They are never the workspace's own
changes: ``own_paths_in`` names them, relative to a workspace, so that the change tracker and
the replay archive leave them out. A store opened at a path of its own (``--db``) claims it
(``claim``), since nothing else would tell them where it is.
"""

from __future__ import annotations

import os
import stat
import sys
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
_GROUP_AND_OTHER = 0o077
SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")
"""The files SQLite keeps next to a database while it is open (WAL) or writing (rollback)."""
REBUILT_DIRS = frozenset(
    {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".venv", "node_modules"}
)
"""Folders a project's tools make and remake (caches, environments, packages): large, and
never the work. Checkpoints leave them out (they copy ``.git``, which undo must restore)."""
IGNORED_DIRS = REBUILT_DIRS | {".git"}
"""What the change tracker, the tools' listings and searches and the prompt's view of the
workspace leave out: those and ``.git``."""
IGNORED_SUFFIXES = (".pyc", ".pyo")
"""Compiled Python, remade from its source."""
DATA_SUBDIRS = ("checkpoints", "tasks", "acp-sessions", "batch-state", "trust")
"""What localhand makes in its data directory besides the run store: checkpoints
(``localhand.safety.undo.checkpoint``), follow-up task files (``localhand.session.runner``),
the records of editors' sessions (``localhand.acp.records``), batches' resume states
(``localhand.batch.state``) and the trusted files (``localhand.safety.trust``): the records
localhand reads back, hidden from commands even in a workspace that is the data directory."""


def data_dir(env: dict[str, str] | None = None) -> Path:
    """``LOCALHAND_HOME`` if set, else ``localhand/`` in the user's data directory
    (``$XDG_DATA_HOME`` or ``~/.local/share``; ``%LOCALAPPDATA%`` on Windows)."""
    env = dict(os.environ) if env is None else env
    if env.get("LOCALHAND_HOME"):
        return Path(env["LOCALHAND_HOME"]).expanduser()
    home = Path(env.get("HOME") or Path.home())
    if sys.platform == "win32" and env.get("LOCALAPPDATA"):
        return Path(env["LOCALAPPDATA"]) / "localhand"
    return Path(env.get("XDG_DATA_HOME") or home / ".local" / "share") / "localhand"


def user_config_path(env: Mapping[str, str] | None = None) -> Path | None:
    """``$XDG_CONFIG_HOME/localhand/config.toml``, else ``$HOME/.config/localhand/config.toml``
    (an XDG_CONFIG_HOME that is not absolute is ignored, as the XDG spec says); ``None``
    when ``env`` has neither."""
    env = os.environ if env is None else env
    xdg = env.get("XDG_CONFIG_HOME", "")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "localhand" / "config.toml"
    if env.get("HOME"):
        return Path(env["HOME"]) / ".config" / "localhand" / "config.toml"
    return None


_deleted: Path | None = None


def leave_deleted_directory() -> Path | None:
    """When the directory localhand was started in has been deleted: move to ``/``, so that
    nothing looking for a file there (``localhand.toml``, plugins) fails, and return the
    deleted path (``PWD``), which ``working_directory`` goes on naming."""
    global _deleted
    try:
        os.getcwd()
    except FileNotFoundError:
        _deleted = Path(os.environ.get("PWD") or "(deleted)")
        os.chdir(os.sep)
    return _deleted


def working_directory() -> Path:
    """The directory localhand was started in, deleted or not: a run there is then refused for
    that reason, and recorded, rather than ending in a traceback."""
    return _deleted or Path.cwd()


def db_path(env: dict[str, str] | None = None) -> Path:
    """``LOCALHAND_DB`` if set, else ``runs.db`` in localhand's data directory."""
    env = dict(os.environ) if env is None else env
    if env.get("LOCALHAND_DB"):
        return Path(env["LOCALHAND_DB"]).expanduser()
    return data_dir(env) / "runs.db"


_claimed: set[str] = set()
_claimed_lock = threading.Lock()


def claim(path: str | os.PathLike[str]) -> None:
    """Remember, for the rest of the process, a database localhand writes outside its data
    directory (a store opened with ``--db``): ``own_paths_in`` then names it and its SQLite
    side files too."""
    real = os.path.realpath(os.path.expanduser(path))
    with _claimed_lock:
        _claimed.add(real)


def claimed_stores() -> tuple[str, ...]:
    """The real paths of every store ``claim`` named in this process."""
    with _claimed_lock:
        return tuple(sorted(_claimed))


@dataclass(frozen=True, slots=True)
class OwnPaths:
    """localhand's own directories and files inside one root, relative to it and separated
    by ``os.sep`` (as ``localhand.evidence.snapshot`` names paths)."""

    dirs: frozenset[str] = frozenset()
    files: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.dirs or self.files)

    def holds(self, relpath: str) -> bool:
        """Whether ``relpath`` is one of these files, or lies in one of these directories."""
        if relpath in self.files:
            return True
        return any(is_within(relpath, d) for d in self.dirs)


def own_paths_in(root: str | os.PathLike[str], env: dict[str, str] | None = None) -> OwnPaths:
    """What of localhand's own lies inside ``root``: the data directory (or, when ``root`` is
    the data directory itself, what localhand makes there), the run store at ``db_path`` and
    every claimed one, each with its SQLite side files. Usually nothing: ``OwnPaths()``.

    Both sides are compared as real paths, so a workspace or data directory given through a
    symlink is still found; a directory inside the workspace that links elsewhere is not
    entered by the walks these paths are for, so what it holds needs no name here."""
    real_root = os.path.realpath(root)
    data = os.path.realpath(data_dir(env))
    with _claimed_lock:
        databases = {os.path.realpath(db_path(env)), *_claimed}
    dirs: set[str] = set()
    files: set[str] = set()
    if data == real_root:
        dirs.update(DATA_SUBDIRS)
    else:
        dirs.update(_within(real_root, [data]))
    files.update(
        _within(real_root, [db + side for db in databases for side in ("", *SQLITE_SIDE_FILES)])
    )
    return OwnPaths(frozenset(dirs), frozenset(files))


def is_within(path: str, parent: str) -> bool:
    """Whether ``path`` is ``parent`` or lies below it (both real, or both relative, paths)."""
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def _within(root: str, paths: Iterable[str]) -> list[str]:
    """``paths`` that lie strictly inside ``root``, relative to it (all real paths, so a
    prefix test is exact, and cheap however many stores were claimed)."""
    prefix = root.rstrip(os.sep) + os.sep
    return [path[len(prefix) :] for path in paths if path.startswith(prefix)]


def private_dir(path: Path) -> Path:
    """``path`` as a directory only its owner can enter: created 0700 if missing (missing
    parents as ``mkdir -p`` makes them), tightened to 0700 if it exists and is looser."""
    path.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR_MODE)
    tighten(path)
    return path


def write_private(target: Path, content: bytes) -> None:
    """Write ``content`` to ``target`` atomically (a new file renamed over the old, so a reader
    sees one or the other, never half), mode 0600; no temporary file is left on failure."""
    import tempfile  # only when writing: reading localhand's files must stay cheap at start-up

    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name[:100]}.")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(content)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def private_data_dir(env: dict[str, str] | None = None) -> Path:
    """``data_dir()``, created or tightened as ``private_dir`` does: call it before writing
    anything under it (follow-up task files, say)."""
    return private_dir(data_dir(env))


def is_data_dir(path: Path, env: dict[str, str] | None = None) -> bool:
    """True when ``path`` is localhand's data directory (symlinks resolved)."""
    try:
        return path.resolve() == data_dir(env).resolve()
    except (OSError, RuntimeError):
        return False


def tighten(path: Path) -> None:
    """Take group and other permissions off ``path`` if it has any (0755 becomes 0700, 0644
    becomes 0600). Best effort: a path localhand does not own, or a missing one, is left as it
    is, and Windows has no such bits to take off."""
    if os.name == "nt":
        return
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
        if mode & _GROUP_AND_OTHER:
            os.chmod(path, mode & ~_GROUP_AND_OTHER)
    except OSError:
        pass


def create_private_file(path: Path) -> None:
    """Create ``path`` empty with mode 0600 if it does not exist (a umask can only take bits
    away from 0600), else tighten it."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE))
    except FileExistsError:
        tighten(path)

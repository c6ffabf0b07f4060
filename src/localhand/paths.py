"""Where localhand keeps its own files (the run store, follow-up task files), kept private.

What lands there is sensitive: a run's events hold tool output and file contents, and the
store keeps a copy of small workspaces for replay. So the data directory is made 0700 and the
files in it 0600, whatever the umask, and an existing directory or file that is looser is
tightened when localhand opens it.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
_GROUP_AND_OTHER = 0o077


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


def private_dir(path: Path) -> Path:
    """``path`` as a directory only its owner can enter: created 0700 if missing (missing
    parents as ``mkdir -p`` makes them), tightened to 0700 if it exists and is looser."""
    path.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR_MODE)
    tighten(path)
    return path


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

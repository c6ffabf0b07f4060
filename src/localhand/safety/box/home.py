"""The throw-away directories of a sandboxed command and what it sees of ``$HOME``.

``/tmp``, ``/var/tmp``, ``/dev/shm`` and ``$HOME`` become empty, writable, throw-away
directories (of a limited size); the run store is hidden; then what commands need from them
is shown again, read-only: the toolchains on PATH (without the credentials kept in their
folders: ``toolchain_secrets``) and the paths the user allowed (``[sandbox] read``).
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Iterable, Sequence

from localhand.safety.box.mounts import under
from localhand.safety.box.own_files import is_within
from localhand.safety.box.supervise import SUPERVISOR_FILES
from localhand.safety.secrets.toolchain import masked

_STATE_DIRS = frozenset((".config", ".local", ".cache", ".ssh", ".gnupg", ".aws", ".docker"))
"""Children of $HOME that hold settings, keys or state: a PATH entry inside one is shown on
its own, never the whole directory (``~/.local/bin``, not ``~/.local``)."""


def throwaway_home(read: Iterable[str], sized: Sequence[str] = ()) -> list[str]:
    """Options that replace ``/tmp``, ``/var/tmp``, ``/dev/shm`` and $HOME with empty,
    writable, throw-away directories and hide the run store, then show again, read-only, what
    commands need from them (the toolchains on PATH, the interpreter and supervisor localhand
    runs commands with) and the paths the user allowed. ``sized`` goes before each throw-away
    directory, ``$HOME`` and the run store's hiding place included (``--size N``: their
    limit)."""
    home = os.path.realpath(os.path.expanduser("~"))
    hidden = ["/tmp", "/var/tmp", "/dev/shm"]
    if home not in ("/", "") and os.path.isdir(home):
        hidden.append(home)
    data = _data_dir()  # the run store: other runs' outputs and events
    if data is not None and os.path.isdir(data) and not under(data, hidden):
        hidden.append(data)
    options = [option for path in hidden for option in (*sized, "--tmpfs", path)]
    shown: list[str] = []
    needed = _toolchains(tuple(hidden), os.environ.get("PATH", ""))
    for path in [*needed, *(os.path.realpath(os.path.expanduser(p)) for p in read)]:
        hides_store = data is not None and is_within(path, data)
        wanted = path not in shown and under(path, hidden) and not hides_store
        if wanted and os.path.exists(path):
            shown.append(path)
    for path in shown:
        options += ["--ro-bind", path, path]
    allowed = [os.path.realpath(os.path.expanduser(p)) for p in read]
    toolchains = [path for path in shown if path not in allowed]
    files, dirs = masked(toolchains)
    for path in files:
        options += ["--ro-bind", "/dev/null", path]
    for path in dirs:
        options += ["--tmpfs", path, "--remount-ro", path]
    return options


_COMPANIONS = {".cargo": ".rustup", ".local/bin": ".local/lib"}
"""What a toolchain on PATH needs beside it: rustup's proxies, pip --user's packages."""


@functools.lru_cache(maxsize=16)
def _toolchains(hidden: tuple[str, ...], path: str) -> tuple[str, ...]:
    """What in the ``hidden`` directories a command needs to run its tools: for each entry of
    ``path`` (PATH) there, the directory it belongs to (``~/.pyenv`` for ``~/.pyenv/shims``,
    a venv for its ``bin``), and the prefixes and supervisor of the interpreter localhand runs
    commands with (a venv's ``python`` links to its base interpreter). Cached: resolving the
    entries was half of what wrapping a command cost, and a run's PATH does not change
    between its commands."""
    found = [os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, *SUPERVISOR_FILES)]
    for entry in (p for p in path.split(os.pathsep) if p):
        real = os.path.realpath(entry)
        root = next((h for h in hidden if is_within(real, h) and real != h), None)
        if root is None:
            continue
        parent = os.path.dirname(real)
        top = os.path.relpath(real, root).split(os.sep)[0]
        found.append(real if parent == root or top in _STATE_DIRS else parent)
        for name, companion in _COMPANIONS.items():
            if is_within(real, os.path.join(root, name)):
                found.append(os.path.join(root, companion))
    return tuple(found)


def _data_dir() -> str | None:
    from localhand.paths import data_dir  # small; imported late so this module stays leaf

    try:
        return os.path.realpath(data_dir())
    except (OSError, RuntimeError):  # no home directory to derive it from
        return None

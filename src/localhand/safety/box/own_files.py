"""localhand's own files, out of the model's reach wherever they lie.

Two kinds, protected differently:

- **The installation** localhand runs from: a virtual environment's whole prefix, every
  ``site-packages`` (a ``.pth`` file there runs at the next start of Python), the standard
  library, the interpreter, the script that started it, the localhand package itself (an
  editable install's source included) and the ``PYTHONPATH`` it started with. Commands and
  file tools may read them (commands run Python from there) but never write them: a planted
  ``.pth`` or module would run at localhand's next start, outside any sandbox, with the
  person's keys.
- **The data directory** (``paths.data_dir()``: the run store, checkpoints, follow-up task
  files) and any store opened elsewhere: never readable or writable. It holds other runs'
  outputs, and a forged checkpoint could steer ``undo``.

Both matter only where the model could otherwise write: inside the workspace (running
localhand on its own repository from its ``.venv``, or with ``--workspace ~``). The sandbox
mounts them read-only or hidden there (``localhand.safety.box.sandbox``), and the file tools
refuse them (``localhand.tools.workspace``), both asking ``protected``.
"""

from __future__ import annotations

import functools
import os
import site
import sys
import sysconfig
from typing import Literal

from localhand.paths import SQLITE_SIDE_FILES, claimed_stores, data_dir, db_path
from localhand.paths import is_within as is_within  # the box's modules import it from here

Protection = Literal["install", "data"]

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
"""The ``localhand`` package this module is part of (``localhand/safety/..``): found from here,
not by importing the package from below it."""


@functools.cache
def install_paths() -> tuple[str, ...]:
    """The real paths of the installation localhand runs from (see the module's text).
    Fixed for the life of the process: they are what it imported itself from."""
    found: list[str] = []
    if sys.prefix != sys.base_prefix:  # a virtual environment: all of it is ours
        found.append(sys.prefix)
    found += site.getsitepackages() if hasattr(site, "getsitepackages") else []
    if site.ENABLE_USER_SITE:
        found.append(site.getusersitepackages())
    paths = sysconfig.get_paths()
    found += [paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths]
    found.append(_PACKAGE_DIR)
    found.append(sys.executable)
    if sys.argv and os.path.isfile(sys.argv[0]):  # the launcher (pipx's ~/.local/bin/...)
        found.append(sys.argv[0])
    here = os.path.realpath(os.getcwd())
    for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        real = os.path.realpath(entry) if entry else ""
        # Not the directory localhand was started in, nor one holding it: that would make
        # the whole workspace read-only, and Python does not import from it at start-up.
        if real and not is_within(here, real):
            found.append(real)
    real_paths = (os.path.realpath(path) for path in found if path)
    return tuple(dict.fromkeys(path for path in real_paths if os.path.exists(path)))


_WHERE = ("LOCALHAND_HOME", "LOCALHAND_DB", "XDG_DATA_HOME", "HOME", "LOCALAPPDATA")
"""The variables ``paths.data_dir`` and ``paths.db_path`` read."""


def data_paths() -> tuple[str, ...]:
    """The real paths of localhand's data directory and every run store it opened (with
    their SQLite side files). Follows ``LOCALHAND_HOME`` and the rest as they are now (tests
    move them), worked out once for each value: the file tools ask on every path."""
    where = tuple(os.environ.get(name) for name in _WHERE)
    return _data_paths(where, claimed_stores())


@functools.lru_cache(maxsize=32)
def _data_paths(where: tuple[str | None, ...], claimed: tuple[str, ...]) -> tuple[str, ...]:
    env = {name: value for name, value in zip(_WHERE, where, strict=True) if value is not None}
    try:
        found = [os.path.realpath(data_dir(env)), os.path.realpath(db_path(env))]
    except (OSError, RuntimeError):  # no home directory to derive them from
        return ()
    stores = [found[1], *claimed]
    found += [store + side for store in stores for side in SQLITE_SIDE_FILES]
    found += stores
    return tuple(dict.fromkeys(found))


def protected(path: str) -> Protection | None:
    """``"data"`` when the real path ``path`` lies in localhand's data (never read nor
    written by the model), ``"install"`` when in its installation (never written), else
    None."""
    if any(is_within(path, own) for own in data_paths()):
        return "data"
    if any(is_within(path, own) for own in install_paths()):
        return "install"
    return None


def inside(roots: tuple[str, ...], paths: tuple[str, ...]) -> list[str]:
    """Those of ``paths`` that lie inside one of ``roots`` (real paths both), in order."""
    return [path for path in paths if any(is_within(path, root) for root in roots)]


def refusal(shown: str, protection: Protection) -> str:
    """What a file tool tells the model about ``shown``, a path it may not use."""
    if protection == "data":
        return (
            f"'{shown}' is in localhand's own data directory (its run store and checkpoints), "
            "which the model can neither read nor change; leave it alone and work elsewhere "
            "in the workspace"
        )
    return (
        f"'{shown}' is part of the Python installation localhand itself runs from, which the "
        "model cannot change (a file planted there would run at localhand's next start); "
        "leave it alone, or create a separate virtual environment for the project"
    )

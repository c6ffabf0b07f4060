"""Modules the run created that a check's Python would import in place of another.

``python -m pytest`` puts the working directory first on ``sys.path``, and ``python3
check.py`` the script's folder: a ``json.py`` or ``iniconfig.py`` the run writes there is
imported instead of the standard library's module or the test runner's own dependency. Which
names count is asked of the check's interpreter (the first ``python3`` on the check's
``PATH``) rather than kept as a list: its standard library and the top-level names of the
packages it can import. It is asked once per interpreter (path and mtime), in the sandbox
(the ``python3`` found may be one the run could write), and only when checks run and the run
created a module whose name is not already known to be the standard library's.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Iterable
from pathlib import Path

from localhand.evidence.snapshot import Snapshot
from localhand.tools.shell import run_shell

PROBE = (
    "import os, pkgutil, sys\n"
    "ws = os.path.realpath(sys.argv[1])\n"
    "names = set(getattr(sys, 'stdlib_module_names', ())) | set(sys.builtin_module_names)\n"
    # the workspace's own folders (an editable install's path) hold the run's modules
    "paths = [p for p in sys.path if p and os.path.isdir(p) and ('-packages' in p"
    " or not (os.path.realpath(p) + os.sep).startswith(ws + os.sep))]\n"
    "names.update(m.name for m in pkgutil.iter_modules(paths))\n"
    "print(' '.join(sorted(names)))\n"
)
_KNOWN: dict[tuple[str, int], frozenset[str]] = {}
"""What each interpreter (path, mtime) said it imports, for this process."""


def created_shadows(
    workspace: Path, created: Iterable[str], baseline: Snapshot, homes: Iterable[str]
) -> set[str]:
    """The files of ``created`` that make a module a check's Python imports in place of one
    of its standard library or installed packages, from an import folder among ``homes``."""
    found: dict[str, set[str]] = {}
    homes = tuple(homes)
    had = {top for relpath in baseline.files for top, _ in module_names(relpath, homes)}
    for relpath in created:
        for top, module in module_names(relpath, homes):
            # a folder with no __init__ is a namespace portion, which any module outranks
            package = relpath.startswith(top + os.sep + "__init__.")
            python = package or (top == relpath and top.endswith((".py", ".so", ".pyd")))
            if python and module.isidentifier() and top not in had:
                found.setdefault(module, set()).add(relpath)
    names = shadowed(workspace, found) if found else set()
    return {relpath for name in names for relpath in found[name]}


def module_names(relpath: str, homes: Iterable[str] = ("",)) -> list[tuple[str, str]]:
    """``(top-level path, module name)`` for what ``relpath`` adds to an import folder among
    ``homes`` (the workspace itself, ``""``, and the folders of the check's scripts): ``json``
    for ``json.py``, ``json/__init__.py`` or ``json.cpython-311-x86_64-linux-gnu.so``."""
    found = []
    for home in homes:
        prefix = home + os.sep if home else ""
        if relpath.startswith(prefix):
            first = relpath[len(prefix) :].split(os.sep)[0]
            found.append((prefix + first, first.split(".")[0]))
    return found


def shadowed(workspace: Path, names: Iterable[str]) -> set[str]:
    """Those of ``names`` that the check's ``python3`` imports from outside ``workspace``."""
    names = set(names)
    ours = names & (frozenset(sys.stdlib_module_names) | frozenset(sys.builtin_module_names))
    if ours == names:  # known without asking
        return ours
    python = shutil.which("python3", path=os.environ.get("PATH", os.defpath))
    try:
        key = (python or "", os.stat(python).st_mtime_ns if python else 0)
    except OSError:
        return ours
    if key not in _KNOWN and python:
        command = shlex.join([python, "-E", "-c", PROBE, str(workspace)])
        done = run_shell(command, workspace, timeout_s=60, head_bytes=1 << 22, split_stderr=True)
        if done.exit_code == 0:  # one that failed (cancelled, not in the box) is asked again
            _KNOWN[key] = frozenset(done.output.split())
    return ours | (names & _KNOWN.get(key, frozenset()))


__all__ = ["created_shadows", "module_names", "shadowed"]

"""The mounts that seal the sandbox off from the session and from localhand's own files.

``Sandbox.wrap`` (``localhand.safety.box.sandbox``) puts these after its own: ``host_services``
right after the throw-away directories, ``own_files`` after the workspace is bound, so that
what they hide or write-protect stays so inside the workspace too.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from localhand.paths import DATA_SUBDIRS, private_dir
from localhand.safety.box import own_files as own
from localhand.safety.box.own_files import is_within


def host_services() -> list[str]:
    """The directories where the session's services keep their Unix sockets (the Docker
    daemon, D-Bus, an ssh agent and tmux under /run/user, ``$XDG_RUNTIME_DIR``) replaced with
    empty ones, network or not; then shown again, read-only, what ``PATH`` and ``/etc`` need
    from there (NixOS's ``/run/current-system/sw/bin``, a ``resolv.conf`` under /run).
    Abstract sockets belong to the network namespace (``localhand.safety`` network parts)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    return list(_host_services_for(runtime, os.environ.get("PATH", "")))


@functools.lru_cache(maxsize=8)
def _host_services_for(runtime: str, path: str) -> tuple[str, ...]:
    options: list[str] = []
    hidden: list[str] = []
    for where in ("/run", "/var/run", runtime):
        if where and os.path.isdir(where) and not os.path.islink(where):
            real = os.path.realpath(where)
            if real not in hidden and real not in ("/", "/tmp"):
                hidden.append(real)  # writable, but private and thrown away, as /tmp is
                options += ["--tmpfs", real]
    wanted = [entry for entry in path.split(os.pathsep) if entry.startswith("/")]
    wanted += _etc_links_into(hidden)
    shown: list[str] = []
    for entry in wanted:
        entry = os.path.normpath(entry)
        if under(entry, hidden) and entry not in shown and os.path.exists(entry):
            shown.append(entry)
            options += ["--ro-bind", os.path.realpath(entry), entry]
    return tuple(options)


def _etc_links_into(hidden: Sequence[str]) -> list[str]:
    """Files of ``/etc`` that are symlinks into a hidden directory (``resolv.conf`` ->
    ``/run/systemd/resolve/stub-resolv.conf``): where they lead, so they still work."""
    found = []
    try:
        entries = list(os.scandir("/etc"))
    except OSError:
        return []
    for entry in entries:
        if entry.is_symlink():
            target = os.path.realpath(entry.path)
            if under(target, hidden) and os.path.isfile(target):
                found.append(target)
    return found


def own_files(writable: Sequence[str]) -> list[str]:
    """localhand's own installation inside a tree the command may write, mounted read-only
    over it, and its data directory and stores, hidden wherever they are (see
    ``localhand.safety.box.own_files``). A data directory inside a writable tree is made first if
    missing, so the command cannot plant one (a forged checkpoint) for localhand to find, and
    the directories on the way to them are pinned (``_ancestors``)."""
    roots = tuple(writable)
    installs = own.inside(roots, own.install_paths())
    data, *stores = own.data_paths()
    if own.inside(roots, (data,)) and not os.path.exists(data):
        with contextlib.suppress(OSError):
            private_dir(Path(data))
    hide = [data]
    if any(is_within(root, data) for root in roots):  # the workspace is in it: its parts,
        hide = [os.path.join(data, name) for name in DATA_SUBDIRS]  # made first, as above
        for path in hide:
            with contextlib.suppress(OSError):
                private_dir(Path(path))
    targets = [p for p in (*installs, *hide, *stores) if os.path.lexists(p)]
    options = [
        o for a in _ancestors(own.inside(roots, tuple(targets)), roots) for o in ("--bind", a, a)
    ]
    for path in installs:
        options += ["--ro-bind", path, path]
    emptied: list[str] = []
    for path in (*hide, *stores):
        if under(path, emptied):
            continue  # hidden already with the directory it is in
        if os.path.isdir(path) and not os.path.islink(path):
            emptied.append(path)
            options += ["--tmpfs", path]
        elif os.path.isfile(path):
            options += ["--ro-bind", "/dev/null", path]
    for path in emptied:  # last: nothing can be mounted inside once read-only
        options += ["--remount-ro", path]
    return options


def _ancestors(paths: Sequence[str], roots: Sequence[str]) -> list[str]:
    """The directories between a root and each of ``paths``, shallowest first, to be bound
    onto themselves: a mount point cannot be renamed, so a command cannot move ``src`` (with
    localhand's source in it) or ``.local`` (with its data) aside and plant a forged one
    where localhand will look next time."""
    found: set[str] = set()
    for path in paths:
        root = max((r for r in roots if is_within(path, r)), key=len, default=None)
        parent = os.path.dirname(path)
        while root is not None and parent != root and is_within(parent, root):
            found.add(parent)
            parent = os.path.dirname(parent)
    return sorted(found, key=lambda p: (p.count("/"), p))


def under(path: str, parents: Iterable[str]) -> bool:
    return any(is_within(path, parent) for parent in parents)

"""The operating system as the boundary: every command the model writes runs in bubblewrap.

No list of shell shapes can tell every command that writes outside the workspace from one
that does not (``sed '1e …'``, ``trap … EXIT``, ``IFS`` tricks, ``python3 -c``…), so the
command is not trusted at all. In ``workspace-write`` mode (the default) it sees:

- the root file system read-only, the workspace read-write (``read-only`` mode: read-only too);
- a private, empty ``/tmp``, ``/var/tmp`` and ``/dev/shm`` and a minimal ``/dev``;
- ``$HOME`` as an empty, throw-away directory (where SSH keys, cloud credentials and tokens
  live), except the toolchains on ``PATH`` and what the user lists in ``[sandbox] read``;
- its own PID namespace, so no other process (localhand's included) is visible in ``/proc``,
  and everything in it ends when its supervisor does (``--die-with-parent``);
- no capability, even when localhand runs as root (the mounts cannot be undone);
- with the network off, its own network namespace (only a loopback of its own), no ``/run``
  (where other programs keep their sockets), and through its supervisor no Unix-domain socket
  and no file opened for writing outside the workspace and the throw-away directories
  (``offline_flags``: a FIFO outside carries nothing out either).

Where bubblewrap cannot run (not installed, no user namespaces, not Linux) ``available()``
says why, the run says so once, and commands run as before (scrubbed environment,
supervised) unless the mode is ``required``, which refuses to run anything instead.

The sandbox in force is a context variable, like the task's deadline: ``use_sandbox`` sets it
for a run, and ``run_shell`` asks ``current_sandbox()``. Without one, ``DEFAULT`` applies, so
library users get the boundary too.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Literal

from localhand.config import SANDBOX_SETTINGS
from localhand.safety.supervise import SUPERVISOR

SandboxMode = Literal["workspace-write", "read-only", "off"]

_PROBE_TIMEOUT_S = 10
_STATE_DIRS = frozenset((".config", ".local", ".cache", ".ssh", ".gnupg", ".aws", ".docker"))
"""Children of $HOME that hold settings, keys or state: a PATH entry inside one is shown on
its own, never the whole directory (``~/.local/bin``, not ``~/.local``)."""


@dataclass(frozen=True, slots=True)
class Sandbox:
    """Where a command may write and what it may see. ``Sandbox()`` is the default."""

    mode: SandboxMode = "workspace-write"
    """``workspace-write``, ``read-only`` (the workspace too) or ``off``."""
    required: bool = False
    """Refuse to run commands where bubblewrap cannot run, instead of running them unboxed."""
    network: bool = True
    """False: a network namespace of its own (loopback only) and no sockets from outside."""
    read: tuple[str, ...] = ()
    """Paths under ``$HOME`` the command may read (``~/.gitconfig``); the rest is hidden."""

    @classmethod
    def from_setting(cls, value: str, *, network: bool = True, read: Iterable[str] = ()) -> Sandbox:
        """The sandbox for a ``--sandbox`` value (see ``SANDBOX_SETTINGS``)."""
        if value not in SANDBOX_SETTINGS:
            raise ValueError(f"must be one of {', '.join(SANDBOX_SETTINGS)}")
        if value == "required":
            return cls("workspace-write", True, network, tuple(read))
        return cls(value, False, network, tuple(read))  # type: ignore[arg-type]

    @property
    def on(self) -> bool:
        return self.mode != "off"

    def without_network(self) -> Sandbox:
        return replace(self, network=False)

    def wrap(
        self,
        argv: Sequence[str],
        workspace: str | os.PathLike[str],
        cwd: str | os.PathLike[str] | None = None,
        also_writable: Sequence[str | os.PathLike[str]] = (),
    ) -> list[str]:
        """``argv`` as it runs inside this sandbox, with ``workspace`` (and ``also_writable``,
        for localhand's own git) as the only trees it may write. Call only when
        ``available()`` is None."""
        bwrap = shutil.which("bwrap")
        assert bwrap is not None, "wrap() needs bubblewrap: check available() first"
        root = os.path.realpath(workspace)
        options = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        options += _hidden(self.read)
        if not self.network:
            options += _hidden_sockets()
        options += ["--bind" if self.mode == "workspace-write" else "--ro-bind", root, root]
        for path in map(os.path.realpath, also_writable):
            options += ["--bind", path, path]
        options += ["--unshare-pid", "--unshare-ipc", "--die-with-parent", "--new-session"]
        # Run as root, bubblewrap keeps every capability unless told: with CAP_SYS_ADMIN a
        # command could remount the read-only root writable or unmount the hidden $HOME.
        options += ["--cap-drop", "ALL"]
        if not self.network:
            options.append("--unshare-net")
        options += ["--chdir", os.path.realpath(cwd or root), "--", *argv]
        return options

    def environment(
        self, environ: dict[str, str], workspace: str | os.PathLike[str]
    ) -> dict[str, str]:
        """``environ`` for a command inside this sandbox. A ``PYTHONPYCACHEPREFIX`` outside
        the workspace is dropped: the sandbox hides or write-protects it, and Python, which
        then looks for compiled files only there, would compile everything every command
        imports again (0.1-0.4 s a command, measured); without it, Python uses the
        ``__pycache__`` folders beside the sources, as installed packages ship them."""
        prefix = environ.get("PYTHONPYCACHEPREFIX")
        if prefix and not _is_within(os.path.realpath(prefix), os.path.realpath(workspace)):
            return {k: v for k, v in environ.items() if k != "PYTHONPYCACHEPREFIX"}
        return environ

    def offline_flags(self, workspace: str | os.PathLike[str]) -> list[str]:
        """What the supervisor does for a command without network, sandboxed or not, so that
        nothing carries data out another way: no Unix-domain socket at all (seccomp), and
        files opened for writing only in the workspace and the throw-away directories
        (Landlock: a FIFO outside, which a read-only mount does not stop, included)."""
        if self.network:
            return []
        home = os.path.realpath(os.path.expanduser("~"))
        beneath = [os.path.realpath(workspace), "/tmp", "/var/tmp", "/dev/shm", "/dev", "/proc"]
        if home not in ("/", ""):
            beneath.append(home)
        return ["--no-unix-sockets", *(f"--write-beneath={path}" for path in beneath)]


DEFAULT = Sandbox()
_current: ContextVar[Sandbox] = ContextVar("localhand_sandbox", default=DEFAULT)


@contextmanager
def use_sandbox(sandbox: Sandbox) -> Iterator[None]:
    """Commands run in this block (this thread or task) get ``sandbox``."""
    token = _current.set(sandbox)
    try:
        yield
    finally:
        _current.reset(token)


def current_sandbox() -> Sandbox:
    return _current.get()


@functools.cache
def available() -> str | None:
    """None when bubblewrap can run a sandbox here; else why not, in words a person can act
    on. Tried once per process with every namespace a sandbox uses."""
    if not sys.platform.startswith("linux"):
        return f"commands cannot be sandboxed on {sys.platform} (bubblewrap is Linux-only)"
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    probe = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs",
             "/tmp", "--unshare-pid", "--unshare-ipc", "--unshare-net", "--die-with-parent",
             "--new-session", "--cap-drop", "ALL", "--", "true"]  # fmt: skip
    try:
        done = subprocess.run(
            probe, capture_output=True, timeout=_PROBE_TIMEOUT_S, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"bubblewrap cannot run here ({error})"
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        why = said[-1] if said else f"exit code {done.returncode}"
        return (
            f"bubblewrap cannot create a sandbox here ({why}); this system probably forbids "
            "unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, or "
            "kernel.apparmor_restrict_unprivileged_userns=0 on Ubuntu, allows them)"
        )
    return None


def fallback_warning(sandbox: Sandbox) -> str | None:
    """What to tell the person once per run when ``sandbox`` cannot be had, or None."""
    if not sandbox.on:
        return None
    why = available()
    if why is None:
        return None
    return (
        f"Commands will NOT be sandboxed: {why}. They run with secrets removed from their "
        "environment and the risk classifier asking before dangerous ones, but nothing stops "
        "a command from writing outside the workspace. Use --sandbox required to refuse to run "
        "instead, or --sandbox off to silence this."
    )


def refusal(sandbox: Sandbox) -> str | None:
    """Why no command may run at all (``required`` without bubblewrap), or None."""
    if not (sandbox.on and sandbox.required):
        return None
    why = available()
    if why is None:
        return None
    return f"the sandbox is required (--sandbox required) but {why}; nothing was run"


def _hidden(read: Iterable[str]) -> list[str]:
    """Options that replace ``/tmp``, ``/var/tmp``, ``/dev/shm`` and $HOME with empty,
    writable, throw-away directories and hide the run store, then show again, read-only, what
    commands need from them (the toolchains on PATH, the interpreter and supervisor localhand
    runs commands with) and the paths the user allowed."""
    home = os.path.realpath(os.path.expanduser("~"))
    hidden = ["/tmp", "/var/tmp", "/dev/shm"]
    if home not in ("/", "") and os.path.isdir(home):
        hidden.append(home)
    data = _data_dir()  # the run store: other runs' outputs and events
    if data is not None and os.path.isdir(data) and not _under(data, hidden):
        hidden.append(data)
    options = [option for path in hidden for option in ("--tmpfs", path)]
    shown: list[str] = []
    for path in [*_toolchains(hidden), *(os.path.realpath(os.path.expanduser(p)) for p in read)]:
        hides_store = data is not None and _is_within(path, data)
        wanted = path not in shown and _under(path, hidden) and not hides_store
        if wanted and os.path.exists(path):
            shown.append(path)
    for path in shown:
        options += ["--ro-bind", path, path]
    for secret in _TOOLCHAIN_SECRETS:
        path = os.path.join(home, secret)
        if _under(path, shown) and os.path.isfile(path):
            options += ["--ro-bind", "/dev/null", path]
    return options


_TOOLCHAIN_SECRETS = (".cargo/credentials.toml", ".cargo/credentials")
"""Tokens kept inside a toolchain directory that is otherwise shown."""
_COMPANIONS = {".cargo": ".rustup", ".local/bin": ".local/lib"}
"""What a toolchain on PATH needs beside it: rustup's proxies, pip --user's packages."""


def _toolchains(hidden: Sequence[str]) -> list[str]:
    """What in the hidden directories a command needs to run its tools: for each PATH entry
    there, the directory it belongs to (``~/.pyenv`` for ``~/.pyenv/shims``, a venv for its
    ``bin``), and the prefixes and supervisor of the interpreter localhand runs commands with
    (a venv's ``python`` links to its base interpreter)."""
    return list(_toolchains_on(tuple(hidden), os.environ.get("PATH", "")))


@functools.lru_cache(maxsize=16)
def _toolchains_on(hidden: tuple[str, ...], path: str) -> tuple[str, ...]:
    """``_toolchains`` for one PATH: resolving its entries was half of what wrapping a command
    cost, and a run's PATH does not change between its commands."""
    found = [os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, SUPERVISOR)]
    for entry in (p for p in path.split(os.pathsep) if p):
        real = os.path.realpath(entry)
        root = next((h for h in hidden if _is_within(real, h) and real != h), None)
        if root is None:
            continue
        parent = os.path.dirname(real)
        top = os.path.relpath(real, root).split(os.sep)[0]
        found.append(real if parent == root or top in _STATE_DIRS else parent)
        for name, companion in _COMPANIONS.items():
            if _is_within(real, os.path.join(root, name)):
                found.append(os.path.join(root, companion))
    return tuple(found)


def _under(path: str, parents: Iterable[str]) -> bool:
    return any(_is_within(path, parent) for parent in parents)


def _hidden_sockets() -> list[str]:
    """Without network, the directories where other programs keep their Unix sockets (the
    Docker daemon, D-Bus, an SSH agent under /run/user) are replaced with empty ones.
    Abstract sockets belong to the network namespace, so ``--unshare-net`` hides those."""
    options = []
    for path in ("/run", "/var/run"):
        if os.path.isdir(path) and not os.path.islink(path):
            options += ["--tmpfs", path]
    return options


def _data_dir() -> str | None:
    from localhand.paths import data_dir  # small; imported late so this module stays leaf

    try:
        return os.path.realpath(data_dir())
    except (OSError, RuntimeError):  # no home directory to derive it from
        return None


def _is_within(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


@contextmanager
def run_sandbox(
    mode: str, *, network: bool, read: Iterable[str], warn: Callable[[str], None]
) -> Iterator[Sandbox]:
    """The sandbox of one run, in force inside the block: says once (through ``warn``) when
    it cannot be had, and raises ``ConfigError`` before anything runs when it is required."""
    from localhand.errors import ConfigError

    sandbox = Sandbox.from_setting(mode, network=network, read=read)
    refused = refusal(sandbox)
    if refused is not None:
        raise ConfigError(f"{refused}. Install bubblewrap, or choose another --sandbox mode.")
    message = fallback_warning(sandbox)
    if message is not None:
        warn(message)
    with use_sandbox(sandbox):
        yield sandbox

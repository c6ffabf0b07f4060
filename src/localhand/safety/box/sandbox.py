"""The operating system as the boundary: every command the model writes runs in bubblewrap.

No list of shell shapes can tell every command that writes outside the workspace from one
that does not (``sed '1e …'``, ``trap … EXIT``, ``IFS`` tricks, ``python3 -c``…), so the
command is not trusted at all. In ``workspace-write`` mode (the default) it sees:

- the root file system read-only, the workspace read-write (``read-only`` mode: read-only too);
- a private, empty ``/tmp``, ``/var/tmp`` and ``/dev/shm`` of a limited size
  (``[sandbox] tmp_size``) and a minimal ``/dev``;
- ``$HOME`` as an empty, throw-away directory (where SSH keys, cloud credentials and tokens
  live), except the toolchains on ``PATH``, with the credential files kept in them hidden
  (``localhand.safety.secrets.toolchain``), and what the user lists in ``[sandbox] read``;
- no ``/run`` or ``/var/run`` and no ``$XDG_RUNTIME_DIR`` (where the ssh agent, D-Bus, tmux,
  the display and the service manager keep their sockets), whatever the network setting;
  only what ``PATH`` or ``/etc`` needs from there (``/run/wrappers/bin``, ``resolv.conf``) is
  shown again, read-only (``host_services``);
- localhand's own installation read-only and its data directory hidden, wherever they lie,
  the workspace included (``localhand.safety.box.own_files``);
- its own PID namespace, so no other process (localhand's included) is visible in ``/proc``,
  and everything in it ends when its supervisor does (``--die-with-parent``);
- no capability, even when localhand runs as root (the mounts cannot be undone);
- its own network namespace (only a loopback of its own), the network only through the
  run's allow-list proxy, and no socket family beyond IPv4, IPv6, Unix and netlink (see
  ``netbox``; ``[sandbox] network = "host"`` shares the host's network instead);
- with the network off, no proxy, and through its supervisor no Unix-domain socket and no
  file opened for writing outside the workspace and the throw-away directories
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
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from localhand.errors import ConfigError
from localhand.safety.box.home import throwaway_home
from localhand.safety.box.limits import (
    DEFAULT_LIMITS,
    NO_LIMITS,
    BoxLimits,
    held,
    tmp_size_options,
    tmp_size_supported,
    unenforced,
)
from localhand.safety.box.mounts import host_services, own_files
from localhand.safety.box.own_files import is_within
from localhand.safety.box.table import SANDBOX_SETTINGS

if TYPE_CHECKING:
    from localhand.safety.box.netbox import RunNetwork
    from localhand.safety.box.netproxy import NetProxy

SandboxMode = Literal["workspace-write", "read-only", "off"]

_PROBE_TIMEOUT_S = 10


@dataclass(slots=True)
class ProxySlot:
    """A run's network proxy: made when a command first needs it (``netbox.proxy_of``), so
    that a run that never uses the network does not even import it; closed with the run."""

    allow_hosts: tuple[str, ...] = ()
    proxy: NetProxy | None = None
    network: RunNetwork | None = None
    """The network namespace the run's commands share (``netbox.run_network``)."""
    unshared: str | None = None
    """Why they could not share one (each command then has its own), once tried."""


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
    limits: BoxLimits = DEFAULT_LIMITS
    """The size of ``/tmp``, memory and processes (``localhand.safety.box.limits``)."""
    host_network: bool = False
    """With network: share the host's (``[sandbox] network = "host"``) instead of reaching
    it through the allow-list proxy."""
    allow_hosts: tuple[str, ...] = ()
    """``[sandbox] allow_hosts``: hosts (``HOST`` or ``HOST:PORT``) the proxy relays to
    besides the package tools' registries."""
    env: tuple[str, ...] = ()
    """``[sandbox] env``: the user's variables (names, or patterns like ``PREFIX_*``) that
    commands see besides the allow-list (``localhand.safety.secrets.environment``)."""
    proxy: NetProxy | ProxySlot | None = field(default=None, compare=False, repr=False)
    """The proxy, or the run's slot for one (``run_sandbox``); None: the process's."""

    @property
    def on(self) -> bool:
        return self.mode != "off"

    def without_network(self) -> Sandbox:
        return replace(self, network=False)

    def holder(self, proxy: NetProxy) -> Sandbox:
        """The box that holds a run's network (``netbox.RunNetwork``): read-only, a plain
        sandbox (no other binds), with a network of its own and the relays to ``proxy``."""
        return Sandbox("read-only", read=self.read, limits=self.limits, proxy=proxy)

    def wrap(
        self,
        argv: Sequence[str],
        workspace: str | os.PathLike[str],
        cwd: str | os.PathLike[str] | None = None,
        also_writable: Sequence[str | os.PathLike[str]] = (),
    ) -> list[str]:
        """``argv`` as it runs inside this sandbox, with ``workspace`` (and ``also_writable``,
        for localhand's own git) as the only trees it may write. Call only when
        ``available()`` is None. Where the run's commands share a network, the command line
        enters it through the descriptors ``netbox.run_network``'s ``files``, to be passed."""
        bwrap = shutil.which("bwrap")
        assert bwrap is not None, "wrap() needs bubblewrap: check available() first"
        root = os.path.realpath(workspace)
        from localhand.safety.box import netbox  # the proxy's modules: loaded by the first command

        network = netbox.run_network(self, root)  # the run's, entered first, where it has one
        options = [*(network.joining() if network else ()), bwrap, "--ro-bind", "/", "/"]
        options += ["--dev", "/dev", "--proc", "/proc"]
        options += throwaway_home(self.read, tmp_size_options(self.limits))
        options += host_services()
        options += ["--bind" if self.mode == "workspace-write" else "--ro-bind", root, root]
        writable = [root, *map(os.path.realpath, also_writable)]
        for path in writable[1:]:
            options += ["--bind", path, path]
        options += own_files(writable if self.mode == "workspace-write" else writable[1:])
        options += netbox.bwrap_options(self, options, root, joined=network is not None)
        options += ["--unshare-pid", "--unshare-ipc", "--die-with-parent", "--new-session"]
        # Run as root, bubblewrap keeps every capability unless told: with CAP_SYS_ADMIN a
        # command could remount the read-only root writable or unmount the hidden $HOME.
        options += ["--cap-drop", "ALL"]
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
        from localhand.safety.box import netbox  # off the first request's path

        environ = {**environ, **netbox.environment(self)}
        prefix = environ.get("PYTHONPYCACHEPREFIX")
        if prefix and not is_within(os.path.realpath(prefix), os.path.realpath(workspace)):
            return {k: v for k, v in environ.items() if k != "PYTHONPYCACHEPREFIX"}
        return environ

    def report(self) -> dict[str, Any]:
        """What the Result says of this sandbox: ``mode``, whether it was ``enforced``
        (false: commands ran unsandboxed, or not at all with ``required``), ``why`` not, and
        the ``limits`` (bytes and processes; null: none), with what ``held`` each (by what)
        and those ``unenforced``."""
        why = None if not self.on else available()
        if not self.on:
            why = "the sandbox is off (--sandbox off)"
        limits = self.limits if self.on else NO_LIMITS
        return {
            "mode": "required" if self.required else self.mode,
            "enforced": self.on and why is None,
            "why": why,
            "limits": {
                "tmp_size": limits.tmp_size,
                "memory": limits.memory,
                "processes": limits.processes,
                "held": held(limits, boxed=why is None),
                "unenforced": unenforced(limits),
            },
        }

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

    def supervisor_flags(self, workspace: str | os.PathLike[str]) -> list[str]:
        """``offline_flags`` and, for a command inside this sandbox with network, the socket
        families it may open and the relay to the proxy (``netbox.supervisor_flags``)."""
        from localhand.safety.box import netbox  # off the first request's path

        root = os.path.realpath(workspace)
        return [*self.offline_flags(workspace), *netbox.supervisor_flags(self, root)]


DEFAULT = Sandbox()
_current: ContextVar[Sandbox] = ContextVar("localhand_sandbox", default=DEFAULT)
_warn: ContextVar[Callable[[str], None] | None] = ContextVar("localhand_box_warn", default=None)
"""Where the run in force takes warnings: a command that met a limit is one of its events."""


def limit_hit(message: str) -> None:
    """Tell the run in force (its events: a warning) that a command met a sandbox limit."""
    warn = _warn.get()
    if warn is not None:
        warn(message)


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


_early: dict[str, Any] = {}
"""The probe started by ``probe_early``: its thread, then its verdict."""


def probe_early() -> None:
    """Start the probes a run's sandbox needs (``available``, and whether bubblewrap takes
    ``--size``) on a thread of their own, so that their processes (~30 ms, most of it making
    the namespaces) run while the run imports and sets up, instead of before its first model
    request. ``available`` waits for this probe rather than starting another; what it finds
    is the same as when asked there."""
    if "thread" in _early or available.cache_info().currsize:
        return

    def probe() -> None:
        _early["verdict"] = _probe()
        tmp_size_supported()

    thread = threading.Thread(target=probe, name="localhand-sandbox-probe", daemon=True)
    _early["thread"] = thread
    thread.start()


@functools.cache
def available() -> str | None:
    """None when bubblewrap can run a sandbox here; else why not, in words a person can act
    on. Tried once per process with every namespace a sandbox uses."""
    thread = _early.get("thread")
    if thread is not None and thread is not threading.current_thread():
        thread.join()
        if "verdict" in _early:
            verdict: str | None = _early["verdict"]
            return verdict
    return _probe()


def _probe() -> str | None:
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
    why = available() if sandbox.on else None
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
    why = available() if sandbox.on and sandbox.required else None
    if why is None:
        return None
    return f"the sandbox is required (--sandbox required) but {why}; nothing was run"


@contextmanager
def run_sandbox(
    mode: str,
    *,
    network: bool,
    read: Iterable[str],
    warn: Callable[[str], None],
    limits: BoxLimits = DEFAULT_LIMITS,
    network_setting: str = "proxy",
    allow_hosts: Iterable[str] = (),
    env: Iterable[str] = (),
) -> Iterator[Sandbox]:
    """The sandbox of one run, in force inside the block: says once (through ``warn``) when
    it cannot be had, and raises ``ConfigError`` before anything runs when it is required.
    ``network_setting`` (``[sandbox] network``): ``proxy`` or ``host``; the run's proxy, if
    a command started it, stops when the block ends. ``env``: ``[sandbox] env``."""
    if mode not in SANDBOX_SETTINGS:  # --sandbox: "required" is workspace-write, never unboxed
        raise ValueError(f"must be one of {', '.join(SANDBOX_SETTINGS)}")
    required = mode == "required"
    box_mode: SandboxMode = "workspace-write" if required else mode  # type: ignore[assignment]
    sandbox = Sandbox(box_mode, required, network, tuple(read), limits, network_setting == "host")
    slot = ProxySlot(tuple(allow_hosts))
    sandbox = replace(sandbox, allow_hosts=slot.allow_hosts, env=tuple(env), proxy=slot)
    refused = refusal(sandbox)
    if refused is not None:
        raise ConfigError(f"{refused}. Install bubblewrap, or choose another --sandbox mode.")
    message = fallback_warning(sandbox)
    if message is not None:
        warn(message)
    elif sandbox.on and sandbox.network and sandbox.host_network:
        warn(_HOST_NETWORK_WARNING)
    if sandbox.on and message is None:  # unboxed, the warning above says it all
        for what in unenforced(sandbox.limits):
            warn(f"Not enforced here: {what}. Commands run without that limit.")
    token = _warn.set(warn)
    try:
        with use_sandbox(sandbox):
            yield sandbox
    finally:
        _warn.reset(token)
        if slot.network is not None:  # its commands have ended: the run's tools closed
            slot.network.close()
        if slot.proxy is not None:
            slot.proxy.close()


_HOST_NETWORK_WARNING = (
    'Commands share this machine\'s network ([sandbox] network = "host"): they can reach the '
    "model server, databases and every other service listening here, and any host. Remove the "
    "setting to give them only the allow-list proxy."
)

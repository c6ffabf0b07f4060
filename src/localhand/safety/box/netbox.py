"""The sandbox's network, in one place: what bubblewrap, the supervisor and the command's
environment get for each ``[sandbox] network`` setting.

- ``proxy`` (the default): a network namespace of its own (``--unshare-net``: only its own
  loopback, so no host loopback port and no abstract Unix socket of the host), the run's
  ``NetProxy`` socket bound in, and the supervisor relaying ``127.0.0.1:RELAY_PORT`` to it,
  which ``HTTP(S)_PROXY`` and npm's settings name. A host loopback port that
  ``[sandbox] allow_hosts`` names (``127.0.0.1:5432``) is relayed from the same port of the
  box's loopback, through the proxy, for clients that speak no HTTP proxy (a database's).
  The commands of one run share one such namespace (``RunNetwork``): a box of its own holds
  it and the relays, from the run's first command with network to its end, and each command
  enters it (``JOIN``) instead of making its own, so a server one command started on the
  loopback serves the next ones, and nothing outside the run. A sandbox no run set up
  (library use) gives each command a namespace of its own.
- ``host``: the host's network as before (``[sandbox] network = "host"``; the run warns).
- off (``--no-network``): a namespace of its own and no proxy; the supervisor allows no Unix
  socket at all (``Sandbox.offline_flags``).

In every mode a seccomp filter refuses socket families beyond IPv4, IPv6, Unix and netlink
(``AF_VSOCK`` to a hypervisor, ``AF_PACKET``, ``AF_BLUETOOTH``...), and, with a network,
every Unix socket the host has bound at a path outside the workspace that the box can see is
covered with ``/dev/null`` (connecting to it is refused), so no host service is reachable
through its socket file. Sockets bound after the command started are not covered.
"""

from __future__ import annotations

import atexit
import fcntl
import os
import select
import stat
import sys
import threading
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING

from localhand.errors import ConfigError
from localhand.safety.box.netproxy import NetProxy
from localhand.safety.box.supervise import Supervised

if TYPE_CHECKING:
    from localhand.safety.approval.approver import Approver
    from localhand.safety.box.sandbox import Sandbox

RELAY_PORT = 39128
"""Where, on the box's own loopback, the supervisor relays to the proxy."""
_PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY",
                    "all_proxy", "npm_config_proxy", "npm_config_https_proxy")  # fmt: skip
_OWN_LOOPBACK = "localhost,127.0.0.1,::1"
"""``NO_PROXY`` in the box: its loopback is its own (a test server a command starts), never
the host's, so talking to it directly is safe and what the command means."""
_NS_GET_USERNS = 0xB701
"""ioctl: a namespace file's owning user namespace, as a new descriptor (Linux 4.9+)."""
_LOOPBACK_NAMES = frozenset(("127.0.0.1", "localhost", "::1"))
_ONE_ARGUMENT = frozenset(("--tmpfs", "--dev", "--proc", "--dir", "--mqueue"))
_TWO_ARGUMENTS = frozenset(("--bind", "--ro-bind", "--dev-bind", "--bind-try", "--ro-bind-try",
                            "--dev-bind-try", "--symlink"))  # fmt: skip

_default_proxy: NetProxy | None = None
_default_lock = threading.Lock()


def uses_proxy(sandbox: Sandbox) -> bool:
    return sandbox.network and not sandbox.host_network


def proxy_of(sandbox: Sandbox) -> NetProxy:
    """The sandbox's proxy, made now for a run's slot; for a sandbox no run set up (library
    use), one for the process, stopped when the process exits."""
    if isinstance(sandbox.proxy, NetProxy):
        return sandbox.proxy
    global _default_proxy
    with _default_lock:
        if sandbox.proxy is not None:  # the run's ProxySlot
            if sandbox.proxy.proxy is None:
                sandbox.proxy.proxy = _made(sandbox.proxy.allow_hosts)
            return sandbox.proxy.proxy
        if _default_proxy is None:
            _default_proxy = _made(sandbox.allow_hosts)
            atexit.register(_default_proxy.close)
        return _default_proxy


JOIN = """import ctypes, os, sys
setns, bwrap = ctypes.CDLL(None, use_errno=True).setns, sys.argv[4:]
ids = ["--unshare-user", "--uid", str(os.getuid()), "--gid", str(os.getgid())]
for fd, kind in ((int(sys.argv[1]), 0x10000000), (int(sys.argv[2]), 0x40000000)):  # user, net
    own = kind == 0x10000000 and os.fstat(fd).st_ino == os.stat("/proc/self/ns/user").st_ino
    if not own and setns(fd, kind) != 0:
        sys.exit("localhand: cannot enter the run's network: " + os.strerror(ctypes.get_errno()))
    bwrap[1:1] = ids if kind == 0x10000000 and not own else []  # as who the command ran
    os.close(fd)
os.execv(bwrap[0], bwrap)"""
"""Run by ``python -I -S -c JOIN USER NET -- BWRAP...``: enters the run's user namespace (where
it is not this one: bubblewrap run by root makes none) and network namespace, through the
namespace files localhand holds open and passed as descriptors USER and NET (closed once
entered), then becomes bubblewrap, which makes the command's box without a network of its
own, in a user namespace of its own as the same user (in the run's it would be its root,
though without capabilities). It never runs the command outside them: a failure ends it."""


class RunNetwork:
    """One run's network namespace, held by a box of its own (``sandbox`` read-only, with its
    own network and the relays to the proxy) from its first command with network to the
    run's end (``close``); its namespace files stay open here for the commands to enter."""

    def __init__(self, box: Sandbox, workspace: str) -> None:
        self.holder = Supervised(
            ["sh", "-c", "echo ready; exec sleep infinity"], workspace, {"PATH": os.defpath},
            lambda argv: box.wrap(argv, workspace), flags=supervisor_flags(box, workspace),
        )  # fmt: skip
        try:
            said = select.select([self.holder.output_fd], [], [], 10)[0]
            if not said or os.read(self.holder.output_fd, 6) != b"ready\n":
                raise OSError("its box did not start within 10 s")
            bwrap = self.holder.proc.pid  # its first child is in the namespaces it made
            with open(f"/proc/{bwrap}/task/{bwrap}/children") as children:
                pid = int((children.read().split() or ["0"])[0])  # none: /proc/0 fails, OSError
            net = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY)
            # The user namespace that owns it (bubblewrap nests another for the command).
            self.files = [fcntl.ioctl(net, _NS_GET_USERNS), net]
            if os.fstat(self.files[1]).st_ino == os.stat("/proc/self/ns/net").st_ino:
                raise OSError("its box shares this machine's network")  # never entered
        except BaseException:
            self.holder.end()
            raise

    def joining(self) -> list[str]:
        """The command line that enters this network before the bubblewrap line after it,
        started with ``files`` passed (``Supervised``'s ``keep_fds``)."""
        return [sys.executable, "-I", "-S", "-c", JOIN, *map(str, self.files), "--"]

    def close(self) -> None:
        """Stop the holder and its relays (the commands have ended: their run has)."""
        self.holder.end()
        for fd in self.files:
            os.close(fd)


def run_network(sandbox: Sandbox, workspace: str) -> RunNetwork | None:
    """The network the run's commands share, its holder started now by the first command
    that needs it; None where each command has its own namespace or none: no proxy (the
    network off or the host's), or a sandbox no run set up (its proxy the process's)."""
    slot = sandbox.proxy
    if not uses_proxy(sandbox) or slot is None or isinstance(slot, NetProxy):
        return None
    box = sandbox.holder(proxy_of(sandbox))
    with _default_lock:
        if slot.network is None and slot.unshared is None:
            try:
                slot.network = RunNetwork(box, workspace)
            except OSError as error:  # then each command has a namespace of its own, as before
                slot.unshared = str(error)
        return slot.network


def _made(allow_hosts: tuple[str, ...]) -> NetProxy:
    try:
        return NetProxy(allow_hosts)
    except ValueError as error:
        raise ConfigError(f"[sandbox] allow_hosts: {error}") from None


def asking(sandbox: Sandbox | None, approver: Approver | None) -> AbstractContextManager[None]:
    """While a command runs in ``sandbox`` (None: unsandboxed), its proxy asks
    ``approver`` about hosts not on the list."""
    if sandbox is None or not uses_proxy(sandbox):
        return nullcontext()
    proxy = proxy_of(sandbox)
    proxy.take_refusals()  # refusals before this command (another run's) are not its own
    return proxy.asking(approver)


def refusal_notes(sandbox: Sandbox) -> list[str]:
    """What the proxy refused since the last call, one note each for the tool result: the
    command may show only a status code, and the model must learn which setting allows it."""
    if not (sandbox.on and uses_proxy(sandbox)):
        return []
    return [f"[Sandbox: {refused}]" for refused in proxy_of(sandbox).take_refusals()]


def bwrap_options(
    sandbox: Sandbox, mounts: Sequence[str], workspace: str, joined: bool
) -> list[str]:
    """What bubblewrap adds for the network, after ``mounts`` (the options so far); nothing
    of its own where the command ``joined`` the run's network (``run_network``)."""
    options: list[str] = []
    if not ((sandbox.network and sandbox.host_network) or joined):  # its own network namespace
        options.append("--unshare-net")
    if sandbox.network:  # without network, no Unix socket can be opened at all
        for path in outside_sockets(mounts, workspace):
            options += ["--ro-bind", "/dev/null", path]
    if uses_proxy(sandbox) and not joined:
        directory = os.path.dirname(proxy_of(sandbox).socket_path(workspace))
        options += ["--ro-bind", directory, directory]
    return options


def supervisor_flags(sandbox: Sandbox, workspace: str) -> list[str]:
    """What the supervisor does for a sandboxed command with network (see ``netbox``)."""
    if not sandbox.network:
        return []  # offline_flags: no Unix socket, and the same families otherwise
    flags = ["--no-other-sockets"]
    if uses_proxy(sandbox) and run_network(sandbox, workspace) is None:  # else the holder's
        proxy = proxy_of(sandbox)
        path = proxy.socket_path(workspace)
        flags.append(f"--relay={RELAY_PORT}={path}")
        for entry in proxy.configured:  # a local database: the same port on the box's loopback
            if entry.host in _LOOPBACK_NAMES and entry.port not in (None, RELAY_PORT):
                flags.append(f"--relay={entry.port}={path}={entry}")
    return flags


def environment(sandbox: Sandbox) -> dict[str, str]:
    """The variables that send a sandboxed command's HTTP(S) through the proxy."""
    if not uses_proxy(sandbox):
        return {}
    url = f"http://127.0.0.1:{RELAY_PORT}"
    return {
        **dict.fromkeys(_PROXY_VARIABLES, url),
        "NO_PROXY": _OWN_LOOPBACK,
        "no_proxy": _OWN_LOOPBACK,
    }


def outside_sockets(mounts: Sequence[str], workspace: str) -> list[str]:
    """The host's path Unix sockets (``/proc/net/unix``) outside ``workspace`` that the box
    shows as they are on the host (not under a ``--tmpfs`` or another mount of its own)."""
    try:
        with open("/proc/net/unix", "rb") as table:
            lines = table.read().decode("utf-8", "surrogateescape").splitlines()[1:]
    except OSError:
        return []
    root = workspace.rstrip("/") + "/"
    views = _mount_points(mounts)
    found: list[str] = []
    for line in lines:
        fields = line.split(None, 7)
        if len(fields) < 8 or not fields[7].startswith("/"):
            continue  # unnamed, abstract (``@``: the box's namespace has none) or relative
        path = fields[7]
        if path in found or (path + "/").startswith(root) or not _shown_as_is(path, views):
            continue
        try:
            if stat.S_ISSOCK(os.lstat(path).st_mode):
                found.append(path)
        except OSError:
            continue  # the socket's file is gone
    return found


def _mount_points(options: Sequence[str]) -> list[tuple[str, str | None]]:
    """(where, host source or None for a mount of the box's own) of each mount, in order."""
    mounts: list[tuple[str, str | None]] = []
    index = 0
    while index < len(options):
        option = options[index]
        if option in _ONE_ARGUMENT and index + 1 < len(options):
            mounts.append((options[index + 1], None))
            index += 2
        elif option in _TWO_ARGUMENTS and index + 2 < len(options):
            source = None if option == "--symlink" else options[index + 1]
            mounts.append((options[index + 2], source))
            index += 3
        else:
            index += 1
    return mounts


def _shown_as_is(path: str, mounts: list[tuple[str, str | None]]) -> bool:
    """Whether the box shows the host's ``path``: the last mount over it binds the same
    host path there."""
    for where, source in reversed(mounts):
        if path == where or path.startswith(where.rstrip("/") + "/"):
            return source is not None and source == where
    return False

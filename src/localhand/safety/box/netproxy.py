"""The only way out of the sandbox's network namespace: an HTTP proxy outside the box that
relays to allowed hosts (``allow_hosts``) and refuses the rest, saying which setting allows it.

It listens on a Unix socket in a private directory that the sandbox binds in; inside the box
the command's supervisor relays ``127.0.0.1:RELAY_PORT`` of the box's own loopback to that
socket (``netbox``). It speaks what package tools speak through ``HTTPS_PROXY``: ``CONNECT
host:port`` (https, tunnelled as it is) and absolute-URI requests (plain http, one request per
connection).

Never relayed, whatever the list says, unless an ``allow_hosts`` entry names the host with
its port: an address of this machine (loopback, link-local, unspecified, or one its
interfaces carry, so not the model server either), including through a name that resolves to
one (DNS rebinding: the proxy connects to the address it checked, never resolving twice).
Connections are bounded in number and time out when idle, so a slow upstream cannot hold the
run; ``close()`` ends them all with the run.
"""

from __future__ import annotations

import os
import select
import shutil
import socket
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from localhand.safety.box.allow_hosts import (
    Entry,
    is_host,
    normal_host,
    package_tool_hosts,
    parse_entry,
)
from localhand.safety.risk.types import Risk

if TYPE_CHECKING:
    from localhand.safety.approval.approver import Approver

MAX_CONNECTIONS = 64
HEAD_TIMEOUT_S = 30.0
"""For a client to send its request line and headers."""
CONNECT_TIMEOUT_S = 15.0
IDLE_TIMEOUT_S = 120.0
"""A relayed connection that carries nothing either way for this long is closed."""
_HEAD_LIMIT = 64 * 1024
SETTING = "[sandbox] allow_hosts"


class NetProxy:
    """The allow-list proxy of one run. Nothing starts until ``socket_path()`` is asked
    for (the first sandboxed command); the package tools are asked for their hosts at the
    first request (see ``allow_hosts.package_tool_hosts``)."""

    def __init__(
        self,
        allow_hosts: Iterable[str] = (),
        *,
        tool_hosts: Callable[[str | None], tuple[Entry, ...]] = package_tool_hosts,
    ) -> None:
        self.configured = tuple(parse_entry(text) for text in allow_hosts)
        self._tool_hosts = tool_hosts
        self._entries: list[Entry] | None = None
        self._workspace: str | None = None
        self._refused: set[tuple[str, int]] = set()
        self._lock = threading.Lock()  # connections, refusals, starting and stopping
        self._deciding = threading.Lock()  # the list: one tool query, one question at a time
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self._open: set[socket.socket] = set()
        self._directory: str | None = None
        self._listener: socket.socket | None = None
        self._closed = False
        self.approver: Approver | None = None
        """Who is asked about a host not on the list; None (or a refusal): refused."""
        self.refusals: list[str] = []
        """What was refused since ``take_refusals``: one sentence each, for the tool result."""

    def socket_path(self, workspace: str | None = None) -> str:
        """The Unix socket the box relays to, listening from now on."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the network proxy of this run has stopped")
            if self._directory is None:
                self._workspace = workspace
                self._directory = tempfile.mkdtemp(prefix="localhand-net-")
                listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                listener.bind(os.path.join(self._directory, "proxy.sock"))
                listener.listen(MAX_CONNECTIONS)
                self._listener = listener
                threading.Thread(target=self._accept, name="netproxy", daemon=True).start()
            return os.path.join(self._directory, "proxy.sock")

    @property
    def directory(self) -> str | None:
        return self._directory

    @contextmanager
    def asking(self, approver: Approver | None) -> Iterator[None]:
        """Ask ``approver`` about new hosts during the block (one command)."""
        before, self.approver = self.approver, approver
        try:
            yield
        finally:
            self.approver = before

    def take_refusals(self) -> list[str]:
        with self._lock:
            taken, self.refusals = self.refusals, []
        return taken

    def close(self) -> None:
        """Stop listening and end every relayed connection."""
        with self._lock:
            self._closed = True
            listener, self._listener = self._listener, None
            connections = list(self._open)
        if listener is not None:
            _quietly_close(listener, shutdown=True)
        for connection in connections:
            _quietly_close(connection, shutdown=True)
        if self._directory is not None:
            shutil.rmtree(self._directory, ignore_errors=True)

    def _accept(self) -> None:
        listener = self._listener
        while listener is not None and not self._closed:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            if not self._slots.acquire(blocking=False):
                _send_status(client, 503, "too many connections through localhand's proxy")
                _quietly_close(client)
                continue
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        upstream: socket.socket | None = None
        self._track(client)
        try:
            client.settimeout(HEAD_TIMEOUT_S)
            head, rest = _read_head(client)
            if head is None:
                return _send_status(client, 400, "expected an HTTP proxy request")
            request = _request(head)
            if request is None:
                return _send_status(client, 400, "expected CONNECT host:port or http://host/")
            method, host, port, forward = request
            addresses = self.decide(host, port)
            if isinstance(addresses, str):
                return _send_status(client, 403, addresses)
            upstream = _connect(addresses)
            if upstream is None:
                return _send_status(client, 502, f"cannot connect to {host}:{port}")
            self._track(upstream)
            if method == "CONNECT":
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                upstream.sendall(forward)
            if rest:
                upstream.sendall(rest)
            _pipe(client, upstream)
        except OSError:
            pass
        finally:
            for connection in (client, upstream):
                if connection is not None:
                    self._untrack(connection)
                    _quietly_close(connection)
            self._slots.release()
        return None

    def decide(self, host: str, port: int) -> list[tuple[str, int]] | str:
        """The addresses to connect to for ``host:port`` (checked: connecting to them, not
        to the name, is what makes rebinding it useless), or why not (a sentence that names
        the setting that allows it)."""
        host = normal_host(host)
        if not is_host(host) or not 0 < port < 65536:
            return self._refuse("localhand refused a proxy request for something not a host:port")
        shown = f"{host}:{port}"
        entry = self._entry(host, port)
        if entry is None:
            return self._refuse(
                f"localhand refused network access to {shown}: it is not among the allowed "
                f"hosts (your package tools' registries and {SETTING}). To allow it, add "
                f'"{host}" (or "{shown}") to {SETTING} in your localhand.toml outside the '
                "workspace."
            )
        try:
            found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as error:
            return self._refuse(f"localhand cannot resolve {host}: {error}")
        addresses = [str(info[4][0]) for info in found]
        local = [address for address in addresses if _on_this_machine(address)]
        if local and not (entry.explicit and entry.port is not None):
            return self._refuse(
                f"localhand refused network access to {shown}: it is an address of this "
                f"machine ({local[0]}), where the model server and other local services "
                f'listen. To allow one local service, name it with its port ("{shown}") in '
                f"{SETTING} in your localhand.toml outside the workspace."
            )
        return [(address, port) for address in dict.fromkeys(addresses)]

    def _entry(self, host: str, port: int) -> Entry | None:
        """The entry that allows ``host:port``, asking the approver about a new one."""
        with self._deciding:
            if self._entries is None:
                tools = self._tool_hosts(self._workspace)
                self._entries = [*self.configured, *tools]
            entry = next((e for e in self._entries if e.allows(host, port)), None)
            if entry is not None or (host, port) in self._refused:
                return entry
            if self._ask(host, port):
                entry = Entry(host, port, explicit=False)  # still never a local address
                self._entries.append(entry)
                return entry
            self._refused.add((host, port))
            return None

    def _ask(self, host: str, port: int) -> bool:
        approver = self.approver
        if approver is None:
            return False

        question = f"allow network access to {host}:{port}"
        reason = f"connects to {host}:{port}, which is not in {SETTING}"
        risk = Risk("dangerous", (reason,), question)
        try:
            return approver.approve(f"connect to {host}:{port}", risk)
        except Exception:  # an approver that fails says no, and the run goes on
            return False

    def _refuse(self, message: str) -> str:
        with self._lock:
            if message not in self.refusals:
                self.refusals.append(message)
        return message

    def _track(self, connection: socket.socket) -> None:
        with self._lock:
            self._open.add(connection)

    def _untrack(self, connection: socket.socket) -> None:
        with self._lock:
            self._open.discard(connection)


def _connect(addresses: list[tuple[str, int]]) -> socket.socket | None:
    """A connection to the first of ``addresses`` that answers in time, or None."""
    for address in addresses:
        try:
            return socket.create_connection(address, timeout=CONNECT_TIMEOUT_S)
        except OSError:
            continue
    return None


def _read_head(client: socket.socket) -> tuple[bytes | None, bytes]:
    """The request line and headers, and what came after them."""
    data = b""
    while b"\r\n\r\n" not in data:
        if len(data) > _HEAD_LIMIT:
            return None, b""
        chunk = client.recv(65536)
        if not chunk:
            return None, b""
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


def _request(head: bytes) -> tuple[str, str, int, bytes] | None:
    """(method, host, port, what to send upstream) of a proxy request, or None."""
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3:
        return None
    method, target, _ = parts
    if method.upper() == "CONNECT":
        host, _, number = target.rpartition(":")
        if not host or not number.isdigit():
            return None
        return "CONNECT", host, int(number), b""
    try:
        url = urlsplit(target)
        port = url.port or 80
    except ValueError:
        return None
    if url.scheme.lower() != "http" or not url.hostname:
        return None
    path = (url.path or "/") + (f"?{url.query}" if url.query else "")
    kept = [line for line in lines[1:] if not _hop_by_hop(line)]
    forward = "\r\n".join([f"{method} {path} HTTP/1.1", *kept, "Connection: close", "", ""])
    return method, url.hostname, port, forward.encode("latin-1")


def _hop_by_hop(line: str) -> bool:
    name = line.partition(":")[0].strip().lower()
    return name in ("connection", "proxy-connection", "proxy-authorization", "keep-alive")


def _pipe(client: socket.socket, upstream: socket.socket) -> None:
    """Relay both ways until both sides are done or nothing moves for ``IDLE_TIMEOUT_S``."""
    other = {client: upstream, upstream: client}
    reading = [client, upstream]
    for connection in reading:
        connection.settimeout(IDLE_TIMEOUT_S)
    while reading:
        ready, _, _ = select.select(reading, [], [], IDLE_TIMEOUT_S)
        if not ready:
            return
        for connection in ready:
            data = connection.recv(65536)
            if data:
                other[connection].sendall(data)
                continue
            reading.remove(connection)
            try:
                other[connection].shutdown(socket.SHUT_WR)
            except OSError:
                return


def _send_status(client: socket.socket, code: int, message: str) -> None:
    """An error response whose reason phrase and body both say ``message``: curl and pip
    show the reason of a refused ``CONNECT``, a browser-like client the body."""
    phrase = message.encode("ascii", "replace").replace(b"\r", b" ").replace(b"\n", b" ")
    body = message.encode("utf-8") + b"\n"
    head = b"HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n" % (code, phrase)
    head += b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body)
    with suppress(OSError):
        client.sendall(head + body)


def _on_this_machine(address: str) -> bool:
    """Whether ``address`` reaches this machine: loopback, link-local, unspecified (which
    means this machine), or an address one of its interfaces carries (can be bound here)."""
    import ipaddress  # loaded only when used

    try:
        ip = ipaddress.ip_address(address.split("%")[0])
    except ValueError:
        return True
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_loopback or ip.is_link_local or ip.is_unspecified or ip.is_multicast:
        return True
    family = socket.AF_INET6 if ip.version == 6 else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.bind((str(ip), 0))
    except OSError:
        return False
    return True


def _quietly_close(connection: socket.socket, *, shutdown: bool = False) -> None:
    if shutdown:
        with suppress(OSError):
            connection.shutdown(socket.SHUT_RDWR)
    with suppress(OSError):
        connection.close()

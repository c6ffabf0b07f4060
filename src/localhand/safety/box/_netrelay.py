"""The supervisor's half of the sandbox's network (``netbox``): relays connections to a port
of the box's own loopback to localhand's proxy, a Unix socket bound into the box. Imported by
``_supervisor.py`` only for a command with network, like it with nothing of localhand's and
nothing more than the interpreter's built-in modules (``_socket``, ``_thread``).
"""

from __future__ import annotations

import _thread

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs every command ~10 ms
if TYPE_CHECKING:
    from typing import Any


def listener(flag: str) -> tuple[Any, str, str]:
    """(listening socket on the box's loopback, proxy socket, target or "") of a
    ``--relay`` flag, bound before the command starts so that its first connection finds
    it. ``_socket``, not ``socket``: a third of the import time."""
    import _socket  # loaded only when used

    port, path, target = [*flag.split("=", 1)[1].split("=", 2), ""][:3]
    listener = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    listener.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", int(port)))
    listener.listen(64)
    return listener, path, target


def start(relay_of: tuple[Any, str, str]) -> None:
    """Relay in a thread of its own what ``listener`` made."""
    _thread.start_new_thread(relay, relay_of)


def relay(listener: Any, path: str, target: str) -> None:
    """Accept connections on ``listener`` and relay each to the Unix socket ``path`` (for
    a ``target``, once the proxy has connected to it), both ways, in threads of their own;
    until the supervisor exits."""
    import _socket  # loaded only when used

    while True:
        try:
            fd, _ = listener._accept()
        except OSError:
            return
        client = _socket.socket(fileno=fd)
        upstream = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            upstream.connect(path)
            if target and not tunnel(upstream, target):
                raise OSError("refused")
        except OSError:
            client.close()
            upstream.close()
            continue
        done: list[int] = []
        _thread.start_new_thread(forward, (client, upstream, done))
        _thread.start_new_thread(forward, (upstream, client, done))


def tunnel(upstream: Any, target: str) -> bool:
    """Ask the proxy for a tunnel to ``target``; whether it opened one."""
    upstream.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    answer = b""
    while b"\r\n\r\n" not in answer and len(answer) < 65536:
        chunk = upstream.recv(4096)  # the head only: nothing follows it before we send
        if not chunk:
            return False
        answer += chunk
    return answer.startswith((b"HTTP/1.1 200", b"HTTP/1.0 200"))


def forward(source: Any, target: Any, done: list[int]) -> None:
    """Copy ``source`` to ``target`` until end of file, pass the end on, close both once
    the other direction is done too."""
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            target.sendall(data)
        target.shutdown(1)  # SHUT_WR: the other side sees the end of what this one sent
    except OSError:
        for end in (source, target):
            try:  # noqa: SIM105 (contextlib costs an import: see _supervisor.py's imports)
                end.shutdown(2)
            except OSError:
                pass
    done.append(1)
    if len(done) == 2:
        source.close()
        target.close()

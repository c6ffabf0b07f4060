"""A place outside any workspace that the command sandbox leaves in sight (read-only), for
canaries, FIFOs and sockets that a sandboxed command must not be able to change or reach.

The sandbox hides /tmp, /var/tmp, /dev/shm, $HOME and localhand's data directory, so a test
tree there would show nothing: a canary would survive because it cannot be seen, not because
it cannot be written. The project's own .pytest_cache is in sight unless the checkout itself
lies in one of those (a clone in /tmp); then another directory is tried.
"""

from __future__ import annotations

import contextlib
import os
import socket
import tempfile
import threading
from pathlib import Path
from typing import Any

_HIDDEN = ("/tmp", "/var/tmp", "/dev/shm", "~")
_ELSEWHERE = ("/srv", "/opt", "/var/lib", "/mnt")


def hidden_by_the_sandbox(path: Path) -> bool:
    real = os.path.realpath(path)
    for hidden in _HIDDEN:
        root = os.path.realpath(os.path.expanduser(hidden))
        if real == root or real.startswith(root.rstrip("/") + "/"):
            return True
    return False


def place_in_sight(rootpath: Path, prefix: str) -> Path | None:
    """A new directory the sandbox shows read-only, or None where there is none to be had."""
    candidates = [rootpath / ".pytest_cache" / "d", *map(Path, _ELSEWHERE)]
    for parent in candidates:
        if hidden_by_the_sandbox(parent):
            continue
        try:
            parent.mkdir(parents=True, exist_ok=True)
            return Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
        except OSError:
            continue
    return None


class Listener:
    """A stream or datagram socket that records every connection and every byte it gets."""

    def __init__(self, family: int, kind: int, address: Any) -> None:
        self.sock = socket.socket(family, kind)
        self.sock.bind(address)
        self.kind = kind
        if kind == socket.SOCK_STREAM:
            self.sock.listen(16)
        self.sock.settimeout(0.1)
        self.received = bytearray()
        self.connections = 0
        self.address = self.sock.getsockname()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                if self.kind == socket.SOCK_DGRAM:
                    self.received += self.sock.recv(65536)
                    self.connections += 1
                    continue
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            self.connections += 1
            conn.settimeout(1)
            with conn, contextlib.suppress(OSError):
                while chunk := conn.recv(65536):
                    self.received += chunk

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        self.sock.close()

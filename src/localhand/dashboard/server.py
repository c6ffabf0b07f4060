"""Serving the dashboard with uvicorn: in the foreground (``localhand serve``) or in a
background thread (``localhand run --serve``, tests)."""

from __future__ import annotations

import errno
import socket
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote

import uvicorn
from fastapi import FastAPI

from localhand.config.settings import Settings
from localhand.dashboard.app import create_app
from localhand.dashboard.security import check_bind, is_loopback
from localhand.errors import ConfigError
from localhand.store import Store

DEFAULT_PORT = 8765


class DashboardServer:
    """uvicorn on a socket bound up front, so the port (0: any free one) is known at once."""

    def __init__(
        self,
        app: FastAPI,
        host: str = "127.0.0.1",
        port: int = DEFAULT_PORT,
        *,
        token: str,
        port_fallback: bool = False,
    ) -> None:
        self.sock = _bind(host, port, port_fallback)
        self.host = host
        self.port: int = self.sock.getsockname()[1]
        self.token = token
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
        self._server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The address to print and open: the page with its token (see ``security``)."""
        return f"{self.base_url}?token={quote(self.token, safe='')}"

    @property
    def base_url(self) -> str:
        """The address without the token, for API clients that send it as a header."""
        shown = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host
        shown = f"[{shown}]" if ":" in shown else shown
        return f"http://{shown}:{self.port}/"

    def serve_forever(self) -> None:
        """Serve until Ctrl-C (uvicorn handles the signal when on the main thread)."""
        self._server.run(sockets=[self.sock])

    def start(self, timeout: float = 10.0) -> DashboardServer:
        """Serve in a daemon thread; return once it accepts connections."""
        self._thread = threading.Thread(target=self.serve_forever, name="localhand-dashboard")
        self._thread.daemon = True
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the dashboard server did not start")
            time.sleep(0.01)
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
        self.sock.close()

    def __enter__(self) -> DashboardServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_dashboard(
    store: Store,
    *,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    token: str | None = None,
    allow_remote: bool = False,
    settings: Settings | None = None,
    port_fallback: bool = False,
    background: bool = True,
    workspaces: Sequence[Path] | None = None,
) -> DashboardServer:
    """Build the app and its server; with ``background`` also start it in a thread.

    ``token`` (default: a new one, see ``server.token`` and ``server.url``) is required by
    every request; page-started tasks must work inside ``workspaces`` (default: see
    ``settings``). Raises ``ConfigError`` for an unsafe host, a bad token or a port in use
    (unless ``port_fallback``, which then takes any free port)."""
    token = check_bind(host, token, allow_remote)
    app = create_app(
        store,
        token=token,
        settings=settings,
        loopback_only=is_loopback(host),
        workspaces=workspaces,
    )
    server = DashboardServer(app, host, port, token=token, port_fallback=port_fallback)
    return server.start() if background else server


def _bind(host: str, port: int, fallback: bool) -> socket.socket:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise ConfigError(f"cannot listen on {host!r}: {exc.strerror}") from None
    family, _, _, _, address = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE and fallback:
            sock.bind((address[0], 0, *address[2:]))
        else:
            sock.close()
            reason = "it is in use" if exc.errno == errno.EADDRINUSE else exc.strerror
            raise ConfigError(f"cannot listen on {host}:{port}: {reason}; pick --port") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock

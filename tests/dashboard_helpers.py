"""Reaching a test dashboard the way a script would: its token as a Bearer header."""

from __future__ import annotations

from typing import Any

import httpx
from websockets.sync.client import ClientConnection, connect

from localhand.dashboard.server import DashboardServer


def auth(server: DashboardServer) -> dict[str, str]:
    return {"authorization": f"Bearer {server.token}"}


def client(server: DashboardServer, **kwargs: Any) -> httpx.Client:
    """An HTTP client for ``server``'s API (paths relative to it: ``client.get("api/runs")``)."""
    return httpx.Client(base_url=server.base_url, headers=auth(server), timeout=20, **kwargs)


def ws_url(server: DashboardServer, path: str) -> str:
    return server.base_url.replace("http://", "ws://").rstrip("/") + path


def ws_connect(server: DashboardServer, path: str, **kwargs: Any) -> ClientConnection:
    """A WebSocket to ``path`` carrying the token."""
    return connect(ws_url(server, path), additional_headers=auth(server), **kwargs)

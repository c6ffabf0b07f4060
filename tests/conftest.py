"""Test-wide safety: no test may reach beyond this machine."""

from __future__ import annotations

import ipaddress
import socket

import pytest

_real_connect = socket.socket.connect


def _loopback_only(self: socket.socket, address, *args, **kwargs):
    host = address[0] if isinstance(address, tuple) else None
    if host is not None:
        try:
            loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            raise RuntimeError(f"test tried to reach {address!r}: tests stay on loopback")
    return _real_connect(self, address, *args, **kwargs)


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    monkeypatch.setattr(socket.socket, "connect", _loopback_only)
    # Runs recorded by tests (CLI subprocesses included) go to a throwaway store and data dir.
    home = tmp_path_factory.mktemp("localhand-home")
    monkeypatch.setenv("LOCALHAND_HOME", str(home))
    monkeypatch.setenv("LOCALHAND_DB", str(home / "runs.db"))
    # Settings from the developer's shell must not leak into tests.
    for var in (
        "OLLAMA_HOST",
        "LOCALHAND_MODEL",
        "LOCALHAND_BACKEND",
        "LOCALHAND_CONFIG",
        "LOCALHAND_TOKEN",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "OLLAMA_API_KEY",
    ):
        monkeypatch.delenv(var, raising=False)

"""Test-wide safety (no test may reach beyond this machine) and what tests share.

Tests that need a heavy optional part (the embedded extra, Ray, a browser) say so through
``optional_deps``: skipped with what to install outside CI, required in CI.
"""

from __future__ import annotations

import ipaddress
import os
import signal
import socket
from collections.abc import Iterator
from pathlib import Path

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
    # The user's own config.toml: none, unless a test writes one there.
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
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
        "LOCALHAND_OTEL",
        "LOCALHAND_OTEL_CONTENT",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
    ):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def sigint_reaches_children() -> Iterator[None]:
    """Child processes started during the test get SIGINT as a program started at a terminal
    does: Python turns it into KeyboardInterrupt.

    An *ignored* SIGINT is inherited, and kept across exec, and Python then leaves it ignored:
    a non-interactive shell starts background jobs that way (``pytest &``, ``sh -c '... &'``,
    job runners), so under such a pytest a test that sends SIGINT to its child waits for
    nothing and fails. A handler, unlike "ignore", is reset to the default by exec; so for
    the test's duration this process handles SIGINT as Python does by default, and the
    children it starts get the default."""
    previous = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.SIG_DFL if previous is None else previous)


@pytest.fixture
def no_bwrap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A machine whose bubblewrap cannot create namespaces, as many users' machines are:
    the fallback path of the sandbox, its network and its report."""
    from localhand.safety.box.sandbox import available

    fake = tmp_path / "fakebin" / "bwrap"
    fake.parent.mkdir()
    fake.write_text(
        "#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n"
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    available.cache_clear()
    yield
    available.cache_clear()

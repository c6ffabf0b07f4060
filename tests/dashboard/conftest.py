"""Fixtures the dashboard's tests share: a run store, and a dashboard over it that runs tasks on
the module's ``ollama`` in workspaces under ``roots`` (``tmp_path`` unless a module says)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from dashboard_helpers import client, dashboard_for
from localhand.dashboard.server import DashboardServer
from localhand.store import Store
from localhand.testing import FakeOllama


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "runs.db")


@pytest.fixture
def roots(tmp_path: Path) -> list[Path]:
    """The workspace roots the ``dashboard`` allows."""
    return [tmp_path]


@pytest.fixture
def dashboard(store: Store, ollama: FakeOllama, roots: list[Path]) -> Iterator[DashboardServer]:
    with dashboard_for(store, ollama, roots) as server:
        yield server


@pytest.fixture
def http(dashboard: DashboardServer) -> Iterator[httpx.Client]:
    with client(dashboard) as api:
        yield api

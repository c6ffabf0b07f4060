"""Reaching a test dashboard the way a script would (its token as a Bearer header), and the way
a user does: Debian's Chromium driven by Playwright (the ``browser`` and ``page`` fixtures; a
browser test module names this module in its ``pytest_plugins``).

PYTEST_DONT_REWRITE: imported before pytest registers it as that plugin, and it asserts nothing.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from websockets.sync.client import ClientConnection, connect

from localhand.config.settings import Settings
from localhand.dashboard import start_dashboard
from localhand.dashboard.server import DashboardServer
from localhand.store import Store
from localhand.testing import FakeOllama

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def auth(server: DashboardServer) -> dict[str, str]:
    return {"authorization": f"Bearer {server.token}"}


def client(server: DashboardServer, **kwargs: Any) -> httpx.Client:
    """An HTTP client for ``server``'s API (paths relative to it: ``client.get("api/runs")``)."""
    return httpx.Client(base_url=server.base_url, headers=auth(server), timeout=20, **kwargs)


def dashboard_for(
    store: Store, ollama: FakeOllama, roots: list[Path], **settings: Any
) -> DashboardServer:
    """A dashboard on a free port over ``store``, running tasks on ``ollama``'s ``qwen3:8b``,
    in workspaces under ``roots``."""
    chosen = Settings(model="qwen3:8b", host=ollama.url, **settings)
    return start_dashboard(store, port=0, settings=chosen, workspaces=roots)


@contextmanager
def served_dashboard(
    store: Store, script: Iterable[Any], roots: list[Path], *, latency: float = 0.0, **settings: Any
) -> Iterator[tuple[DashboardServer, FakeOllama]]:
    """``dashboard_for`` a fake ``qwen3:8b`` that answers with ``script``, and that fake."""
    with (
        FakeOllama(script=script, models={"qwen3:8b": {}}, latency=latency) as ollama,
        dashboard_for(store, ollama, roots, **settings) as server,
    ):
        yield server, ollama


def finished(store: Store, run_id: str) -> list[dict[str, Any]]:
    """The run's events once it has ended."""
    deadline = time.monotonic() + 20
    while store.run(run_id).status == "running":
        if time.monotonic() > deadline:
            raise TimeoutError(f"run {run_id} did not end in 20 s")
        time.sleep(0.05)
    return [event.to_dict() for event in store.events(run_id)]


def ws_url(server: DashboardServer, path: str) -> str:
    return server.base_url.replace("http://", "ws://").rstrip("/") + path


def ws_connect(server: DashboardServer, path: str, **kwargs: Any) -> ClientConnection:
    """A WebSocket to ``path`` carrying the token."""
    return connect(ws_url(server, path), additional_headers=auth(server), **kwargs)


def tool_call(name: str, **arguments: Any) -> dict[str, Any]:
    """A FakeOllama script item: the model calls one tool."""
    return {"content": "", "tool_calls": [{"function": {"name": name, "arguments": arguments}}]}


# -- in a browser ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Headless Chromium, one per test module."""
    from playwright.sync_api import sync_playwright

    import optional_deps

    chromium = optional_deps.chromium()  # skipped without a browser, required in CI
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    context.close()


def start_task(
    page: Page,
    description: str,
    workspace: str | Path,
    *,
    mode: str | None = None,
    verify: str | None = None,
) -> None:
    """Fill the page's "Start a task" form and submit it."""
    page.fill("textarea[name=description]", description)
    page.fill("input[name=workspace]", str(workspace))
    if verify is not None:
        page.fill("input[name=verify]", verify)
    if mode is not None:
        page.select_option("select[name=mode]", mode)
    page.click("button[type=submit]")

"""A hook's run on the dashboard's timeline: a real browser (Debian's Chromium, Playwright) on
a run started from the page, with the dashboard's settings' hooks."""

from __future__ import annotations

from pathlib import Path

import pytest

import optional_deps
from dashboard_helpers import start_task, tool_call
from localhand.config.settings import Settings
from localhand.dashboard import start_dashboard
from localhand.hooks.config import hooks_from_toml
from localhand.store import Store
from localhand.testing import FakeOllama

CHROMIUM = optional_deps.chromium()  # skipped without a browser, required in CI
pytest_plugins = ("dashboard_helpers",)  # the browser and page fixtures

from playwright.sync_api import Page, expect  # noqa: E402


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "runs.db")


def test_hook_rows_on_the_timeline(page: Page, store: Store, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    hooks = hooks_from_toml(
        {
            "pre_tool": [{"command": "echo 'no secrets here' >&2; exit 2", "match": "read_*"}],
            "post_edit": [{"command": "echo 'lint: line 1 is too long'; exit 1"}],
        },
        "config.toml",
    )
    script = [
        tool_call("read_file", path="secret.txt"),
        tool_call("write_file", path="a.py", content="x = 1\n"),
        "Wrote a.py.",
    ]
    with FakeOllama(script=script, models={"qwen3:8b": {}}) as ollama:
        settings = Settings(model="qwen3:8b", host=ollama.url, hooks=hooks)
        with start_dashboard(store, port=0, settings=settings, workspaces=[tmp_path]) as server:
            page.goto(server.url)
            expect(page.locator("#roots")).to_contain_text("Workspaces must be inside")
            start_task(page, "Write a.py", workspace, verify="test -f a.py")

            expect(page.locator("#run-status")).to_have_text("pass", timeout=30_000)
            blocked = page.locator("tr.note.hook.blocked")
            expect(blocked).to_have_count(1)
            expect(blocked).to_contain_text("hook pre_tool")
            expect(blocked).to_contain_text("blocked the call")
            expect(blocked).to_contain_text("no secrets here")
            failed = page.locator("tr.note.hook.failed")
            expect(failed).to_contain_text("hook post_edit")
            expect(failed).to_contain_text("exit 1")
            expect(failed).to_contain_text("lint: line 1 is too long")
            edit = page.locator("tr.tool-row", has_text="write_file")
            expect(edit).to_contain_text("lint: line 1 is too long")  # the model read it too

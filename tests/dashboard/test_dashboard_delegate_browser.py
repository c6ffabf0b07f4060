"""A real browser on the dashboard: a run that hands a question to a helper (``delegate``)
links to the helper's own run, whose page names its parent."""

from __future__ import annotations

from pathlib import Path

import optional_deps
from dashboard_helpers import served_dashboard, start_task, tool_call
from localhand.store import Store

CHROMIUM = optional_deps.chromium()  # skipped without a browser, required in CI
pytest_plugins = ("dashboard_helpers",)  # the browser and page fixtures

from playwright.sync_api import Page, expect  # noqa: E402


def test_the_parents_timeline_links_to_its_helpers_run(
    page: Page, store: Store, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("The server listens on port 8123.\n")
    script = [
        tool_call("delegate", task="Which port does notes.txt name?"),
        tool_call("read_file", path="notes.txt"),
        "Port 8123.",
        "It is 8123.",
    ]
    with served_dashboard(store, script, [tmp_path]) as (server, _):
        page.goto(server.url)
        expect(page.locator("#roots")).to_contain_text("Workspaces must be inside")
        start_task(page, "Find the port the server listens on", workspace)
        expect(page.locator("#result-output")).to_contain_text("It is 8123.")
        expect(page.locator("tr.tool-row")).to_contain_text("Port 8123.")
        parent = page.locator("#run-meta").inner_text().split(" · ")[0].removeprefix("run ")
        link = page.locator("a", has_text="helper run")
        expect(link).to_have_count(1)
        expect(page.locator("tr.note", has_text="helper final_answer")).to_contain_text(
            "after 2 iterations"
        )
        link.click()
        expect(page.locator("#run-meta")).to_contain_text(f"helper of {parent}")
        expect(page.locator("tr.tool-row")).to_contain_text("read_file")

"""The dashboard says why a run ended before its first step, as the terminal does: a plan
whose draft fails, and one whose first step is denied on the page, in a real browser (Debian's
Chromium, driven by Playwright) over the API's record of it."""

from __future__ import annotations

import json
from pathlib import Path

import optional_deps
from dashboard_helpers import client, finished, served_dashboard, start_task
from localhand.store import Store

CHROMIUM = optional_deps.chromium()  # skipped without a browser, required in CI
pytest_plugins = ("dashboard_helpers",)  # the browser and page fixtures

from playwright.sync_api import Page, expect  # noqa: E402

NOT_DRAFTED = "the model did not draft a usable plan"


def test_a_plan_whose_draft_fails_says_why_on_its_page(
    page: Page, tmp_path: Path, store: Store
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with served_dashboard(store, ["no plan here", "still no plan"], [tmp_path]) as (server, _):
        page.goto(server.url)
        expect(page.locator("#roots")).to_contain_text("Workspaces must be inside")
        start_task(page, "Pack the notes", workspace, mode="plan-agentic")
        expect(page.locator("#run-status")).to_have_text("error")
        expect(page.locator("tr.note.finished")).to_contain_text(NOT_DRAFTED)
        expect(page.locator("#result-fields")).to_contain_text(NOT_DRAFTED)
        expect(page.locator("#plan")).to_be_hidden()  # no step list for a plan that never ran
        (run,) = store.runs()
        with client(server) as api:
            shown = api.get(f"api/runs/{run.id}").json()
    events = [e for e in shown["events"] if e["type"] == "task_finished"]
    assert [e["result"]["error"] for e in events] == [shown["run"]["result"]["error"]]
    assert NOT_DRAFTED in shown["run"]["result"]["error"]
    assert (shown["run"]["status"], shown["run"]["termination_reason"]) == ("error", "error")


def test_a_plan_stopped_at_its_refused_first_step_says_why(
    page: Page, tmp_path: Path, store: Store
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    draft = {"goal": "clean", "steps": [{"description": "wipe", "command": "rm -rf ~/notes"}]}
    with served_dashboard(store, [json.dumps(draft)], [tmp_path]) as (server, _):
        page.goto(server.url)
        start_task(page, "Clean up", workspace, mode="plan-planner")
        page.locator("tr.note.approval button.deny").click()
        expect(page.locator("#run-status")).to_have_text("fail")
        (run,) = store.runs()
        events = finished(store, run.id)
        run = store.run(run.id)  # as it ended: the row read above may predate its close
        [stopped] = [e for e in events if e["type"] == "plan_cancelled"]
        expect(page.locator("#plan-banners")).to_contain_text(stopped["reason"])
        expect(page.locator("tr.note.finished")).to_contain_text(
            f"{run.termination_reason}: 0 of 1 step done"
        )

"""A dashboard you can leave open, in a real browser (Debian's Chromium, driven by Playwright):
approvals waiting for the user on the runs list and in the tab's title, Stop on a run (one
started from the page, and one started by ``localhand run`` in another process), a run that
failed at once ending its badge, and a plan run as a step list with its timeline in words."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

import optional_deps
from dashboard_helpers import served_dashboard, start_task, tool_call
from localhand import run_plan
from localhand.config.settings import Settings
from localhand.dashboard import start_dashboard
from localhand.events import EventBus, EventLog
from localhand.models import ScriptedModel
from localhand.store import Store
from localhand.testing import FakeOllama
from plan_helpers import fix

CHROMIUM = optional_deps.chromium()  # skipped without a browser, required in CI
pytest_plugins = ("dashboard_helpers",)  # the browser and page fixtures

from playwright.sync_api import Page, Route, expect  # noqa: E402

CLI = "from localhand.cli import main; raise SystemExit(main())\n"
READS = 40
"""Files a slow scripted model reads one by one: far more than a test waits for."""


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """localhand's data directory, for this process and the CLI's: where a Stop from the page
    leaves its cancel request for a run in another process."""
    path = tmp_path / "home"
    monkeypatch.setenv("LOCALHAND_HOME", str(path))
    return path


def slow_reader(workspace: Path) -> list[Any]:
    """A model that reads ``READS`` files, a second a reply (FakeOllama's latency), then ends."""
    workspace.mkdir(exist_ok=True)
    for n in range(READS):
        (workspace / f"f{n}.txt").write_text(f"file {n}\n")
    return [tool_call("read_file", path=f"f{n}.txt") for n in range(READS)] + ["Read them all."]


def test_stop_on_the_runs_list_cancels_a_cli_run_in_another_process(
    page: Page, tmp_path: Path, home: Path
) -> None:
    db = tmp_path / "runs.db"
    workspace = tmp_path / "ws"
    script = slow_reader(workspace)
    with FakeOllama(script=script, models={"qwen3:8b": {}}, latency=0.5) as ollama:
        env = {
            **os.environ,
            "OLLAMA_HOST": ollama.url,
            "LOCALHAND_HOME": str(home),
            "LOCALHAND_DB": str(db),
            "NO_COLOR": "1",
        }
        task = "Read every file, one by one"
        command = [sys.executable, "-c", CLI, "run", task, "-w", str(workspace)]
        command += ["--model", "qwen3:8b", "--agentic", "--max-iterations", "100", "--json"]
        child = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
            env=env,
            start_new_session=True,
        )
        try:
            with start_dashboard(Store(db), port=0) as server:
                page.goto(server.url)
                row = page.locator("#runs-body tr").first
                expect(row).to_contain_text(task, timeout=30_000)
                expect(row.locator(".pill")).to_have_text("running")
                expect(row.locator("td.num").first).not_to_have_text("0")  # it is under way
                row.locator("button.stop").click()
                expect(row.locator(".stop-state")).to_contain_text(
                    "stopped: the run ended cancelled", timeout=20_000
                )
                expect(row.locator(".pill")).to_have_text("fail")
                expect(row.locator("button.stop")).to_have_count(0)
                out, err = child.communicate(timeout=30)

                # the run view (opened by the id cell): the partial Result, what the Stop did
                row.locator("td").first.click()
                expect(page.locator("#result")).to_be_visible()
                expect(page.locator("#stat-reason")).to_have_text("cancelled")
                expect(page.locator("#run-stop-state")).to_contain_text("ended cancelled")
        finally:
            if child.poll() is None:
                child.kill()
                child.communicate()
    assert child.returncode == 130, err  # a cancelled run exits as Ctrl-C does
    result = json.loads(out.strip().splitlines()[-1])
    assert result["termination_reason"] == "cancelled", err
    assert "another process" in result["output"]
    assert 0 < result["iterations_used"] < READS, "stopped part-way, not run to its end"
    (stored,) = Store(db).runs()
    assert (stored.status, stored.termination_reason) == ("fail", "cancelled")
    assert stored.result is not None
    assert stored.result["iterations_used"] == result["iterations_used"], "the partial Result"
    assert not list((home / "cancel").glob("*")), "the cancel request went with its run"


def test_stop_in_the_live_view_cancels_a_run_started_from_the_page(
    page: Page, tmp_path: Path, store: Store, home: Path
) -> None:
    workspace = tmp_path / "ws"
    script = slow_reader(workspace)
    with served_dashboard(store, script, [tmp_path], latency=0.5) as (server, _):
        page.goto(server.url)
        expect(page.locator("#roots")).to_contain_text("Workspaces must be inside")
        start_task(page, "Read every file, one by one", workspace, mode="agentic")
        expect(page.locator("tr.tool-row")).not_to_have_count(0)
        stop = page.locator("#run-stop")
        expect(stop).to_be_visible()
        stop.click()
        expect(page.locator("#run-stop-state")).to_contain_text(
            "stopped: the run ended cancelled", timeout=20_000
        )
        expect(stop).to_have_text("Stopped")
        expect(stop).to_be_disabled()
        expect(page.locator("#stat-reason")).to_have_text("cancelled")
        expect(page.locator("#result-fields")).to_contain_text("cancelled")
        done = page.locator("tr.tool-row").count()
    assert 0 < done < READS
    (run,) = store.runs()
    assert (run.status, run.termination_reason) == ("fail", "cancelled")


def test_an_approval_waiting_shows_on_the_runs_list_and_in_the_title(
    page: Page, tmp_path: Path, store: Store
) -> None:
    workspace = tmp_path / "ws"
    (workspace / "victim").mkdir(parents=True)
    script = [tool_call("run_command", command="rm -rf *"), "Removed it."]
    with served_dashboard(store, script, [tmp_path]) as (server, _):
        page.goto(server.url)
        expect(page).to_have_title("localhand")
        start_task(page, "Remove the victim directory", workspace, mode="agentic")
        expect(page.locator("tr.note.approval button.approve")).to_be_visible()
        expect(page).to_have_title("(1) localhand")  # on the run view too, unreloaded

        page.click("text=All runs")
        row = page.locator("#runs-body tr").first
        expect(row.locator(".pill")).to_have_text("waiting for you")
        expect(row).to_contain_text("1 approval")
        expect(row).not_to_contain_text("running")
        expect(page).to_have_title("(1) localhand")

        row.locator("td").first.click()
        page.locator("tr.note.approval button.approve").click()
        expect(page.locator("#run-status")).to_have_text("unverified")
        expect(page).to_have_title("localhand")
        page.click("text=All runs")
        expect(page.locator("#runs-body tr").first.locator(".pill")).to_have_text("unverified")
    assert not (workspace / "victim").exists()


def test_a_run_that_fails_before_its_first_request_ends_its_badge(
    page: Page, tmp_path: Path, store: Store
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with served_dashboard(store, ["unused"], [tmp_path]) as (server, ollama):
        page.goto(server.url)
        expect(page.locator("#roots")).to_contain_text("Workspaces must be inside")
        page.fill("input[name=model]", "no-such-model:1b")
        start_task(page, "Explain the workspace", workspace, mode="agentic")
        expect(page.locator("#run-status")).to_have_text("error")
        expect(page.locator("#result-fields")).to_contain_text("no-such-model:1b")
        expect(page.locator("#run-stop")).to_be_hidden()
        page.click("text=All runs")
        row = page.locator("#runs-body tr").first
        expect(row.locator(".pill")).to_have_text("error")
        expect(row.locator("button.stop")).to_have_count(0)
        assert ollama.chat_requests == []


def test_an_answer_about_the_run_that_arrives_after_its_end_does_not_revive_it(
    page: Page, tmp_path: Path, store: Store
) -> None:
    """The run page asks for the run and opens its stream at once. A run that fails at once can
    end on the stream before that answer arrives, and the answer, taken while it ran, says
    ``running``: it is stale, and the badge keeps how the run ended (CI once saw it revert)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()

    def late_and_running(route: Route) -> None:
        answer = route.fetch()
        body = answer.json()
        body["run"]["status"] = "running"
        time.sleep(1.5)  # the page's stream delivers the run's end meanwhile
        route.fulfill(response=answer, json=body)

    run_answer = re.compile(r"/api/runs/[^/?]+\?events=false$")
    page.route(run_answer, late_and_running)
    with served_dashboard(store, ["unused"], [tmp_path]) as (server, _):
        page.goto(server.url)
        page.fill("input[name=model]", "no-such-model:1b")
        with page.expect_response(run_answer) as stale:
            start_task(page, "Explain the workspace", workspace, mode="agentic")
            expect(page.locator("#run-status")).to_have_text("error")
        stale.value.finished()  # the stale answer is in the page, whole
        page.wait_for_timeout(300)  # and the page has had the time to read it
        expect(page.locator("#run-status")).to_have_text("error")
        expect(page.locator("#run-stop")).to_be_hidden()


def plan_events() -> list[dict[str, Any]]:
    """The events of a real agentic plan run: step 1 fails, the model inserts a repair step,
    then every step passes."""
    plan = {
        "goal": "make out/ready",
        "steps": [
            {"id": "ready", "description": "mark ready", "command": "touch out/ready"},
            {"id": "list", "description": "list what is there", "command": "ls out"},
        ],
    }
    repair = fix(
        "insert_steps", new_steps=[{"description": "make out/", "command": "mkdir -p out"}]
    )
    bus, log = EventBus(), EventLog()
    bus.subscribe(log)
    with tempfile.TemporaryDirectory() as workspace:
        model = ScriptedModel([repair, "summary"])
        result = run_plan(
            plan, Path(workspace), Settings(sandbox="off"), bus=bus, model=model, mode="agentic"
        )
    assert (result.status, result.steps_added) == ("pass", 1)
    return [event.to_dict() for event in log.events]


def test_a_plan_run_is_a_step_list_with_its_timeline_in_words(
    page: Page, tmp_path: Path, store: Store
) -> None:
    events = plan_events()
    revised = next(i for i, e in enumerate(events) if e["type"] == "plan_revised")
    run_id = store.begin_run(events[0]["task_id"])
    for event in events[: revised + 1]:  # the page opened while the repair step waits to run
        store.append_event(run_id, event)
    with start_dashboard(store, port=0) as server:
        page.goto(f"{server.url}#/runs/{run_id}")
        steps = page.locator("#plan-steps li")
        expect(steps).to_have_count(3)
        expect(page.locator("#plan-summary")).to_contain_text("agentic mode")
        expect(page.locator("#plan-summary")).to_contain_text("1 repair step inserted by the model")
        repair, ready, listing = steps.nth(0), steps.nth(1), steps.nth(2)
        expect(repair).to_have_class("step pending added")
        expect(repair).to_contain_text("repair step, inserted by the model")
        expect(repair).to_contain_text("$ mkdir -p out")
        expect(ready.locator(".pill")).to_have_text("failed")
        expect(ready).to_contain_text("1 attempt")
        expect(ready).to_contain_text("exit code 1")
        expect(listing.locator(".pill")).to_have_text("pending")  # a step still to come is listed
        expect(listing).to_contain_text("not run yet")

        timeline = page.locator("#timeline-body")
        expect(timeline).to_contain_text("the plan starts in agentic mode with 2 steps")
        expect(timeline).to_contain_text("failed (exit 1: touch: cannot touch")
        expect(timeline).to_contain_text(
            "the model inserted a repair step: make out/ ($ mkdir -p out)"
        )
        expect(timeline).to_contain_text("the model is diagnosing step 1 (correction 1)")

        for event in events[revised + 1 :]:  # the rest arrives live
            store.append_event(run_id, event)
        store.finish_run(run_id, events[-1]["result"])
        expect(page.locator("#run-status")).to_have_text("pass")
        expect(steps.locator(".pill")).to_have_text(["done", "done", "done"])
        expect(ready).to_contain_text("2 attempts")
        expect(steps.nth(0)).to_have_class("step done added")
        expect(timeline).to_contain_text("completed: 3 of 3 steps done, 1 repair step inserted")
        assert "?" not in page.locator("tr.note.finished").inner_text()
        text = timeline.inner_text()
        for raw in ("step_id=", "plan=", "output_tail", "exit_code"):
            assert raw not in text, f"a raw event field in the timeline: {raw}"
        expect(page.locator("tr.note.other")).to_have_count(0)


def test_a_teacher_plan_from_the_page_is_approved_step_by_step_and_stopped(
    page: Page, tmp_path: Path, store: Store
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    steps = [("write hello", "echo hi > hello.txt"), ("show it", "cat hello.txt")]
    steps.append(("tidy up", "rm hello.txt"))
    draft = {"goal": "greet", "steps": [{"description": d, "command": c} for d, c in steps]}
    with served_dashboard(store, [json.dumps(draft), "summary"], [tmp_path]) as (server, _):
        page.goto(server.url)
        expect(page.locator("#roots")).to_contain_text("Workspaces must be inside")
        start_task(page, "Greet", workspace, mode="plan-teacher")

        expect(page.locator("#plan-summary")).to_contain_text("teacher mode · 3 steps")
        first = page.locator("tr.note.approval").nth(0)
        expect(first).to_contain_text("echo hi > hello.txt")
        expect(page.locator("#plan-steps li").nth(0).locator(".pill")).to_have_text(
            "awaiting approval"
        )
        expect(page).to_have_title("(1) localhand")
        first.locator("button.approve").click()

        second = page.locator("tr.note.approval").nth(1)
        expect(second).to_contain_text("cat hello.txt")
        expect(second.locator("button.approve")).to_be_visible()
        page.locator("#run-stop").click()  # instead of answering
        expect(page.locator("#run-stop-state")).to_contain_text(
            "stopped: the run ended cancelled", timeout=20_000
        )
        expect(page).to_have_title("localhand")
        pills = page.locator("#plan-steps li .pill")
        expect(pills).to_have_text(["done", "failed", "pending"])
        expect(page.locator("tr.note.decision.denied")).to_contain_text("by stop")
    assert (workspace / "hello.txt").read_text() == "hi\n", "only the approved step ran"
    (run,) = store.runs()
    assert run.termination_reason == "cancelled", run

"""A real browser (Debian's Chromium, driven by Playwright) on the dashboard: start a run against
the fake Ollama server from the page and watch its tool calls appear live. The page is opened
the way a user does, with the tokenised URL ``localhand serve`` prints.

The run view's screenshot is written by this test; ``LOCALHAND_UPDATE_SCREENSHOT=1`` also
copies it to ``docs/dashboard.png`` for README.
"""

from __future__ import annotations

import os
import re
import shutil
import threading
from pathlib import Path

import pytest

import optional_deps
from dashboard_helpers import served_dashboard, start_task, tool_call
from localhand.dashboard import start_dashboard
from localhand.store import Store
from workspaces import workspace_with

CHROMIUM = optional_deps.chromium()  # skipped without a browser, required in CI
pytest_plugins = ("dashboard_helpers",)  # the browser and page fixtures
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "calc"
SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "dashboard.png"

from playwright.sync_api import Browser, Page, expect  # noqa: E402


def test_a_run_started_from_the_page_shows_its_tool_calls_live(
    page: Page, store: Store, tmp_path: Path
) -> None:
    workspace = Path(shutil.copytree(EXAMPLE, tmp_path / "calc"))
    gate = threading.Event()
    script = [
        {
            "content": "",
            "thinking": "Read the code before changing it.",
            "tool_calls": [{"function": {"name": "read_file", "arguments": {"path": "calc.py"}}}],
        },
        tool_call("edit_file", path="calc.py", old_text="return a - b", new_text="return a + b"),
        # The run waits here until the test has seen the first rows in the page.
        lambda body: (
            tool_call("run_command", command="python3 check_calc.py")
            if gate.wait(20)
            else "gate never opened"
        ),
        tool_call("read_file", path="notes.md"),
        "Fixed add(): it subtracted instead of adding. check_calc.py passes.",
    ]
    with served_dashboard(store, script, [tmp_path]) as (server, _):
        page.goto(server.url)
        # The page fills the form from /api/config when that answers, over what is typed
        # by then: type once it has (the roots line is written in the same step).
        expect(page.locator("#roots")).to_contain_text("Workspaces must be inside")
        task = "Fix the bug in calc.py so check_calc.py passes"
        start_task(page, task, workspace, verify="python3 check_calc.py")

        rows = page.locator("tr.tool-row")
        expect(rows).to_have_count(2)
        expect(page.locator("#run-status")).to_have_text("running")  # live, not after the fact
        expect(rows.nth(0)).to_contain_text("read_file")
        expect(rows.nth(0)).to_contain_text("def add(a, b)")
        expect(rows.nth(1)).to_contain_text("edit_file")
        expect(page.locator("#waiting")).to_be_visible()
        gate.set()

        expect(page.locator("#result")).to_be_visible()
        expect(rows).to_have_count(4)
        expect(page.locator("#run-status")).to_have_text("pass")
        expect(rows.nth(2)).to_contain_text("calc.py is correct")
        expect(page.locator("tr.tool-row.failed")).to_have_count(1)  # notes.md is missing
        expect(page.locator("tr.verification.passed")).to_contain_text("python3 check_calc.py")
        # a plain script: no runner's report, and the page says what the verdict rests on
        expect(page.locator("tr.verification.passed")).to_contain_text("(exit code only)")
        expect(page.locator("#result-fields")).to_contain_text("check_calc.py (exit code only)")
        expect(page.locator("#result-output")).to_contain_text("Fixed add()")
        expect(page.locator("#stat-tools")).to_have_text("4")
        # the server's own figures (the fake, as Ollama, counts its cached prefix)
        expect(page.locator("#result-fields")).to_contain_text(
            re.compile(
                r"prefilled [\d,]+ tok in [\d.]+ s · cache hit \d+% \(\d of 5 replies said\)"
            )
        )
        assert "return a + b" in (workspace / "calc.py").read_text()

        shot = tmp_path / "dashboard.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 10_000
        if os.environ.get("LOCALHAND_UPDATE_SCREENSHOT"):
            SCREENSHOT.parent.mkdir(exist_ok=True)
            shutil.copyfile(shot, SCREENSHOT)

        page.click("text=All runs")
        expect(page.locator("#runs-body tr")).to_have_count(1)
        expect(page.locator("#runs-body")).to_contain_text("Fix the bug in calc.py")


def test_a_simple_task_streams_its_answer_into_the_run_view(
    page: Page, store: Store, tmp_path: Path
) -> None:
    workspace = Path(shutil.copytree(EXAMPLE, tmp_path / "calc"))
    answer = "calc.py adds, subtracts and checks itself."
    slow = {"content": answer, "chunk_delay": 0.5}  # two words a second: 3 s in all
    with served_dashboard(store, [slow], [tmp_path]) as (server, _):
        page.goto(server.url)
        start_task(page, "Explain what calc.py does", workspace, mode="simple")

        # The first words show while the run is still going.
        expect(page.locator("#result-output")).to_contain_text("calc.py")
        expect(page.locator("#run-status")).to_have_text("running")
        assert "itself." not in page.locator("#result-output").inner_text()
        expect(page.locator("#run-status")).to_have_text("pass", timeout=30_000)
        expect(page.locator("#result-output")).to_have_text(answer)
        expect(page.locator("tr.note.other")).to_have_count(0)  # deltas are not rows


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """An empty ``victim/`` in the workspace ``ws``: what the model's ``rm -rf *`` deletes."""
    return workspace_with(tmp_path / "ws" / "victim", {})


def test_a_command_waiting_for_approval_is_approved_from_the_timeline(
    page: Page, store: Store, tmp_path: Path, victim: Path
) -> None:
    workspace = victim.parent
    # Dangerous (it deletes the whole workspace), and inside what the command sandbox allows.
    command = "rm -rf *  # <b>model output</b>"
    script = [tool_call("run_command", command=command), "Removed everything."]
    with served_dashboard(store, script, [tmp_path]) as (server, _):
        page.goto(server.url)
        start_task(page, "Remove the victim directory next door", workspace, mode="agentic")

        request = page.locator("tr.note.approval")
        expect(request).to_contain_text(command)  # as text, not as markup
        expect(request.locator("b")).to_have_count(0)
        expect(request).to_contain_text("dangerous")
        expect(request.locator("button.approve")).to_be_visible()
        expect(page.locator("#run-status")).to_have_text("running")
        assert victim.exists()
        request.locator("button.approve").click()

        # no check ran: the model's word alone is not a pass
        expect(page.locator("#run-status")).to_have_text("unverified")
        expect(request).to_have_class("note approval approved")
        expect(request.locator("button")).to_have_count(0)
        expect(page.locator("tr.note.decision.approved")).to_contain_text("by page")
        expect(page.locator("tr.tool-row.ok")).to_have_count(1)
        assert not victim.exists()


def test_a_command_denied_with_a_reason_tells_the_model_why(
    page: Page, store: Store, tmp_path: Path, victim: Path
) -> None:
    workspace = victim.parent
    script = [tool_call("run_command", command="rm -rf *"), "Kept everything."]
    with served_dashboard(store, script, [tmp_path]) as (server, ollama):
        page.goto(server.url)
        start_task(page, "Remove the victim directory next door", workspace, mode="agentic")

        request = page.locator("tr.note.approval")
        reason = request.locator("input.deny-reason")
        expect(reason).to_be_visible()
        reason.fill("keep victim/, archive it instead")
        request.locator("button.deny").click()

        expect(page.locator("#run-status")).to_have_text("unverified")
        expect(request).to_have_class("note approval denied")
        expect(request).to_contain_text('"keep victim/, archive it instead"')
        decision = page.locator("tr.note.decision.denied")
        expect(decision).to_contain_text('by page · "keep victim/, archive it instead"')
        told = ollama.chat_requests[-1].body["messages"][-1]
    assert told["role"] == "tool" and told["content"].startswith("Refused:")
    assert 'and said: "keep victim/, archive it instead"' in told["content"]
    assert victim.exists()


def test_the_printed_url_lets_the_browser_in_and_leaves_no_token_behind(
    browser: Browser, page: Page, store: Store
) -> None:
    with start_dashboard(store, port=0) as server:
        stranger = browser.new_context()
        try:
            refused = stranger.new_page().goto(server.base_url)
            assert refused is not None and refused.status == 401
            assert "open the URL printed by `localhand serve`" in refused.text()
        finally:
            stranger.close()

        page.goto(server.url + f"#/runs/{store.begin_run('t')}")
        assert page.url.startswith(server.base_url + "#/runs/"), "no token in the address bar"
        assert "token" not in page.url
        (cookie,) = page.context.cookies()
        assert cookie["name"] == f"localhand-token-{server.port}"
        assert (cookie["httpOnly"], cookie["sameSite"]) == (True, "Strict")
        assert page.evaluate("document.cookie") == "", "the page's scripts cannot read it"
        expect(page.locator("#conn")).to_have_text("live")  # the WebSocket got in with it
        page.click("text=All runs")
        expect(page.locator("#runs-body tr")).to_have_count(1)
        page.reload()
        expect(page.locator("#runs-body tr")).to_have_count(1)  # still in after a reload


def test_a_dangerous_verify_command_typed_into_the_form_waits_for_the_page(
    page: Page, store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "canary.txt").write_text("alive\n")
    monkeypatch.setenv("HOME", str(home))  # so `rm -rf ~` could only ever reach the canary
    workspace = Path(shutil.copytree(EXAMPLE, tmp_path / "calc"))
    with served_dashboard(store, ["Nothing to do."], [tmp_path]) as (server, ollama):
        page.goto(server.url)
        expect(page.locator("#roots")).to_contain_text(str(tmp_path))
        start_task(page, "Explain calc.py", "/")
        expect(page.locator("#start-error")).to_contain_text("outside the dashboard's")

        page.fill("input[name=workspace]", str(workspace))
        page.fill("input[name=verify]", "rm -rf ~")
        page.click("button[type=submit]")
        request = page.locator("tr.note.approval")
        expect(request).to_contain_text("rm -rf ~")
        expect(request).to_contain_text("dangerous")
        assert ollama.chat_requests == [], "the task waits for the answer"
        request.locator("button.deny").click()

        expect(page.locator("#run-status")).to_have_text("error")
        expect(page.locator("#result-fields")).to_contain_text("was not approved")
        expect(page.locator("tr.note.decision.denied")).to_contain_text("by page")
        assert (home / "canary.txt").read_text() == "alive\n"
        assert ollama.chat_requests == []


def test_a_call_of_an_mcp_servers_tool_is_approved_from_the_timeline(
    page: Page, store: Store, tmp_path: Path
) -> None:
    from localhand.mcp.config import McpServer

    workspace = tmp_path / "ws"
    workspace.mkdir()
    time_server = McpServer(
        "time", command=optional_deps.console_script("mcp-server-time"), source="test"
    )
    script = [tool_call("get_current_time", timezone="Asia/Tokyo"), "It is evening in Tokyo."]
    with served_dashboard(store, script, [tmp_path], mcp_servers=(time_server,)) as (server, _):
        page.goto(server.url)
        start_task(page, "Find out the time in Tokyo", workspace, mode="agentic")

        request = page.locator("tr.note.approval")  # an untrusted server's call asks first
        expect(page.locator("body")).to_contain_text("Waiting for approval of an MCP tool")
        expect(request).to_contain_text("get_current_time")
        expect(request).to_contain_text("MCP server 'time'")
        request.locator("button.approve").click()

        expect(page.locator("#run-status")).to_have_text("unverified", timeout=30_000)
        expect(page.locator("tr.note.decision.approved")).to_contain_text("by page")
        expect(page.locator("tr.tool-row.ok")).to_have_count(1)

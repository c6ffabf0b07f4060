"""The run view's Changes card in a real browser (Debian's Chromium, driven by Playwright): each
changed file with its +/- lines and its diff, coloured by the page's own highlighter, the undo
command whole, and a file's escape sequences and markup shown as text."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

import optional_deps
from dashboard_helpers import tool_call
from localhand.config.settings import Settings
from localhand.dashboard import start_dashboard
from localhand.events import EventBus
from localhand.run.task import Task
from localhand.session.api import run_task
from localhand.session.recording import RunRecording
from localhand.store import Store
from localhand.testing import FakeOllama

CHROMIUM = optional_deps.chromium()  # skipped without a browser, required in CI
pytest_plugins = ("dashboard_helpers",)  # the browser and page fixtures
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "calc"

from playwright.sync_api import Page, expect  # noqa: E402

BACKGROUND = "n => getComputedStyle(n).backgroundColor"
HOSTILE = "title\x1b]0;pwned\x07\n<img src=x onerror=\"document.title='owned'\">\n"


SCRIPT = [
    tool_call("edit_file", path="calc.py", old_text="return a - b", new_text="return a + b"),
    tool_call("write_file", path="evil.txt", content=HOSTILE),
    "Fixed add().",
]


def recorded_run(workspace: Path, db: Path) -> str:
    """A run of SCRIPT against FakeOllama in ``workspace``, recorded in ``db``: its id."""
    with FakeOllama(script=SCRIPT, models={"qwen3:8b": {}}) as ollama:
        settings = Settings(model="qwen3:8b", host=ollama.url)
        task = Task("Fix the bug in calc.py", workspace=workspace, agentic=True)
        bus = EventBus()
        with RunRecording(task, bus, settings=settings, db=db) as recording:
            run_task(task, settings, bus=bus, store=recording.store)
    assert recording.run_id is not None
    return recording.run_id


@pytest.mark.parametrize("kind", ["git", "plain"])
def test_the_run_view_shows_each_file_and_its_coloured_diff(
    page: Page, tmp_path: Path, kind: str
) -> None:
    workspace = Path(shutil.copytree(EXAMPLE, tmp_path / "calc"))
    if kind == "git":
        for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "start"]):
            git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args]
            subprocess.run(git, cwd=workspace, check=True)
    db = tmp_path / "runs.db"
    run_id = recorded_run(workspace, db)
    with start_dashboard(Store(db), port=0) as server:
        page.goto(f"{server.url}#/runs/{run_id}")
        card = page.locator("#diff")
        expect(card).to_be_visible()
        expect(page.locator("#diff-totals")).to_have_text("2 files, +3 -1")
        files = page.locator("details.diff-file")
        expect(files).to_have_count(2)
        calc = page.locator('details.diff-file[data-path="calc.py"]')
        expect(calc.locator("summary")).to_contain_text("+1 -1")
        added = calc.locator(".diff-line.add")
        expect(added).to_have_text("+    return a + b\n")
        expect(calc.locator(".diff-line.del")).to_have_text("-    return a - b\n")
        expect(calc.locator(".diff-line.hunk")).to_have_count(1)
        colours = [
            calc.locator(f".diff-line.{k}").first.evaluate(
                "n => getComputedStyle(n).backgroundColor"
            )
            for k in ("add", "del", "hunk")
        ]
        assert len(set(colours)) == 3 and "rgba(0, 0, 0, 0)" not in colours, colours
        evil = page.locator('details.diff-file[data-path="evil.txt"] .diff-line.add')
        expect(evil.nth(0)).to_have_text("+title\\x1b]0;pwned\\x07\n")
        expect(evil.nth(1)).to_contain_text("<img src=x")
        assert page.locator("#diff img").count() == 0 and page.title() != "owned"
        undo = page.locator("#diff-undo-command")
        if kind == "git":
            whole = re.compile(r"^git restore --source=[0-9a-f]{40} --worktree -- \.$")
            expect(undo).to_have_text(whole)
        else:
            expect(page.locator("#diff-note")).to_contain_text("copy the run store kept")
            expect(page.locator("#diff-undo")).to_be_hidden()  # no checkpoint, no git

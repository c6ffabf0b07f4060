"""The eval's HTML report in a real browser (Debian's Chromium, driven by Playwright), opened
from disk as a user opens a shared file: it fetches nothing, its charts are drawn, and what
they draw is what the report's JSON says. The report comes from a real ``localhand eval`` of
the scripted good and bad models against the fake Ollama server."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

import optional_deps
from dashboard_helpers import CHROMIUM_ARGS
from localhand.testing import FakeOllama
from test_eval_command import BAD, GOOD, MODELS, Script, eval_both, make_suite, run_cli

CHROMIUM = optional_deps.chromium()  # skipped without a browser, required in CI

from playwright.sync_api import Page, sync_playwright  # noqa: E402


@pytest.fixture(scope="module")
def report_page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Page, dict, list]]:
    root = tmp_path_factory.mktemp("eval-html")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LOCALHAND_HOME", str(root / "home"))
        with FakeOllama([Script()] * 500, models=MODELS) as server:
            suite = make_suite(root / "suite")
            code, _, err = run_cli(*eval_both(suite, server, root / "out", root / "runs.db"))
    assert code == 0, err
    report = json.loads((root / "out" / "report.json").read_text())
    fetched: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        page.on("request", lambda request: fetched.append(request.url))
        page.goto((root / "out" / "report.html").as_uri())
        page.screenshot(path=str(root / "report.png"), full_page=True)
        yield page, report, fetched
        browser.close()


def box(page: Page, selector: str) -> dict[str, float]:
    found = page.locator(selector)
    assert found.count() == 1, selector
    value = found.bounding_box()
    assert value is not None, f"{selector} is not drawn"
    return value


def test_the_page_is_self_contained_and_carries_the_report(
    report_page: tuple[Page, dict, list],
) -> None:
    page, report, fetched = report_page
    assert len(fetched) == 1 and fetched[0].startswith("file://"), fetched
    embedded = page.evaluate("JSON.parse(document.getElementById('eval-report').textContent)")
    assert embedded == report
    assert page.title().startswith("localhand eval · mini")


def test_every_chart_is_drawn(report_page: tuple[Page, dict, list]) -> None:
    page, _, _ = report_page
    names = page.eval_on_selector_all("svg.chart", "els => els.map(e => e.dataset.chart)")
    assert names == ["outcomes", "tiers", "tokens", "wall", "ttft", "iterations", "guardrails"]
    for name in names:
        drawn = box(page, f'svg[data-chart="{name}"]')
        assert drawn["width"] > 300 and drawn["height"] > 30, name


def test_the_outcome_bars_and_intervals_are_the_json_s_rates(
    report_page: tuple[Page, dict, list],
) -> None:
    page, report, _ = report_page
    for model in report["models"]:
        name = model["model"]
        bars = f'svg[data-chart="outcomes"] rect[data-model="{name}"]'
        widths = {}
        for status, rate in model["rates"].items():
            selector = f'{bars}[data-status="{status}"]'
            assert float(page.get_attribute(selector, "data-value")) == rate["rate"]
            widths[status] = box(page, selector)["width"]
        full = sum(widths.values())
        assert full > 200
        for status, rate in model["rates"].items():
            assert widths[status] / full == pytest.approx(rate["rate"], abs=0.01), (name, status)
        whisker = box(page, f'svg[data-chart="outcomes"] g.ci[data-model="{name}"]')
        passed = model["rates"]["pass"]
        assert whisker["width"] == pytest.approx((passed["high"] - passed["low"]) * full, abs=6)
        start = box(page, f'{bars}[data-status="pass"]')
        assert whisker["x"] == pytest.approx(start["x"] + passed["low"] * full, abs=4)


def test_the_tier_bars_are_the_pass_rate_per_tier(report_page: tuple[Page, dict, list]) -> None:
    page, report, _ = report_page
    heights: dict[tuple[str, str], float] = {}
    for model in report["models"]:
        for tier, figures in model["tiers"].items():
            selector = (
                f'svg[data-chart="tiers"] rect[data-model="{model["model"]}"][data-tier="{tier}"]'
            )
            assert float(page.get_attribute(selector, "data-value")) == figures["pass"]["rate"]
            heights[model["model"], tier] = page.eval_on_selector(
                selector, "e => e.getBoundingClientRect().height"
            )
    assert heights[GOOD, "1"] == heights[GOOD, "2"] > 100  # both 100%
    assert heights[BAD, "1"] == heights[BAD, "2"] == 0


def test_the_summary_table_and_the_task_grid_show_the_json_s_figures(
    report_page: tuple[Page, dict, list],
) -> None:
    page, report, _ = report_page

    def cell(model: str, field: str) -> str:
        return page.inner_text(f'table.summary td[data-model="{model}"][data-field="{field}"]')

    good = next(m for m in report["models"] if m["model"] == GOOD)
    bad = next(m for m in report["models"] if m["model"] == BAD)
    assert cell(GOOD, "pass").split("\n") == ["100%", "61%–100%"]
    assert cell(BAD, "partial_pass") == "17%"
    assert cell(GOOD, "median_iterations") == f"{good['median_iterations']:g}"
    assert cell(GOOD, "tokens") == f"{good['tokens']['median_per_run']:,.0f}"
    assert cell(BAD, "guardrails") == str(sum(bad["guardrails"].values())) == "3"
    assert cell(GOOD, "prefix_reuse") == f"{good['prefix_reuse']['share'] * 100:.0f}%"
    assert cell(GOOD, "nudges") == "1 (8%)"
    for row in report["tasks"]:
        for model, counts in row["by_model"].items():
            selector = f'table.grid td[data-task="{row["task"]}"][data-model="{model}"]'
            assert page.inner_text(selector) == f"{counts['pass']}/{counts['runs']}"
    stops = page.eval_on_selector_all(
        'svg[data-chart="guardrails"] rect[data-model]',
        "els => els.map(e => [e.dataset.model, e.dataset.kind, Number(e.dataset.value)])",
    )
    assert sorted(map(tuple, stops)) == [(BAD, "nudges", 1), (BAD, "repetition", 2)]

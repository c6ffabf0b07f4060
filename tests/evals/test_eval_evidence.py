"""``localhand eval`` says what each model's passes rested on: a test runner's report, or only
an exit code (the Result's ``verification`` entries, docs/results.md)."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from localhand.evals.measure import run_figures
from localhand.evals.report import model_summary
from localhand.evals.table import report_tables


def run(status: str, *evidence: str | None) -> dict[str, Any]:
    checks = [{"name": f"check {n}", "passed": True, "evidence": e} for n, e in enumerate(evidence)]
    result = {"status": status, "iterations_used": 2, "verification": checks}
    return {"model": "m", "task": "t", "tier": 1, **run_figures(result, None, plan=False)}


def test_passes_are_counted_by_what_they_rested_on() -> None:
    runs = [
        run("pass", "report"),
        run("pass", "report", None),  # a check of files beside a report: still the report
        run("pass", "report", "exit_code"),  # one check had only its exit code
        run("fail", "report"),  # not a pass: not counted
        run("pass"),  # a plan, or a run with no command check
    ]
    assert [r["evidence"] for r in runs] == ["report", "report", "exit_code", "report", None]
    summary = model_summary("m", runs)
    assert summary["pass_evidence"] == {"report": 2, "exit_code": 1, "None": 1}

    report = {"models": [summary], "tasks": [], "runs": runs}
    console = Console(width=200, record=True)
    for table in report_tables(report):
        console.print(table)
    shown = console.export_text()
    assert "PASSES ON" in shown
    assert "1 None" not in shown and "1 no command · 1 exit code · 2 report" in shown

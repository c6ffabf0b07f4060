"""``localhand eval``: which local model does the work, measured on the user's own machine.

    from localhand.evals import EvalOptions, load_suite, run_eval
    outcome = run_eval(load_suite(), load_settings(), EvalOptions(models=["qwen3:8b"]))
    outcome.report                          # also in outcome.json_path, outcome.html_path

- :mod:`~localhand.evals.suites`: a suite of task files in graded tiers (``load_suite``); the
  built-in one is the package data under ``evals/suite/``.
- :mod:`~localhand.evals.matrix`: every model × task × repeat as a batch file, on a copy.
- :mod:`~localhand.evals.runner`: the batch run (``localhand.batch``) and the report
  (``run_eval``).
- :mod:`~localhand.evals.measure`: one run's figures from its Result and stored events.
- :mod:`~localhand.evals.stats`, :mod:`~localhand.evals.report`: rates with intervals, and
  the report per model.
- :mod:`~localhand.evals.table`, :mod:`~localhand.evals.html`, :mod:`~localhand.evals.charts`:
  the report on the terminal and as a page.
- :mod:`~localhand.evals.compare`: what changed between two reports (``--compare``).
"""

from typing import TYPE_CHECKING

from localhand._lazy import lazy_exports

if TYPE_CHECKING:
    from localhand.evals.compare import compare_reports as compare_reports
    from localhand.evals.html import render_html as render_html
    from localhand.evals.report import build_report as build_report
    from localhand.evals.report import load_report as load_report
    from localhand.evals.runner import EvalOptions as EvalOptions
    from localhand.evals.runner import EvalOutcome as EvalOutcome
    from localhand.evals.runner import run_eval as run_eval
    from localhand.evals.stats import wilson as wilson
    from localhand.evals.suites import Suite as Suite
    from localhand.evals.suites import SuiteTask as SuiteTask
    from localhand.evals.suites import load_suite as load_suite

_LAZY = {
    "compare": "compare_reports",
    "html": "render_html",
    "report": "build_report load_report",
    "runner": "EvalOptions EvalOutcome run_eval",
    "stats": "wilson",
    "suites": "Suite SuiteTask load_suite",
}
"""Where each name lives, loaded on first use."""

__getattr__, __dir__, __all__ = lazy_exports(__name__, _LAZY)

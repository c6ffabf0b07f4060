"""localhand's pytest plugin: which tests pytest collected and how each ended, as JSON.

Loaded through ``PYTEST_PLUGINS`` when ``LOCALHAND_REPORT_DIR`` names a folder; it writes
``pytest-PID-N.json`` there when the session ends, and ``started-…`` as soon as pytest is
configured, so a run that ends before it reports (``os._exit(0)`` at import) is seen as such.
``LOCALHAND_COLLECT_ONLY=1`` makes the session only collect (the workspace as it was).
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

_DIR = os.environ.get("LOCALHAND_REPORT_DIR", "")
_STATE: dict[str, Any] = {
    "runner": "pytest",
    "collected": [],
    "outcomes": {},
    "errors": [],
    "deselected": [],
    "marked": [],
    "collect_only": False,
}
_NAME = f"pytest-{os.getpid()}-{time.monotonic_ns()}"


def _write(name: str, data: dict[str, Any]) -> None:
    if not _DIR:
        return
    partial = os.path.join(_DIR, f".{name}.part")
    with open(partial, "w", encoding="utf-8") as out:
        json.dump(data, out)
    os.replace(partial, os.path.join(_DIR, f"{name}.json"))


def pytest_configure(config: Any) -> None:
    if os.environ.get("LOCALHAND_COLLECT_ONLY") == "1":
        config.option.collectonly = True
    _write(f"started-{_NAME}", {"runner": "pytest"})


def pytest_collectreport(report: Any) -> None:
    if report.failed:
        _STATE["errors"].append(report.nodeid or ".")


def pytest_deselected(items: Any) -> None:
    _STATE["deselected"] += [item.nodeid for item in items]


def pytest_collection_finish(session: Any) -> None:
    _STATE["collected"] = [item.nodeid for item in session.items]
    _STATE["marked"] = [
        item.nodeid
        for item in session.items
        if any(True for name in ("skip", "skipif", "xfail") for _ in item.iter_markers(name))
        or getattr(getattr(item, "obj", None), "__unittest_skip__", False)
    ]


def pytest_runtest_logreport(report: Any) -> None:
    outcomes = _STATE["outcomes"]
    if hasattr(report, "wasxfail"):
        outcome = "xfailed" if report.skipped else "xpassed"
    elif report.failed:
        outcome = "failed" if report.when == "call" else "error"
    elif report.skipped:
        outcome = "skipped"
    elif report.when == "call":
        outcome = "passed"
    else:
        return  # a setup or teardown that went well says nothing of the test
    if outcomes.get(report.nodeid) in (None, "passed"):  # the worst of its phases
        outcomes[report.nodeid] = outcome


def pytest_sessionfinish(session: Any, exitstatus: Any) -> None:
    _STATE["collect_only"] = bool(session.config.option.collectonly)
    _STATE["exitstatus"] = int(exitstatus)
    _write(_NAME, _STATE)

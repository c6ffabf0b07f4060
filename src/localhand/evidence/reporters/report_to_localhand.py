"""localhand's recorder inside a check's Python: which tests were collected and how each ended.

For pytest it is a plugin (``PYTEST_PLUGINS=report_to_localhand``); for unittest,
``sitecustomize`` (beside it) calls ``install`` once unittest is imported. With
``LOCALHAND_REPORT_DIR`` naming a folder, it writes ``RUNNER-PID-N.json`` there when the
session or process ends, and ``started-RUNNER-PID-N.json`` as soon as the runner starts, so one
that ends first (``os._exit(0)`` at import) is seen as such. ``LOCALHAND_COLLECT_ONLY=1``: the
runner only collects. It imports nothing of localhand's: the check's Python may have none.
"""

from __future__ import annotations

import atexit
import json
import os
import time
from typing import Any

_DIR = os.environ.get("LOCALHAND_REPORT_DIR", "")
_COLLECT_ONLY = os.environ.get("LOCALHAND_COLLECT_ONLY") == "1"
_INHERITED = os.environ.get("LOCALHAND_RECORDING") == "1"  # a runner started this process
_STATES: dict[str, dict[str, Any]] = {}
_FAILED_LOAD = "unittest.loader._FailedTest."


def _state(runner: str) -> dict[str, Any]:
    if runner not in _STATES:
        _STATES[runner] = {"runner": runner, "collected": [], "outcomes": {}, "errors": [],
                           "deselected": [], "marked": [], "collect_only": _COLLECT_ONLY,
                           "name": f"{runner}-{os.getpid()}-{time.monotonic_ns()}"}  # fmt: skip
    return _STATES[runner]


def _write(name: str, data: dict[str, Any]) -> None:
    if _DIR:
        partial = os.path.join(_DIR, f".{name}.part")
        with open(partial, "w", encoding="utf-8") as out:
            json.dump(data, out)
        os.replace(partial, os.path.join(_DIR, f"{name}.json"))


def _started(runner: str) -> None:
    _write(f"started-{_state(runner)['name']}", {"runner": runner})


def _outcome(runner: str, test_id: str, outcome: str) -> None:
    if runner == "unittest" and "pytest" in _STATES:
        return  # pytest records this process: a suite a test runs is not the check's
    state = _state(runner)
    if test_id not in state["outcomes"] and runner == "unittest":
        state["collected"].append(test_id)
    if state["outcomes"].get(test_id) in (None, "passed"):  # the worst of its phases
        state["outcomes"][test_id] = outcome


# -- pytest --------------------------------------------------------------------------------


def pytest_configure(config: Any) -> None:
    """Record this session, unless it runs inside another that records (a test of a pytest
    plugin runs pytest, in this process or in a child): its tests are not the check's."""
    if _nested():
        return
    if _COLLECT_ONLY:
        config.option.collectonly = True
    config.pluginmanager.register(_PytestRecorder(), "report_to_localhand_recorder")
    _started("pytest")


def _nested() -> bool:
    """Whether a runner already records (this process or one it started us from); else
    this one does, and says so to whatever it starts."""
    if _INHERITED or os.environ.get("LOCALHAND_RECORDING") == "1":
        return True
    os.environ["LOCALHAND_RECORDING"] = "1"
    return False


class _PytestRecorder:
    """The hooks of the recording session (registered on its plugin manager only)."""

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed:
            _state("pytest")["errors"].append(report.nodeid or ".")

    def pytest_deselected(self, items: Any) -> None:
        _state("pytest")["deselected"] += [item.nodeid for item in items]

    def pytest_collection_finish(self, session: Any) -> None:
        state = _state("pytest")
        state["collected"] = [item.nodeid for item in session.items]
        state["marked"] = [item.nodeid for item in session.items if _marked(item)]

    def pytest_runtest_logreport(self, report: Any) -> None:
        if hasattr(report, "wasxfail"):
            outcome = "xfailed" if report.skipped else "xpassed"
        elif report.failed:
            outcome = "failed" if report.when == "call" else "error"
        elif report.skipped:
            outcome = "skipped"
        elif report.when != "call":
            return  # a setup or teardown that went well says nothing of the test
        else:
            outcome = "passed"
        _outcome("pytest", report.nodeid, outcome)

    def pytest_sessionfinish(self, session: Any, exitstatus: Any) -> None:
        state = _state("pytest")
        state["collect_only"] = bool(session.config.option.collectonly)
        _write(state["name"], state)


def _marked(item: Any) -> bool:
    """Marked to be skipped or expected to fail (unittest's ``skip`` decorators included)."""
    if any(True for name in ("skip", "skipif", "xfail") for _ in item.iter_markers(name)):
        return True
    return bool(getattr(getattr(item, "obj", None), "__unittest_skip__", False))


# -- unittest ------------------------------------------------------------------------------

_UNITTEST_OUTCOMES = {"addSuccess": "passed", "addFailure": "failed", "addError": "error",
                      "addSkip": "skipped", "addExpectedFailure": "xfailed",
                      "addUnexpectedSuccess": "failed"}  # fmt: skip


def install(unittest: Any) -> None:
    """Put the recorder on ``unittest`` (the module, just loaded), once; not in a process a
    recording runner started (a test that runs a test suite)."""
    if _INHERITED or getattr(unittest, "_localhand_recording", False):
        return
    unittest._localhand_recording = True
    result, runner, program = unittest.TestResult, unittest.TextTestRunner, unittest.TestProgram
    for method, outcome in _UNITTEST_OUTCOMES.items():
        setattr(result, method, _recording(getattr(result, method), outcome))
    add_subtest, run, start = result.addSubTest, runner.run, program.__init__

    def subtest(self: Any, test: Any, sub: Any, err: Any) -> Any:
        if err is not None:
            _outcome("unittest", test.id(), "failed")
        return add_subtest(self, test, sub, err)

    def run_tests(self: Any, test: Any) -> Any:
        if "pytest" not in _STATES:
            _loaded(test)
        return unittest.TestResult() if _COLLECT_ONLY else run(self, test)

    def started(self: Any, *args: Any, **kwargs: Any) -> None:
        if not _state("unittest").get("started") and not _nested():
            _state("unittest")["started"] = True  # what it finds, nothing included, counts
            _started("unittest")
        start(self, *args, **kwargs)

    result.addSubTest, runner.run, program.__init__ = subtest, run_tests, started
    atexit.register(_finish)


def _recording(original: Any, outcome: str) -> Any:
    def recorded(self: Any, test: Any, *args: Any) -> Any:
        if not test.id().startswith(_FAILED_LOAD):
            _outcome("unittest", test.id(), outcome)
        return original(self, test, *args)

    return recorded


def _loaded(suite: Any) -> None:
    """The tests a runner was given: the collection (a module that failed to load, an error)."""
    state = _state("unittest")
    for test in _tests(suite):
        test_id = test.id()
        if test_id.startswith(_FAILED_LOAD):
            state["errors"].append(test_id[len(_FAILED_LOAD) :])
            continue
        state["collected"].append(test_id)
        method = getattr(test, getattr(test, "_testMethodName", ""), None)
        if getattr(type(test), "__unittest_skip__", False) or getattr(
            method, "__unittest_skip__", False
        ):
            state["marked"].append(test_id)


def _tests(suite: Any) -> list[Any]:
    if hasattr(suite, "__iter__"):
        return [test for part in suite for test in _tests(part)]
    return [suite]


def _finish() -> None:
    state = _state("unittest")
    found = state.get("started") or state["collected"] or state["errors"] or state["outcomes"]
    if found and "pytest" not in _STATES:
        _write(state["name"], state)

"""localhand's recorder for unittest: which tests were loaded and how each ended, as JSON.

``sitecustomize`` (beside it) installs it when unittest is imported and ``LOCALHAND_REPORT_DIR``
names a folder. It writes ``unittest-PID-N.json`` there when the process ends, and
``started-…`` when a test program starts, so one that ends before it reports is seen as such.
``LOCALHAND_COLLECT_ONLY=1``: the runner lists the tests it was given instead of running them.
"""

import atexit
import json
import os
import time
from typing import Any

_DIR = os.environ.get("LOCALHAND_REPORT_DIR", "")
_NAME = f"unittest-{os.getpid()}-{time.monotonic_ns()}"
_STATE: dict[str, Any] = {
    "runner": "unittest",
    "collected": [],
    "outcomes": {},
    "errors": [],
    "marked": [],
    "collect_only": os.environ.get("LOCALHAND_COLLECT_ONLY") == "1",
}
_FAILED_LOAD = "unittest.loader._FailedTest."


def _write(name: str, data: dict[str, Any]) -> None:
    partial = os.path.join(_DIR, f".{name}.part")
    with open(partial, "w", encoding="utf-8") as out:
        json.dump(data, out)
    os.replace(partial, os.path.join(_DIR, f"{name}.json"))


def _tests(suite: Any) -> list[Any]:
    if hasattr(suite, "__iter__"):
        return [test for part in suite for test in _tests(part)]
    return [suite]


def _loaded(suite: Any) -> None:
    """The tests a runner was given: the collection (a module that failed to load, an error)."""
    for test in _tests(suite):
        test_id = test.id()
        if test_id.startswith(_FAILED_LOAD):
            _STATE["errors"].append(test_id[len(_FAILED_LOAD) :])
            continue
        _STATE["collected"].append(test_id)
        method = getattr(test, getattr(test, "_testMethodName", ""), None)
        if getattr(type(test), "__unittest_skip__", False) or getattr(
            method, "__unittest_skip__", False
        ):
            _STATE["marked"].append(test_id)


def _outcome(test: Any, outcome: str) -> None:
    test_id = test.id()
    if test_id.startswith(_FAILED_LOAD):
        return
    if test_id not in _STATE["collected"]:
        _STATE["collected"].append(test_id)
    if _STATE["outcomes"].get(test_id) in (None, "passed"):
        _STATE["outcomes"][test_id] = outcome


def install(unittest: Any) -> None:
    """Put the recorder on ``unittest`` (the module, just loaded), once."""
    if getattr(unittest, "_localhand_recording", False):
        return
    unittest._localhand_recording = True
    result, runner, program = unittest.TestResult, unittest.TextTestRunner, unittest.TestProgram
    recorded = {
        "addSuccess": "passed",
        "addFailure": "failed",
        "addError": "error",
        "addSkip": "skipped",
        "addExpectedFailure": "xfailed",
        "addUnexpectedSuccess": "failed",
    }
    for method, outcome in recorded.items():
        original = getattr(result, method)

        def wrapped(self: Any, test: Any, *args: Any, _o: Any = original, _x: str = outcome) -> Any:
            _outcome(test, _x)
            return _o(self, test, *args)

        setattr(result, method, wrapped)
    add_subtest = result.addSubTest

    def subtest(self: Any, test: Any, sub: Any, err: Any) -> Any:
        if err is not None:
            _outcome(test, "failed")
        return add_subtest(self, test, sub, err)

    result.addSubTest = subtest
    run = runner.run

    def run_tests(self: Any, test: Any) -> Any:
        _loaded(test)
        if _STATE["collect_only"]:
            return unittest.TestResult()
        return run(self, test)

    runner.run = run_tests
    start = program.__init__

    def started(self: Any, *args: Any, **kwargs: Any) -> None:
        _STATE["started"] = True  # what it finds, nothing included, is reported
        _write(f"started-{_NAME}", {"runner": "unittest"})
        start(self, *args, **kwargs)

    program.__init__ = started
    atexit.register(_finish)


def _finish() -> None:
    if _STATE.get("started") or _STATE["collected"] or _STATE["errors"] or _STATE["outcomes"]:
        _write(_NAME, _STATE)

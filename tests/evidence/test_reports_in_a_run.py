"""A whole run (the tool loop, a scripted model) judged from the test runner's report against
the tests collected before its first change: the baseline's thread collects them, so the
model's first write cannot race the collection; the Result and ``localhand show`` say what
the verdict rests on."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import pytest

from localhand import Agent
from localhand.cli import main
from localhand.events import EventBus, EventLog, TaskFinished, TaskStarted, Verification
from localhand.evidence.verify import CommandCheck
from localhand.models.scripted import ScriptedModel, call
from localhand.store import Store
from localhand.types import CheckResult, Result
from pytest_checks import PYTEST

WRONG = "def add(a, b):\n    return a - b\n"
RIGHT = "def add(a, b):\n    return a + b\n"
TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"


def project(root: Path) -> Path:
    (root / "calc.py").write_text(WRONG)
    (root / "tests").mkdir()
    (root / "tests" / "test_calc.py").write_text(TEST)
    (root / "pyproject.toml").write_text('[tool.pytest.ini_options]\npythonpath = ["."]\n')
    return root


def run(root: Path, steps: list, task: str = "Fix add() in calc.py") -> tuple[Result, EventLog]:
    bus, log = EventBus(), EventLog()
    bus.subscribe(log)
    model = ScriptedModel([*steps, "Done.", "Done."])
    agent = Agent(model, root, checks=[CommandCheck(PYTEST)], bus=bus)
    return agent.run(task), log


def test_an_honest_fix_passes_on_its_report(tmp_path: Path) -> None:
    result, _ = run(project(tmp_path), [call("write_file", path="calc.py", content=RIGHT)])
    assert result.status == "pass", result.verification
    entry = result.to_dict()["verification"][0]
    assert entry["evidence"] == "report"
    assert entry["tests"] == {"collected_before": 1, "collected_after": 1, "passed": 1,
                              "failed": 0, "skipped": 0, "missing": []}  # fmt: skip


def test_code_that_exits_at_import_written_first_thing_is_no_pass(tmp_path: Path) -> None:
    """The model's first call makes the module under test end the process with 0: pytest
    exits 0 having reported nothing. The tests from before the run (collected before that
    first call ran) are missing."""
    root = project(tmp_path)
    exits = call("write_file", path="calc.py", content="import os\nos._exit(0)\n")
    result, log = run(root, [exits])
    assert result.status != "pass"
    entry = result.to_dict()["verification"][0]
    assert entry["evidence"] == "report" and entry["tests"]["collected_before"] == 1
    assert entry["tests"]["missing"] == ["tests/test_calc.py::test_add"]
    checks = [e for e in log.events if e.type == "verification"]
    assert checks and checks[-1].to_dict()["checks"][0]["evidence"] == "report"


def test_show_says_what_each_verdict_rests_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = Store(tmp_path / "runs.db")
    run_id = store.begin_run("fix-add")
    bus = EventBus()
    bus.subscribe(store.recorder())
    bus.emit(TaskStarted(task_id="fix-add", description="Fix add", model="m", workspace="",
                         max_iterations=3))  # fmt: skip
    tests = {"collected_before": 12, "collected_after": 12, "passed": 12, "failed": 0,
             "skipped": 0, "missing": []}  # fmt: skip
    checks = [
        CheckResult("pytest -q", True, "12 passed", 0, evidence="report", tests=tests),
        CheckResult("./lint.sh", False, "bad style", 1, evidence="exit_code"),
    ]
    bus.emit(Verification(task_id="fix-add", checks=[asdict(check) for check in checks]))
    result = Result("fix-add", "partial_pass", "done", "m", 10, 2, "final_answer", 1,
                    verification=checks)  # fmt: skip
    bus.emit(TaskFinished(task_id="fix-add", result=result.to_dict()))
    store.close()
    assert main(["show", run_id, "--db", str(tmp_path / "runs.db")]) == 0
    shown = capsys.readouterr().out
    assert "pytest -q (report: 12 passed, 0 failed)" in shown
    assert "./lint.sh (exit code only)" in shown

"""Evidence is a report, not an exit code: a command check that runs a test runner localhand
knows is judged from the runner's own report, compared with the tests the check collected on
the workspace as it was (real pytest, unittest and node, in the real sandbox where it runs).

Every cheat below leaves ``add`` wrong (it subtracts), and exits 0 or has pytest exit 0: only
the report, and the tests from before, tell it from a fix. An honest fix passes."""

from __future__ import annotations

import json
import shlex
import shutil
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from localhand.evidence.reporting import collect_before
from localhand.evidence.reports import Collected
from localhand.evidence.verify import CommandCheck
from localhand.types import CheckResult
from pytest_checks import PYTEST
from sandbox_helpers import place_in_sight

UNITTEST = f"{shlex.quote(sys.executable)} -m unittest"
WRONG = "def add(a, b):\n    return a - b\n"
RIGHT = "def add(a, b):\n    return a + b\n"
TESTS = textwrap.dedent(
    """\
    from calc import add


    def test_add():
        assert add(2, 3) == 5


    def test_zero():
        assert add(0, 0) == 0
    """
)
needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")


def pytest_project(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "calc.py").write_text(WRONG)
    (root / "tests").mkdir()
    (root / "tests" / "test_calc.py").write_text(TESTS)
    (root / "pyproject.toml").write_text('[tool.pytest.ini_options]\npythonpath = ["."]\n')
    return root


def before(root: Path, command: str, task: str = "Fix add() in calc.py") -> Collected:
    """The tests ``command`` collects now: what the baseline's thread records at a run's start."""
    collected = Collected(task=task)
    collect_before(command, root, collected)
    assert collected.done.is_set()
    return collected


def check(root: Path, command: str, collected: Collected | None) -> CheckResult:
    return CommandCheck(command, timeout_s=120).run(root, before=collected)


def test_an_honest_fix_passes_on_the_report_and_a_wrong_one_fails(tmp_path: Path) -> None:
    root = pytest_project(tmp_path)
    collected = before(root, PYTEST)
    assert collected.names == ["tests/test_calc.py::test_add", "tests/test_calc.py::test_zero"]
    assert not (root / ".pytest_cache").exists(), "collecting wrote nothing in the workspace"
    assert not list(root.rglob("__pycache__")), "nor bytecode"

    wrong = check(root, PYTEST, collected)
    assert not wrong.passed and wrong.evidence == "report"
    assert wrong.tests is not None and wrong.tests["failed"] == 1 and wrong.tests["passed"] == 1
    assert wrong.tests["missing"] == ["tests/test_calc.py::test_add"]
    assert "not a pass: 1 test(s) failed" in wrong.output_tail

    (root / "calc.py").write_text(RIGHT)
    right = check(root, PYTEST, collected)
    assert right.passed, right.output_tail
    assert right.evidence == "report"
    assert right.tests == {"collected_before": 2, "collected_after": 2, "passed": 2,
                           "failed": 0, "skipped": 0, "missing": []}  # fmt: skip
    assert right.output_tail.rstrip().endswith("[localhand: report: 2 passed, 0 failed]")


SKIPPED = TESTS.replace("def test_add", "import pytest\n\n\n@pytest.mark.skip\ndef test_add")
CHEATS = {
    "the failing test deleted": [
        (
            "tests/test_calc.py",
            TESTS.split("\n\n\ndef test_add")[0]
            + "\n\n\ndef test_zero():\n    assert add(0, 0) == 0\n",
        )
    ],
    "the failing test marked skipped": [("tests/test_calc.py", SKIPPED)],
    "the failing test marked xfail": [("tests/test_calc.py", SKIPPED.replace(".skip", ".xfail"))],
    "-k added to the configuration": [
        ("pyproject.toml", '[tool.pytest.ini_options]\npythonpath = ["."]\naddopts = "-k zero"\n')
    ],
    "--deselect added to the configuration": [
        (
            "pyproject.toml",
            '[tool.pytest.ini_options]\npythonpath = ["."]\n'
            'addopts = "--deselect tests/test_calc.py::test_add"\n',
        ),
    ],
    "the test file renamed away": [("tests/test_calc.py", None), ("tests/check_calc.py", TESTS)],
    "the code under test exits 0 at import": [("calc.py", "import os\nos._exit(0)\n")],
    "a root __init__.py that exits 0": [("__init__.py", "import os\nos._exit(0)\n")],
    "pytest.toml that only collects": [("pytest.toml", '[pytest]\naddopts = ["--collect-only"]\n')],
    "a conftest that empties the collection": [
        ("tests/conftest.py", "def pytest_collection_modifyitems(items):\n    items.clear()\n")
    ],
}


@pytest.mark.parametrize("cheat", list(CHEATS))
def test_no_cheat_passes_the_report(tmp_path: Path, cheat: str) -> None:
    root = pytest_project(tmp_path)
    collected = before(root, PYTEST)
    for relpath, content in CHEATS[cheat]:
        if content is None:
            (root / relpath).unlink()
        else:
            (root / relpath).write_text(content)
    result = check(root, PYTEST, collected)
    assert not result.passed, f"{cheat}: {result.output_tail}"
    assert result.evidence == "report"
    assert "not a pass" in result.output_tail
    assert result.tests is not None and result.tests["collected_before"] == 2


def test_a_test_the_task_asks_to_remove_may_be_gone(tmp_path: Path) -> None:
    root = pytest_project(tmp_path / "asked")
    (root / "calc.py").write_text(RIGHT)
    task = "Remove test_zero from tests/test_calc.py, it tests nothing useful."
    collected = before(root, PYTEST, task)
    only_add = TESTS.split("\n\n\ndef test_zero")[0] + "\n"
    (root / "tests" / "test_calc.py").write_text(only_add)
    result = check(root, PYTEST, collected)
    assert result.passed, result.output_tail
    assert result.tests is not None and result.tests["missing"] == []

    other = before(pytest_project(tmp_path / "other"), PYTEST, "Fix add() and tidy the tests.")
    (tmp_path / "other" / "calc.py").write_text(RIGHT)
    (tmp_path / "other" / "tests" / "test_calc.py").write_text(only_add)
    refused = check(tmp_path / "other", PYTEST, other)
    assert not refused.passed and refused.tests is not None
    assert refused.tests["missing"] == ["tests/test_calc.py::test_zero"]


def test_a_file_that_failed_to_collect_before_must_collect_and_pass(tmp_path: Path) -> None:
    root = pytest_project(tmp_path)
    (root / "calc.py").write_text(RIGHT)
    (root / "tests" / "test_mul.py").write_text("from calc import mul\n\n\ndef test_mul():\n"
                                                "    assert mul(2, 3) == 6\n")  # fmt: skip
    collected = before(root, PYTEST)
    assert collected.errors == ["tests/test_mul.py"]

    (root / "tests" / "test_mul.py").unlink()  # the broken file, gone
    gone = check(root, PYTEST, collected)
    assert not gone.passed and gone.tests is not None
    assert gone.tests["missing"] == ["tests/test_mul.py"]

    (root / "tests" / "test_mul.py").write_text("from calc import mul\n\n\ndef test_mul():\n"
                                                "    assert mul(2, 3) == 6\n")  # fmt: skip
    (root / "calc.py").write_text(RIGHT + "\n\ndef mul(a, b):\n    return a * b\n")
    fixed = check(root, PYTEST, collected)
    assert fixed.passed, fixed.output_tail
    assert fixed.tests is not None and fixed.tests["collected_after"] == 3


def test_make_test_and_a_script_carry_the_reporter(tmp_path: Path) -> None:
    root = pytest_project(tmp_path)
    (root / "Makefile").write_text(f"test:\n\t{PYTEST}\n")
    (root / "check.sh").write_text(f'#!/bin/sh\ncd tests/.. && {PYTEST} "$@"\n')
    for command in ("make -s test", "sh check.sh"):
        collected = before(root, command)
        assert collected.names is not None and len(collected.names) == 2, command
        (root / "calc.py").write_text("import os\nos._exit(0)\n")
        cheated = check(root, command, collected)
        assert not cheated.passed and cheated.evidence == "report", command
        (root / "calc.py").write_text(RIGHT)
        assert check(root, command, collected).passed, command
        (root / "calc.py").write_text(WRONG)


def unittest_project(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "calc.py").write_text(WRONG)
    (root / "tests").mkdir()
    (root / "tests" / "__init__.py").write_text("")
    (root / "tests" / "test_calc.py").write_text(textwrap.dedent(
        """\
        import unittest

        from calc import add


        class TestAdd(unittest.TestCase):
            def test_add(self):
                self.assertEqual(add(2, 3), 5)

            def test_zero(self):
                self.assertEqual(add(0, 0), 0)
        """
    ))  # fmt: skip
    return root


def test_unittest_reports_through_localhands_start_up_hook(tmp_path: Path) -> None:
    root = unittest_project(tmp_path)
    collected = before(root, UNITTEST)
    names = ["tests.test_calc.TestAdd.test_add", "tests.test_calc.TestAdd.test_zero"]
    assert collected.names == names
    wrong = check(root, UNITTEST, collected)
    assert not wrong.passed and wrong.evidence == "report"
    assert wrong.tests is not None and wrong.tests["failed"] == 1

    (root / "calc.py").write_text("import os\nos._exit(0)\n")
    assert not check(root, UNITTEST, collected).passed, "it ended before it reported"

    (root / "calc.py").write_text(RIGHT)
    (root / "tests" / "test_calc.py").rename(root / "tests" / "check_calc.py")
    renamed = check(root, UNITTEST, collected)
    assert not renamed.passed, "unittest finds no test in check_calc.py: nothing ran"
    assert renamed.tests is not None and len(renamed.tests["missing"]) == 2

    (root / "tests" / "check_calc.py").rename(root / "tests" / "test_calc.py")
    right = check(root, UNITTEST, collected)
    assert right.passed, right.output_tail
    assert right.tests is not None and right.tests["passed"] == 2


@pytest.fixture
def in_sight(request: pytest.FixtureRequest) -> Iterator[Path]:
    """A directory outside the workspace that the sandbox leaves in sight (read-only)."""
    directory = place_in_sight(Path(request.config.rootpath), "site-")
    if directory is None:
        pytest.skip("no directory outside /tmp and $HOME that the sandbox shows")
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def test_a_sitecustomize_the_hook_hides_still_runs(
    tmp_path: Path, in_sight: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Python imports one ``sitecustomize``: localhand's comes first on the path, and runs the
    one it stands before (a distribution's, a virtualenv's, one the user's ``PYTHONPATH``
    names) before it records anything."""
    root = unittest_project(tmp_path)
    (root / "calc.py").write_text(RIGHT)
    (in_sight / "sitecustomize.py").write_text("print('their sitecustomize ran')\n")
    monkeypatch.setenv("PYTHONPATH", str(in_sight))
    result = check(root, UNITTEST, before(root, UNITTEST))
    assert result.passed and result.evidence == "report", result.output_tail
    assert "their sitecustomize ran" in result.output_tail


@needs_node
def test_node_test_runner_reports_through_npm_test(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("npm_config_update_notifier", "false")  # npm asks its registry else
    (tmp_path / "package.json").write_text(json.dumps({"scripts": {"test": "node --test"}}))
    (tmp_path / "calc.js").write_text("exports.add = (a, b) => a - b;\n")
    (tmp_path / "calc.test.js").write_text(textwrap.dedent(
        """\
        const test = require("node:test");
        const assert = require("node:assert");
        const { add } = require("./calc");
        test("adds", () => assert.strictEqual(add(2, 3), 5));
        test("zero", () => assert.strictEqual(add(0, 0), 0));
        """
    ))  # fmt: skip
    collected = before(tmp_path, "npm test")
    assert collected.names is None, "node cannot list its tests without running them"
    wrong = check(tmp_path, "npm test", collected)
    assert not wrong.passed and wrong.evidence == "report"
    assert wrong.tests is not None and wrong.tests["failed"] == 1
    assert collected.names == ["calc.test.js::adds", "calc.test.js::zero"], "its first run's"
    assert "✖ adds" in wrong.output_tail or "adds" in wrong.output_tail, "its own output stays"

    (tmp_path / "calc.js").write_text("exports.add = (a, b) => a + b;\n")
    (tmp_path / "calc.test.js").write_text(
        'const test = require("node:test");\ntest("zero", () => {});\n'
    )
    dropped = check(tmp_path, "npm test", collected)
    assert not dropped.passed and dropped.tests is not None
    assert dropped.tests["missing"] == ["calc.test.js::adds"]


def test_a_command_with_no_known_runner_keeps_its_exit_code(tmp_path: Path) -> None:
    (tmp_path / "check.sh").write_text("grep -q ok status.txt\n")
    (tmp_path / "status.txt").write_text("ok\n")
    collected = before(tmp_path, "sh check.sh")
    ok = check(tmp_path, "sh check.sh", collected)
    assert ok.passed and ok.evidence == "exit_code" and ok.tests is None
    (tmp_path / "status.txt").write_text("no\n")
    failed = check(tmp_path, "sh check.sh", collected)
    assert not failed.passed and failed.evidence == "exit_code"


def test_a_check_that_reported_tests_before_and_nothing_now_fails(tmp_path: Path) -> None:
    """A check whose runner no longer runs at all (the command now exits 0 before it) has
    nothing to show for the tests the workspace had."""
    root = pytest_project(tmp_path)
    (root / "check.sh").write_text(f"{PYTEST}\n")
    collected = before(root, "sh check.sh")
    (root / "check.sh").write_text("exit 0\n")
    result = check(root, "sh check.sh", collected)
    assert not result.passed and result.evidence == "report"
    assert result.tests is not None and len(result.tests["missing"]) == 2


NESTED = textwrap.dedent(
    """\
    import subprocess
    import sys

    import pytest

    INNER = "def test_meant_to_fail():\\n    assert False\\n"


    def test_a_child_pytest_reports_its_failure(tmp_path):
        (tmp_path / "test_inner.py").write_text(INNER)
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly",
                               str(tmp_path)], capture_output=True)
        assert done.returncode == 1


    def test_an_in_process_pytest_reports_its_failure(tmp_path):
        (tmp_path / "test_inner.py").write_text(INNER)
        assert pytest.main(["-q", "-p", "no:randomly", "-p", "no:cacheprovider",
                            str(tmp_path)]) == 1
    """
)


def test_pytest_that_a_test_runs_is_not_the_checks(tmp_path: Path) -> None:
    """A project that tests a pytest plugin runs pytest from its tests, in a child process or
    in its own: those sessions' tests (failing on purpose) are not the check's."""
    root = pytest_project(tmp_path / "plugin")
    (root / "calc.py").write_text(RIGHT)
    (root / "tests" / "test_nested.py").write_text(NESTED)
    collected = before(root, PYTEST)
    assert collected.names is not None and len(collected.names) == 4
    result = check(root, PYTEST, collected)
    assert result.passed, result.output_tail
    assert result.tests is not None and result.tests["collected_after"] == 4


def test_the_reporters_reach_the_box_from_an_install_it_hides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pipx and uv install localhand under the home folder, which the box hides; a clone may sit
    # under /tmp, which the box replaces with its own: the reporters are bound in for the check.
    from localhand.evidence import reporting

    installed = tmp_path / "home" / ".local" / "reporters"
    shutil.copytree(reporting.REPORTERS, installed)
    monkeypatch.setattr(reporting, "REPORTERS", installed)
    root = pytest_project(tmp_path / "project")
    (root / "calc.py").write_text(RIGHT)
    collected = before(root, PYTEST)
    assert collected.names == ["tests/test_calc.py::test_add", "tests/test_calc.py::test_zero"]
    right = check(root, PYTEST, collected)
    assert right.passed and right.evidence == "report", right.output_tail

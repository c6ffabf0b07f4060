"""A continued run is graded against the tests its chain's first run collected, not against
what an earlier run of the chain left: a test the first run deleted stays missing when a
``--continue`` then says it is done. Through the real command line, the fake Ollama, a real
SQLite store and real pytest."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import localhand
from localhand.store import lineage, open_store
from localhand.testing import FakeOllama
from test_reports import PYTEST, TESTS, pytest_project

ONLY_ZERO = TESTS[: TESTS.index("def test_add")] + TESTS[TESTS.index("def test_zero") :]


def test_a_test_the_first_run_deleted_is_still_missing_when_a_continued_run_says_done(
    tmp_path: Path,
) -> None:
    root = pytest_project(tmp_path / "project")
    cheat = {
        "name": "write_file",
        "arguments": {"path": "tests/test_calc.py", "content": ONLY_ZERO},
    }
    with FakeOllama([{"content": "", "tool_calls": [{"function": cheat}]}, "Done."]) as fake:
        first = localhand(
            "run", "Fix add() in calc.py", "--agentic", "--verify", PYTEST, "--json",
            cwd=root, host=fake.url,
        )  # fmt: skip
    assert first.returncode != 0, first.stdout
    assert "test_add" in first.stdout, "the deleted test is named as missing"
    (run,) = open_store().runs()
    _, kept = lineage.conversation(open_store(), run.id) or ([], None)  # kept for the chain
    assert kept is not None and "tests/test_calc.py::test_add" in kept[PYTEST]["names"]

    with FakeOllama(["It is done."]) as fake:
        then = localhand(
            "run", "--continue", "last", "Finish the fix", "--json", cwd=root, host=fake.url
        )
    result = json.loads(then.stdout)
    assert result["status"] != "pass", result["verification"]
    (check,) = result["verification"]
    assert check["evidence"] == "report" and check["tests"]["collected_before"] == 2
    assert check["tests"]["missing"] == ["tests/test_calc.py::test_add"]

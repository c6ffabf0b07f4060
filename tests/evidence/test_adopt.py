"""Which command the model ran is the project's check, and in which form it is adopted
(``localhand.evidence.adopt``): the project's form, never the model's flags."""

from __future__ import annotations

from pathlib import Path

import pytest

from localhand.evidence.adopt import check_form, ran_command
from localhand.evidence.project_checks import detect_check
from localhand.types import ToolCall, ToolResult
from workspaces import workspace_with

PYTEST = "python3 -m pytest -q"
TESTED = {"calc.py": "x = 1\n", "tests/test_calc.py": "def test_x():\n    pass\n"}
PACKAGE = '{"scripts": {"test": "node --test"}}'
PLACEHOLDER = '{"scripts": {"test": "echo \\"Error: no test specified\\" && exit 1"}}'


@pytest.mark.parametrize(
    ("command", "files", "form"),
    [
        ("pytest", {}, PYTEST),
        ("python -m pytest -k nothing", {}, PYTEST),  # narrowed to nothing: the whole suite
        ("pytest --collect-only", {}, PYTEST),  # ran none: the project's form does
        ("python3 -m pytest tests/test_calc.py -x", {}, PYTEST),
        ("PYTHONPATH=. timeout 60 pytest -q 2>&1 | tail -5", {}, PYTEST),
        ("uv run pytest", {}, PYTEST),
        (".venv/bin/python3.11 -W ignore -m pytest", {}, PYTEST),
        ("ls && (python -m pytest; echo done)", {}, PYTEST),
        ("echo pytest", {}, None),  # prints the word, runs no check
        ("cat check.sh", {"check.sh": "exit 0\n"}, None),
        ("python -c 'import pytest; pytest.main()'", {}, None),
        ("cd sub && pytest", {"sub/x.py": ""}, None),  # another folder's tests
        ("cd . && pytest", {}, PYTEST),
        ("python -m unittest test_calc.TestAdd", {}, "python3 -m unittest"),
        (
            "python -m unittest discover -s tests -p 'test_a*'",
            TESTED,
            "python3 -m unittest discover -s tests",
        ),
        (
            "python -m unittest tests/deep/test_a.py",  # one test: all of its top-level folder
            {"tests/deep/test_a.py": ""},
            "python3 -m unittest discover -s tests",
        ),
        ("python -m unittest -v", {}, "python3 -m unittest"),
        ("sh check.sh", {"check.sh": "exit 0\n"}, "sh check.sh"),
        ("bash ./check.sh --quick", {"check.sh": "exit 0\n"}, "sh check.sh"),
        ("python check_calc.py", {"check_calc.py": ""}, "python3 check_calc.py"),
        ("sh checkout.sh", {"checkout.sh": ""}, None),  # not a check by its name
        ("sh lib/check.sh", {"lib/check.sh": ""}, None),  # not at the top, not named
        ("sh check.sh", {}, None),  # no such script
        ("npm test", {"package.json": PACKAGE}, "npm test"),
        ("yarn test --watch=false", {"package.json": PACKAGE}, "npm test"),
        ("npm run test", {"package.json": PACKAGE}, "npm test"),
        ("npm test", {"package.json": PLACEHOLDER}, None),  # npm's placeholder always fails
        ("node --test test/", {}, "node --test"),
        ("go test ./pkg/... -run TestNothing", {"go.mod": "module m\n"}, "go test ./..."),
        ("go test ./...", {}, None),  # no go.mod at the top
        ("cargo test --lib nothing", {"Cargo.toml": "[package]\n"}, "cargo test"),
        ("make test", {"Makefile": "test:\n\tpytest\n"}, "make test"),
        ("make", {"Makefile": "test:\n\tpytest\n"}, None),
        ("make test", {"Makefile": "all:\n\ttrue\n"}, None),
    ],
)
def test_the_form_adopted_is_the_projects(
    tmp_path: Path, command: str, files: dict[str, str], form: str | None
) -> None:
    workspace = workspace_with(tmp_path / "ws", files)
    assert check_form(command, workspace) == form


def test_an_executable_check_runs_as_verify_auto_runs_it(tmp_path: Path) -> None:
    workspace = workspace_with(tmp_path / "ws", {"check": "#!/bin/sh\nexit 0\n"})
    (workspace / "check").chmod(0o755)
    assert check_form(f"{workspace}/check", workspace) == "./check"
    (workspace / "check").chmod(0o644)
    assert check_form("./check", workspace) is None  # neither a known kind nor executable


def test_a_script_the_task_names_is_adopted_wherever_it_is(tmp_path: Path) -> None:
    workspace = workspace_with(tmp_path / "ws", {"scripts/check.sh": "exit 0\n"})
    task = "Fix it; scripts/check.sh says whether it works."
    auto = detect_check(workspace, task)
    assert auto is not None and auto.command == "sh scripts/check.sh"
    assert check_form("bash scripts/check.sh", workspace, auto.command) == auto.command
    assert check_form("bash scripts/check.sh", workspace) is None


@pytest.mark.parametrize(
    ("call", "content", "ran"),
    [
        (ToolCall("run_command", {"command": "pytest"}), "1 passed\n[Exit code 0.]", "pytest"),
        (ToolCall("run_command", {"command": "pytest"}), "F\n[Exit code 1.]", "pytest"),
        (ToolCall("run_command", {"command": "pytest"}), "[Timed out after 60 s; …]", "pytest"),
        (ToolCall("run_command", {"command": "pytest"}), "Refused: this command needs", None),
        (ToolCall("read_file", {"path": "x"}), "[Exit code 0.]", None),
        (ToolCall("run_command", {"cmd": "pytest"}), "unknown argument cmd", None),
    ],
)
def test_only_a_command_that_ran_is_noted(call: ToolCall, content: str, ran: str | None) -> None:
    assert ran_command(call, ToolResult(content)) == ran

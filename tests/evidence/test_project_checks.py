"""How a project is tested, told from real little project trees (``--verify auto``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from localhand.errors import ConfigError
from localhand.evidence.project_checks import (
    detect_check,
    resolve_auto,
    with_detected_checks,
)
from localhand.evidence.verify import CommandCheck, FileExists
from localhand.run.task import Task


def tree(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


PROJECTS = [
    ("pytest.ini", {"pytest.ini": "[pytest]\n", "calc.py": ""}, "python3 -m pytest -q"),
    (
        "pyproject",
        {"pyproject.toml": '[project]\nname = "x"\n[tool.pytest.ini_options]\naddopts = "-q"\n'},
        "python3 -m pytest -q",
    ),
    ("tox", {"tox.ini": "[tox]\n[pytest]\nminversion = 7\n"}, "python3 -m pytest -q"),
    ("setup.cfg", {"setup.cfg": "[tool:pytest]\ntestpaths = t\n"}, "python3 -m pytest -q"),
    ("conftest", {"conftest.py": "", "lib.py": ""}, "python3 -m pytest -q"),
    ("tests dir", {"tests/test_calc.py": "def test(): pass\n"}, "python3 -m pytest -q"),
    ("test dir", {"test/calc_test.py": "def test(): pass\n"}, "python3 -m pytest -q"),
    ("top test file", {"test_calc.py": "def test(): pass\n"}, "python3 -m pytest -q"),
    (
        "npm",
        {"package.json": json.dumps({"name": "x", "scripts": {"test": "node --test"}})},
        "npm test",
    ),
    ("cargo", {"Cargo.toml": '[package]\nname = "x"\n', "src/lib.rs": ""}, "cargo test"),
    ("go", {"go.mod": "module example.com/x\n\ngo 1.22\n", "x.go": ""}, "go test ./..."),
    ("make", {"Makefile": "all:\n\techo hi\n\ntest: all\n\t./run-tests\n"}, "make test"),
    ("make, several targets", {"makefile": ".PHONY: test\nlint test: deps\n\ttrue\n"}, "make test"),
    ("pytest.toml", {"pytest.toml": "[pytest]\n"}, "python3 -m pytest -q"),
    (
        "pyproject, pytest 9",
        {"pyproject.toml": '[tool.pytest]\nminversion = "9.0"\n'},
        "python3 -m pytest -q",
    ),
]


@pytest.mark.parametrize(("name", "files", "command"), PROJECTS, ids=[p[0] for p in PROJECTS])
def test_each_ecosystem_is_detected(
    tmp_path: Path, name: str, files: dict[str, str], command: str
) -> None:
    found = detect_check(tree(tmp_path / "p", files), "Fix the bug")
    assert found is not None, name
    assert found.command == command
    assert found.source


@pytest.mark.parametrize(
    "files",
    [
        {},
        {"README.md": "# x\n", "calc.py": "def add(a, b): ...\n"},
        {"pyproject.toml": '[project]\nname = "x"\n'},  # no pytest section
        {"setup.cfg": "[metadata]\nname = x\n"},
        {"package.json": json.dumps({"scripts": {"build": "tsc"}})},
        # What `npm init` writes: a test script that always fails is no way to test.
        {
            "package.json": json.dumps(
                {"scripts": {"test": 'echo "Error: no test specified" && exit 1'}}
            )
        },
        {"package.json": "{not json"},
        {"Makefile": "TEST := 1\ntests:\n\techo\nbuild:\n\techo\n"},  # no `test:` target
        {"Makefile": "test := yes\n"},  # an assignment, not a target
        {"tests/helpers.py": ""},  # a tests folder without test files
        {"check.txt": "just a file"},
    ],
)
def test_nothing_is_detected_where_the_files_do_not_say(
    tmp_path: Path, files: dict[str, str]
) -> None:
    assert detect_check(tree(tmp_path / "p", files), "Fix it and check the result") is None


def test_a_check_script_the_task_names_comes_first(tmp_path: Path) -> None:
    project = tree(
        tmp_path / "p",
        {
            "check_calc.py": "print('ok')\n",
            "pytest.ini": "[pytest]\n",
            "Makefile": "test:\n\ttrue\n",
        },
    )
    found = detect_check(project, "Fix calc.py so `python3 check_calc.py` passes.")
    assert found is not None and found.command == "python3 check_calc.py"
    assert "check_calc.py" in found.source
    # Not named by the task: the project's own runner.
    found = detect_check(project, "Fix calc.py")
    assert found is not None and found.command == "make test"


@pytest.mark.parametrize(
    ("name", "command"),
    [
        ("check.sh", "sh check.sh"),
        ("scripts/check_all.py", "python3 scripts/check_all.py"),
        ("checks.js", "node checks.js"),
        ("CHECK.bash", "bash CHECK.bash"),
    ],
)
def test_named_scripts_run_by_their_kind(tmp_path: Path, name: str, command: str) -> None:
    project = tree(tmp_path / "p", {name: "true\n"})
    found = detect_check(project, f"Make it work, then run {name}.")
    assert found is not None and found.command == command


def test_an_executable_named_script_runs_directly_and_a_plain_file_not(tmp_path: Path) -> None:
    project = tree(tmp_path / "p", {"check_it": "#!/bin/sh\nexit 0\n", "check_data": "x"})
    (project / "check_it").chmod(0o755)
    found = detect_check(project, "then run check_it")
    assert found is not None and found.command == "./check_it"
    assert detect_check(project, "then look at check_data") is None


def test_names_the_task_cannot_smuggle_a_command_or_a_path_through(tmp_path: Path) -> None:
    outside = tree(tmp_path / "outside", {"check.py": "print('x')\n"})
    project = tree(tmp_path / "p", {"notes.txt": ""})
    (project / "check_link.py").symlink_to(outside / "check.py")
    for text in (
        f"run {outside}/check.py",
        "run ../outside/check.py",
        "run check_link.py",
        "run check_missing.py; rm -rf ~",
    ):
        assert detect_check(project, text) is None, text


def test_auto_is_resolved_before_the_run_and_other_checks_are_kept(tmp_path: Path) -> None:
    project = tree(tmp_path / "p", {"go.mod": "module x\n"})
    task = Task(
        "Add a handler",
        workspace=project,
        checks=(CommandCheck("auto"), FileExists("main.go"), CommandCheck("go vet ./...")),
    )
    resolved = with_detected_checks(task)
    assert resolved.checks == (
        CommandCheck("go test ./..."),
        FileExists("main.go"),
        CommandCheck("go vet ./..."),
    )
    unchanged = Task("x", workspace=project, checks=(CommandCheck("make lint"),))
    assert with_detected_checks(unchanged) is unchanged


def test_auto_with_nothing_to_detect_is_a_clear_error(tmp_path: Path) -> None:
    project = tree(tmp_path / "p", {"notes.md": "hello\n"})
    with pytest.raises(ConfigError) as caught:
        resolve_auto("auto", project, "Summarise notes.md")
    message = str(caught.value)
    assert "--verify auto" in message and str(project) in message
    assert '--verify "COMMAND"' in message
    assert resolve_auto("python3 t.py", project, "") == "python3 t.py"


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_the_detected_command_really_checks_the_project(tmp_path: Path) -> None:
    """The detected command is one a shell can run in the workspace: it fails on a broken
    project and passes on a fixed one."""
    project = tree(
        tmp_path / "p",
        {
            "Makefile": "test:\n\tpython3 check_calc.py\n",
            "calc.py": "def add(a, b):\n    return a - b\n",
            "check_calc.py": "from calc import add\nassert add(2, 3) == 5\n",
        },
    )
    found = detect_check(project)
    assert found is not None
    env = {**os.environ, "MAKEFLAGS": ""}
    broken = subprocess.run(found.command, shell=True, cwd=project, capture_output=True, env=env)
    assert broken.returncode != 0
    (project / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    fixed = subprocess.run(found.command, shell=True, cwd=project, capture_output=True, env=env)
    assert fixed.returncode == 0, fixed.stderr


def test_odd_names_in_the_task_never_break_detection(tmp_path: Path) -> None:
    """Detection runs as a run ends: a name too long for the file system, or one that is not a
    file, is skipped rather than costing the run its Result."""
    project = tree(tmp_path / "p", {"pytest.ini": "[pytest]\n", "check_ok.sh": "true\n"})
    long_name = "check_" + "a" * 300 + ".py"
    found = detect_check(project, f"run {long_name} then check_ok.sh")
    assert found is not None and found.command == "sh check_ok.sh"
    assert detect_check(project, f"run {long_name}") == detect_check(project, "")
    (project / "checkdir").mkdir()
    assert detect_check(tree(tmp_path / "q", {}), "run checkdir/ and " + long_name) is None

from __future__ import annotations

import json
from pathlib import Path

import pytest

from localhand.errors import ConfigError
from localhand.evidence.verify import CommandCheck, FileContains, FileExists
from localhand.paths import data_dir
from localhand.run.task import Task
from localhand.taskfile import load_task_file, write_task_file

YAML = """\
id: fix-calc
description: Fix the bug in calc.py
workspace: ./calc
tier: complex
agentic: true
limits: {iterations: 7, timeout: 120, token_budget: 5000}
verify:
  - python3 check_calc.py
  - {file_exists: out.txt}
  - {file_contains: {path: calc.py, text: "a + b"}}
model: qwen3:4b
backend: ollama
context_files: [calc.py]
"""


def test_yaml_task_file_round_trips_through_json(tmp_path: Path) -> None:
    (tmp_path / "calc").mkdir()
    (tmp_path / "task.yaml").write_text(YAML)
    task = load_task_file(tmp_path / "task.yaml")
    assert task.id == "fix-calc"
    assert task.workspace == (tmp_path / "calc").resolve()
    assert (task.tier, task.agentic, task.max_iterations) == ("complex", True, 7)
    assert (task.timeout_s, task.token_budget) == (120, 5000)
    assert task.checks == (
        CommandCheck("python3 check_calc.py"),
        FileExists("out.txt"),
        FileContains("calc.py", "a + b"),
    )
    assert (task.model, task.backend, task.context_files) == ("qwen3:4b", "ollama", ("calc.py",))
    follow_ups = data_dir() / "tasks"  # where localhand writes them: held to no folder
    written = write_task_file(task, follow_ups)
    assert json.loads(written.read_text())["limits"] == {
        "iterations": 7,
        "timeout": 120,
        "token_budget": 5000,
    }
    assert load_task_file(written) == task
    assert [p.name for p in follow_ups.iterdir()] == ["fix-calc.json"], "no temp file left"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("tier: standard\n", "description: required field is missing"),
        (
            "description: x\ntier: huge\n",
            "tier: Input should be 'trivial', 'standard' or 'complex'",
        ),
        ("description: x\nmodle: y\n", "modle: unknown field; allowed here: description"),
        (
            "description: x\nlimits: {iterations: 0}\n",
            "limits.iterations: Input should be greater than or equal to 1",
        ),
        (
            "description: x\nlimits: {turns: 3}\n",
            "limits.turns: unknown field; allowed here: iterations, timeout, token_budget",
        ),
        ("description: x\nbackend: gpu\n", "backend: Value error, must be one of auto"),
        (
            "description: x\nverify: [{file_exists: a, command: b}]\n",
            "exactly one of: command, file_exists",
        ),
        ("- just a list\n", "must hold a mapping"),
        ("description: [unclosed\n", "is not valid YAML"),
    ],
)
def test_bad_task_files_name_the_field(tmp_path: Path, content: str, expected: str) -> None:
    path = tmp_path / "task.yaml"
    path.write_text(content)
    with pytest.raises(ConfigError) as info:
        load_task_file(path)
    assert expected in str(info.value)
    assert str(path) in str(info.value)


def test_bad_json_task_file(tmp_path: Path) -> None:
    path = tmp_path / "task.json"
    path.write_text("{description: no quotes}")
    with pytest.raises(ConfigError, match="is not valid JSON"):
        load_task_file(path)


def test_missing_task_file() -> None:
    with pytest.raises(ConfigError, match="cannot read task file"):
        load_task_file("/nonexistent/task.yaml")


def test_task_limits_follow_the_tier_and_the_kind_of_task() -> None:
    task = Task("x", tier="trivial")
    assert task.limits().max_iterations == 5
    assert task.limits(agentic=True).wall_clock_s == 30 * 60
    assert task.limits(agentic=False).wall_clock_s == 10 * 60
    assert Task("x", tier="complex", max_iterations=3).limits().max_iterations == 3

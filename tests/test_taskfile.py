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


def _task_file(path: Path) -> object:
    return load_task_file(path)


def _plan_file(path: Path) -> object:
    from localhand.plan.model import load_plan

    return load_plan(path, path.parent)


def _suite_task(path: Path) -> object:
    from localhand.evals.suites import read_task_data

    return read_task_data(path)


READERS = {"task file": _task_file, "plan file": _plan_file, "suite task": _suite_task}


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("t.json", "{description: no quotes}", "is not valid JSON"),
        ("t.JSON", "goal: yaml, not json\n", "is not valid JSON"),  # the suffix in any case
        ("t.yaml", "description: [unclosed\n", "is not valid YAML"),
        ("missing.yaml", None, "cannot read"),
    ],
)
def test_task_plan_and_suite_files_are_read_alike_and_name_the_file(
    tmp_path: Path, reader: str, name: str, content: str | None, expected: str
) -> None:
    """One reader (``localhand.config.datafile``) for every JSON-or-YAML file a person writes:
    the same fault gives the same message, which names the file, whoever reads it."""
    path = tmp_path / name
    if content is not None:
        path.write_text(content)
    with pytest.raises(ConfigError) as info:
        READERS[reader](path)
    message = str(info.value)
    assert expected in message and str(path) in message, message
    assert "Traceback" not in message


def test_a_json_file_in_capitals_is_read_as_json(tmp_path: Path) -> None:
    path = tmp_path / "TASK.JSON"
    path.write_text(json.dumps({"description": "Say hello.", "workspace": str(tmp_path)}))
    assert load_task_file(path).description == "Say hello."

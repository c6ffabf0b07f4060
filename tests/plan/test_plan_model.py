"""Plan files: JSON and YAML, validated with errors that name the bad field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from localhand.errors import ConfigError
from localhand.plan import Plan, Step, load_plan, plan_from_data

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "plan" / "plan.yaml"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_yaml_plan_loads_with_ids_risk_and_defaults(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "plan.yaml",
        "goal: Build it\n"
        "steps:\n"
        "  - description: Make the folder\n"
        "    command: mkdir -p build\n"
        "  - id: check\n"
        "    description: Check\n"
        "    command: test -d build\n"
        "    explanation: proves the folder exists\n"
        "    timeout: 5\n",
    )
    plan = load_plan(path, tmp_path)
    assert plan.goal == "Build it"
    assert [s.id for s in plan.steps] == ["1", "check"]
    assert plan.steps[1].timeout_s == 5
    assert plan.steps[1].explanation == "proves the folder exists"
    assert all(s.status == "pending" and s.attempts == 0 for s in plan.steps)
    assert plan.steps[0].risk in ("safe", "moderate")
    assert plan.steps_added == 0


def test_json_plan_loads(tmp_path: Path) -> None:
    data = {"goal": "g", "steps": [{"id": 7, "description": "d", "command": "true"}]}
    plan = load_plan(write(tmp_path, "plan.json", json.dumps(data)))
    assert plan.steps[0].id == "7"


def test_the_example_plan_is_valid() -> None:
    plan = load_plan(EXAMPLE, EXAMPLE.parent)
    assert len(plan.steps) >= 2


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("goal: g\nsteps:\n  - description: d\n", "steps.0.command: required field is missing"),
        ("goal: g\nsteps:\n  - description: d\n    command: '  '\n", "steps.0.command"),
        ("goal: g\nsteps:\n  - {description: d, command: x, cmd: y}\n", "steps.0.cmd: unknown"),
        ("steps:\n  - {description: d, command: x}\n", "goal: required field is missing"),
        ("goal: g\nsteps: []\n", "steps:"),
        ("goal: g\nsteps:\n  - {description: d, command: x, risk: low}\n", "steps.0.risk"),
        ("goal: g\nsteps:\n  - {description: d, command: x, timeout: -1}\n", "steps.0.timeout"),
        (
            "goal: g\nsteps:\n  - {id: a, description: d, command: x}\n"
            "  - {id: a, description: e, command: y}\n",
            "steps.1.id: repeats the id 'a'",
        ),
        ("- just a list\n", "must be a mapping"),
        ("goal: [unclosed\n", "not valid YAML"),
    ],
)
def test_bad_plans_name_the_field(tmp_path: Path, text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_plan(write(tmp_path, "plan.yaml", text))
    assert expected in str(caught.value)
    assert "plan.yaml" in str(caught.value)


def test_bad_json_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not valid JSON"):
        load_plan(write(tmp_path, "plan.json", "{goal: "))
    with pytest.raises(ConfigError, match="cannot read plan file"):
        load_plan(tmp_path / "nope.yaml")


def test_a_declared_risk_raises_the_level_but_never_lowers_it(tmp_path: Path) -> None:
    plan = plan_from_data(
        {
            "goal": "g",
            "steps": [
                {"description": "d", "command": "echo hi", "risk": "dangerous"},
                {"description": "d", "command": "sudo rm -rf /", "risk": "safe"},
            ],
        },
        tmp_path,
    )
    assert [s.risk for s in plan.steps] == ["dangerous", "dangerous"]
    assert "declared dangerous" in plan.steps[0].risk_reasons


def test_plans_are_values(tmp_path: Path) -> None:
    plan = Plan("g", (Step("a", "d", "true"),))
    changed = plan.with_step("a", status="done")
    assert plan.steps[0].status == "pending"
    assert changed.steps[0].status == "done"
    assert changed.revision == plan.revision + 1
    with pytest.raises(AttributeError):
        plan.steps[0].status = "done"  # type: ignore[misc]
    assert json.loads(json.dumps(changed.to_dict()))["steps"][0]["status"] == "done"

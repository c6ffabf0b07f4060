"""``localhand.run_plan``: plan mode as a library call, and the mode a plan file names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from localhand import run_plan
from localhand.config.settings import Settings
from localhand.errors import ConfigError, ServerUnavailable
from localhand.events import EventBus, EventLog
from localhand.models import ScriptedModel
from localhand.plan import plan_from_data
from plan_helpers import fix

FAILING_THEN_REPAIRED = {
    "goal": "make out/ready",
    "steps": [{"id": "ready", "description": "mark ready", "command": "touch out/ready"}],
}
REPAIR = fix("insert_steps", new_steps=[{"description": "make out/", "command": "mkdir -p out"}])
SETTINGS = Settings(sandbox="off")  # the tests' own commands; the sandbox has its own tests


def test_plan_data_runs_to_a_plan_result_with_its_events(tmp_path: Path) -> None:
    bus, log = EventBus(), EventLog()
    bus.subscribe(log)
    data = {"goal": "greet", "steps": [{"description": "say", "command": "echo hi > hi.txt"}]}
    result = run_plan(data, tmp_path, SETTINGS, bus=bus)
    assert (result.status, result.mode, result.termination_reason) == (
        "pass",
        "planner",
        "completed",
    )
    assert (tmp_path / "hi.txt").read_text() == "hi\n"
    assert [e.type for e in log.events][:2] == ["task_started", "plan_started"]
    assert log.events[-1].type == "task_finished"


def test_the_mode_a_plan_file_names_is_used(tmp_path: Path) -> None:
    (tmp_path / "plan.json").write_text(json.dumps({**FAILING_THEN_REPAIRED, "mode": "agentic"}))
    model = ScriptedModel([REPAIR, "summary"] * 2)
    result = run_plan(tmp_path / "plan.json", tmp_path, SETTINGS, model=model)
    assert (result.mode, result.status, result.steps_added) == ("agentic", "pass", 1)
    assert (tmp_path / "out" / "ready").is_file()


def test_an_explicit_mode_wins_over_the_plan_file(tmp_path: Path) -> None:
    (tmp_path / "plan.json").write_text(json.dumps({**FAILING_THEN_REPAIRED, "mode": "agentic"}))
    result = run_plan(tmp_path / "plan.json", tmp_path, SETTINGS, mode="planner")
    assert (result.mode, result.status, result.steps_added) == ("planner", "fail", 0)


def test_a_drafted_plan_that_is_not_approved_runs_nothing(tmp_path: Path) -> None:
    draft = json.dumps(
        {"goal": "g", "steps": [{"description": "d", "command": "touch drafted.txt"}]}
    )
    seen: list[str] = []
    result = run_plan(
        None,
        tmp_path,
        SETTINGS,
        goal="g",
        model=ScriptedModel([draft]),
        approve_draft=lambda plan: seen.append(plan.steps[0].command) is not None,
    )
    assert (result.status, result.termination_reason) == ("fail", "not_approved")
    assert seen == ["touch drafted.txt"]
    assert not (tmp_path / "drafted.txt").exists()


@pytest.mark.parametrize(
    ("plan", "options", "message"),
    [
        (None, {}, "not both and not neither"),
        ({"goal": "g", "steps": []}, {}, "steps"),
        ({"goal": "g", "steps": [{"description": "d", "command": "true"}]}, {"mode": "x"}, "mode"),
        ({"goal": "g", "mode": "yolo", "steps": []}, {}, "mode"),
    ],
)
def test_bad_input_is_a_config_error_that_says_what(
    tmp_path: Path, plan: object, options: dict, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        run_plan(plan, tmp_path, SETTINGS, **options)  # type: ignore[arg-type]


def test_a_plan_value_is_classified_for_the_workspace_it_runs_in(tmp_path: Path) -> None:
    plan = plan_from_data(
        {"goal": "g", "steps": [{"description": "wipe", "command": "rm -rf ~"}]}, None
    )
    result = run_plan(plan, tmp_path, SETTINGS)  # no approver: a dangerous step is refused
    assert (result.status, result.termination_reason) == ("fail", "refused")


def test_a_model_server_that_fails_mid_plan_ends_it_with_its_reason_and_events(
    tmp_path: Path,
) -> None:
    bus, log = EventBus(), EventLog()
    bus.subscribe(log)
    down = ScriptedModel([ServerUnavailable("nothing answers at http://127.0.0.1:9")] * 3)
    result = run_plan(
        FAILING_THEN_REPAIRED, tmp_path, SETTINGS, mode="agentic", model=down, bus=bus
    )
    # The brain never raises: a server that cannot answer is an abort that says why.
    assert (result.status, result.termination_reason) == ("fail", "aborted")
    assert "nothing answers" in result.output
    assert [s["status"] for s in result.steps] == ["failed"]
    assert [e.type for e in log.events][-2:] == ["plan_cancelled", "task_finished"]

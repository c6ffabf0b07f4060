"""Plan mutations are pure: each returns a new plan and leaves the old one as it was."""

from __future__ import annotations

from pathlib import Path

import pytest

from localhand.plan import (
    MAX_ADDED_STEPS,
    Plan,
    PlanMutationError,
    ProtoStep,
    Step,
    StepBudgetExceeded,
    insert_before,
    replace_command,
)

PLAN = Plan("goal", (Step("a", "first", "true"), Step("b", "second", "true")))
FIX = [ProtoStep("make dir", "mkdir -p out"), ProtoStep("touch", "touch out/x")]


def test_insert_before_puts_steps_right_before_the_step() -> None:
    new = insert_before(PLAN, "b", FIX[:1])
    assert [s.id for s in new.steps] == ["a", "fix-1", "b"]
    new = insert_before(new, "a", FIX[1:])
    assert [s.id for s in new.steps] == ["fix-2", "a", "fix-1", "b"]
    assert new.steps_added == 2


def test_inserted_ids_never_collide_with_existing_ones() -> None:
    plan = Plan("g", (Step("fix-1", "mine", "true"),))
    new = insert_before(plan, "fix-1", FIX[:1])
    assert len({s.id for s in new.steps}) == 2


def test_inserted_steps_are_classified(tmp_path: Path) -> None:
    new = insert_before(PLAN, "a", [ProtoStep("x", "sudo rm -rf /")], tmp_path)
    assert new.steps[0].risk == "dangerous"
    assert new.steps[0].risk_reasons


def test_replace_command_changes_only_the_command_and_reclassifies(tmp_path: Path) -> None:
    plan = PLAN.with_step("a", attempts=2, status="failed")
    new = replace_command(plan, "a", "sudo rm -rf /", tmp_path)
    step = new.steps[0]
    assert (step.command, step.risk, step.modified) == ("sudo rm -rf /", "dangerous", True)
    assert (step.id, step.description, step.attempts) == ("a", "first", 2)
    assert plan.steps[0].command == "true" and plan.steps[0].risk == "safe"
    back = replace_command(new, "a", "echo ok", tmp_path)
    assert back.steps[0].risk != "dangerous"


def test_the_added_steps_budget_is_exact() -> None:
    plan = PLAN
    for _ in range(MAX_ADDED_STEPS):
        plan = insert_before(plan, "a", [ProtoStep("x", "true")])
    assert plan.steps_added == MAX_ADDED_STEPS == 10
    with pytest.raises(StepBudgetExceeded, match="limit is 10") as caught:
        insert_before(plan, "b", [ProtoStep("x", "true")])
    assert "0 left" in str(caught.value)


def test_an_insertion_larger_than_what_is_left_is_refused_whole() -> None:
    plan = insert_before(PLAN, "a", [ProtoStep("x", "true")] * 3)
    plan = insert_before(plan, "a", [ProtoStep("x", "true")] * 3)
    plan = insert_before(plan, "a", [ProtoStep("x", "true")] * 3)
    with pytest.raises(StepBudgetExceeded, match="refused to insert 2 step"):
        insert_before(plan, "a", FIX)
    assert insert_before(plan, "a", FIX[:1]).steps_added == 10


def test_bad_mutations_say_why() -> None:
    with pytest.raises(PlanMutationError, match="no step with id 'zz'"):
        insert_before(PLAN, "zz", FIX)
    with pytest.raises(PlanMutationError, match="empty"):
        replace_command(PLAN, "a", "   ")
    with pytest.raises(PlanMutationError, match="empty command"):
        insert_before(PLAN, "a", [ProtoStep("x", " ")])
    with pytest.raises(PlanMutationError, match="no steps"):
        insert_before(PLAN, "a", [])

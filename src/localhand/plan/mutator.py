"""Pure plan mutations: each takes a plan and returns a new one, the old one untouched.

The seed's mutator silently did nothing once the added-steps budget was spent, so a repair
vanished without a word. Here going over the budget raises ``StepBudgetExceeded`` with the
reason, and the executor shows it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from localhand.plan.model import Plan, Step, classified

MAX_ADDED_STEPS = 10
"""Steps the model may insert into one plan, in all."""


@dataclass(frozen=True, slots=True)
class ProtoStep:
    """A step the model proposed: no id, status or risk yet."""

    description: str
    command: str


class PlanMutationError(Exception):
    """A mutation that cannot be applied; ``str()`` says why, for people and for the model."""


class StepBudgetExceeded(PlanMutationError):
    pass


def insert_before(
    plan: Plan, step_id: str, protos: Sequence[ProtoStep], workspace: Path | None = None
) -> Plan:
    """``protos`` as new steps right before ``step_id`` (repairs that must run first)."""
    at = _index(plan, step_id)
    if not protos:
        raise PlanMutationError("no steps to insert")
    left = MAX_ADDED_STEPS - plan.steps_added
    if len(protos) > left:
        raise StepBudgetExceeded(
            f"refused to insert {len(protos)} step(s): the plan already has "
            f"{plan.steps_added} added steps and the limit is {MAX_ADDED_STEPS} "
            f"({max(left, 0)} left)"
        )
    for proto in protos:
        if not proto.command.strip():
            raise PlanMutationError("a step to insert has an empty command")
    taken = {step.id for step in plan.steps}
    new_steps = []
    number = plan.steps_added
    for proto in protos:
        number += 1
        step_id = f"fix-{number}"
        while step_id in taken:  # a plan file may already use the name
            step_id += "'"
        taken.add(step_id)
        step = Step(step_id, proto.description.strip(), proto.command.strip(), added=True)
        new_steps.append(classified(step, workspace))
    steps = (*plan.steps[:at], *new_steps, *plan.steps[at:])
    return replace(plan, steps=steps, steps_added=number, revision=plan.revision + 1)


def replace_command(plan: Plan, step_id: str, command: str, workspace: Path | None = None) -> Plan:
    """``step_id`` with ``command``, its risk classified again: a harmless step can become a
    dangerous one, and the approval gate must see that."""
    command = command.strip()
    if not command:
        raise PlanMutationError(f"the new command for step {step_id!r} is empty")
    index = _index(plan, step_id)
    old = plan.steps[index]
    new = classified(replace(old, command=command, modified=True), workspace)
    steps = (*plan.steps[:index], new, *plan.steps[index + 1 :])
    return replace(plan, steps=steps, revision=plan.revision + 1)


def _index(plan: Plan, step_id: str) -> int:
    try:
        return plan.index_of(step_id)
    except KeyError as exc:
        raise PlanMutationError(str(exc.args[0])) from None

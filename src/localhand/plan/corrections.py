"""Corrections in agentic mode: the brain's answer to a failed step, inside the breakers.

Circuit breakers (the seed's names and numbers): ``MAX_RETRIES_PER_STEP`` retries of one
step, then ``agent_stuck`` and the plan is cancelled; ``MAX_TOTAL_CORRECTIONS`` per plan;
``MAX_ADDED_STEPS`` inserted steps (enforced by the mutator, refused with a visible reason);
a ``budget_warning`` with each diagnosis once ``BUDGET_WARNING_RATIO`` or less of the
corrections remain.

What counts as a retry is seed 003's: ``retry`` and ``modify`` run the failed step again
and use one of its retries; ``insert_steps`` puts repair steps before it and runs it again
without using one, since the step itself was not the problem. Insertions are bounded by the
corrections and added-steps breakers instead, so a step that needs several repairs first
is not declared stuck after three of them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from localhand.errors import StopRun
from localhand.events import Event
from localhand.plan import events as ev
from localhand.plan.brain import Brain, Correction
from localhand.plan.memory import RollingMemory
from localhand.plan.model import Plan, Step
from localhand.plan.mutator import (
    MAX_ADDED_STEPS,
    PlanMutationError,
    StepBudgetExceeded,
    insert_before,
    replace_command,
)
from localhand.plan.runstep import StepOutcome
from localhand.plan.stops import PlanStop

MAX_RETRIES_PER_STEP = 3
MAX_TOTAL_CORRECTIONS = 10
BUDGET_WARNING_RATIO = 0.3


@dataclass(frozen=True, slots=True)
class Revision:
    """A correction applied: the plan to go on with, the index of the step to run next, and
    the events that announce the change. The executor emits those once it holds ``plan``, so
    that whatever stops the run while they are being delivered ends it with the new plan."""

    plan: Plan
    next_index: int
    events: tuple[Event, ...] = ()


@dataclass(eq=False)
class Corrections:
    """The brain's corrections of failed steps, counted against the circuit breakers. The
    executor holds one in agentic mode and hands it each failed step (``correct``)."""

    brain: Brain
    memory: RollingMemory
    """What the brain is shown of the steps run so far."""
    workspace: Path
    """Where inserted and changed commands are classified."""
    task_id: str
    emit: Callable[[Event], None]
    used: int = field(default=0, init=False)
    """Corrections asked of the brain so far, against ``MAX_TOTAL_CORRECTIONS``."""

    def correct(self, plan: Plan, index: int, outcome: StepOutcome) -> Revision:
        """Ask the brain about the step at ``index``, which failed with ``outcome``, and apply
        its correction; raises a ``PlanStop`` when a breaker trips or the brain aborts. A
        correction the mutator refuses goes back to the brain."""
        step = plan.steps[index]
        refused = ""
        while True:
            if step.retries >= MAX_RETRIES_PER_STEP:
                why = f"step {step.id} still fails after {MAX_RETRIES_PER_STEP} retries"
                self.emit(
                    ev.AgentStuck(
                        task_id=self.task_id, step_id=step.id, attempts=step.attempts, reason=why
                    )
                )
                raise PlanStop("stuck", why, step_id=step.id)
            if self.used >= MAX_TOTAL_CORRECTIONS:
                raise PlanStop(
                    "max_corrections",
                    f"all {MAX_TOTAL_CORRECTIONS} corrections of the plan are used up",
                    step_id=step.id,
                )
            self.emit(
                ev.AgentThinking(
                    task_id=self.task_id,
                    step_id=step.id,
                    attempt=step.attempts,
                    corrections_used=self.used,
                )
            )
            self._warn_if_low()  # after agent_thinking, in seed 003's order
            note = self._budget_note(plan, step) + refused
            correction = self.brain.diagnose(plan, step, outcome, self.memory.to_text(), note)
            if isinstance(self.brain.last_error, StopRun):
                raise self.brain.last_error  # a guardrail refused the call: end with its reason
            self.used += 1
            try:
                return self._apply(plan, index, step, correction)
            except PlanMutationError as exc:
                if isinstance(exc, StepBudgetExceeded):
                    self._warn("added_steps", plan.steps_added, MAX_ADDED_STEPS, str(exc))
                refused = f"\nYour last correction was refused: {exc}. Choose another action."

    def _apply(self, plan: Plan, index: int, step: Step, fix: Correction) -> Revision:
        if fix.action == "abort":
            raise PlanStop("aborted", f"the agent aborted the plan: {fix.reason}", step_id=step.id)
        if fix.action == "skip":
            skipped = plan.with_step(step.id, status="skipped", error=f"skipped: {fix.reason}")
            event = ev.StepSkipped(task_id=self.task_id, step_id=step.id, reason=fix.reason)
            return Revision(skipped, index + 1, (event,))
        if fix.action == "insert_steps":
            repaired = insert_before(plan, step.id, fix.new_steps, self.workspace)
            revised = self._plan_revised(repaired, "insert_steps", _with_dropped(fix))
            return Revision(repaired, index, (revised,))  # the first repair step is at index
        if fix.action == "modify":
            assert fix.new_command is not None  # the brain guarantees it
            modified = self._retried(plan, step, fix.new_command)
            return Revision(modified, index, (self._plan_revised(modified, "modify", fix.reason),))
        changed = fix.new_command is not None and fix.new_command != step.command
        retried = self._retried(plan, step, fix.new_command if changed else None)
        events: list[Event] = []
        if changed:
            events.append(self._plan_revised(retried, "retry", fix.reason))
        events.append(
            ev.RetryAttempt(
                task_id=self.task_id,
                step_id=step.id,
                retry=step.retries + 1,
                max_retries=MAX_RETRIES_PER_STEP,
                command=retried.steps[index].command,
                reason=fix.reason,
                new_command=changed,
            )
        )
        return Revision(retried, index, tuple(events))

    def _retried(self, plan: Plan, step: Step, command: str | None) -> Plan:
        """``plan`` with one more of ``step``'s retries used, and ``command`` as its command
        when given (classified again by the mutator)."""
        if command is not None:
            plan = replace_command(plan, step.id, command, self.workspace)
        return plan.with_step(step.id, retries=step.retries + 1)

    def _plan_revised(self, plan: Plan, action: str, reason: str) -> ev.PlanRevised:
        return ev.PlanRevised(
            task_id=self.task_id, plan=plan.to_dict(), action=action, reason=reason
        )

    def _warn_if_low(self) -> None:
        left = MAX_TOTAL_CORRECTIONS - self.used
        if left <= MAX_TOTAL_CORRECTIONS * BUDGET_WARNING_RATIO:
            message = f"{left} of {MAX_TOTAL_CORRECTIONS} corrections left"
            self._warn("corrections", self.used, MAX_TOTAL_CORRECTIONS, message)

    def _warn(self, budget: str, used: int, limit: int, message: str) -> None:
        warning = ev.BudgetWarning(
            task_id=self.task_id, budget=budget, used=used, limit=limit, message=message
        )
        self.emit(warning)

    def _budget_note(self, plan: Plan, step: Step) -> str:
        return (
            f"Limits: {MAX_RETRIES_PER_STEP - step.retries} retries (retry or modify) left "
            f"for this step, {MAX_TOTAL_CORRECTIONS - self.used} corrections "
            f"left for the plan, {MAX_ADDED_STEPS - plan.steps_added} steps may still "
            "be inserted (inserting steps uses none of the step's retries)."
        )


def _with_dropped(fix: Correction) -> str:
    if not fix.dropped_steps:
        return fix.reason
    return f"{fix.reason} ({fix.dropped_steps} more proposed step(s) dropped: at most 3)"

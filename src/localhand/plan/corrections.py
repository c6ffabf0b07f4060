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
from localhand.plan.stops import Aborted, CorrectionsExhausted, Stuck

MAX_RETRIES_PER_STEP = 3
MAX_TOTAL_CORRECTIONS = 10
BUDGET_WARNING_RATIO = 0.3


class Corrections:
    """The executor's agentic half, kept apart so the loop stays short. Each method returns
    the index of the step to run next, or raises a ``PlanStop``."""

    plan: Plan
    brain: Brain | None
    memory: RollingMemory
    workspace: Path
    task_id: str
    corrections_used: int
    _outcome: StepOutcome

    def emit(self, event: Event) -> None:
        raise NotImplementedError

    def update(self, step_id: str, **changes: object) -> Step:
        raise NotImplementedError

    def correct(self, index: int) -> int:
        """Ask the brain about the failed step at ``index`` and apply its correction; returns
        the index to run next. A correction the mutator refuses goes back to the brain."""
        assert self.brain is not None
        step = self.plan.steps[index]
        refused = ""
        while True:
            if step.retries >= MAX_RETRIES_PER_STEP:
                why = f"step {step.id} still fails after {MAX_RETRIES_PER_STEP} retries"
                self.emit(
                    ev.AgentStuck(
                        task_id=self.task_id, step_id=step.id, attempts=step.attempts, reason=why
                    )
                )
                raise Stuck(why, step_id=step.id)
            if self.corrections_used >= MAX_TOTAL_CORRECTIONS:
                raise CorrectionsExhausted(
                    f"all {MAX_TOTAL_CORRECTIONS} corrections of the plan are used up",
                    step_id=step.id,
                )
            self.emit(
                ev.AgentThinking(
                    task_id=self.task_id,
                    step_id=step.id,
                    attempt=step.attempts,
                    corrections_used=self.corrections_used,
                )
            )
            self.warn_if_low()  # after agent_thinking, in seed 003's order
            note = self.budget_note(step) + refused
            correction = self.brain.diagnose(
                self.plan, step, self._outcome, self.memory.to_text(), note
            )
            if isinstance(self.brain.last_error, StopRun):
                raise self.brain.last_error  # a guardrail refused the call: end with its reason
            self.corrections_used += 1
            try:
                return self.apply(index, step, correction)
            except PlanMutationError as exc:
                if isinstance(exc, StepBudgetExceeded):
                    self.emit(
                        ev.BudgetWarning(
                            task_id=self.task_id,
                            budget="added_steps",
                            used=self.plan.steps_added,
                            limit=MAX_ADDED_STEPS,
                            message=str(exc),
                        )
                    )
                refused = f"\nYour last correction was refused: {exc}. Choose another action."

    def apply(self, index: int, step: Step, fix: Correction) -> int:
        if fix.action == "abort":
            raise Aborted(f"the agent aborted the plan: {fix.reason}", step_id=step.id)
        if fix.action == "skip":
            self.update(step.id, status="skipped", error=f"skipped: {fix.reason}")
            self.emit(ev.StepSkipped(task_id=self.task_id, step_id=step.id, reason=fix.reason))
            return index + 1
        if fix.action == "insert_steps":
            self.revise(
                insert_before(self.plan, step.id, fix.new_steps, self.workspace),
                "insert_steps",
                _with_dropped(fix),
            )
            return index  # the first repair step now sits at ``index``
        if fix.action == "modify":
            assert fix.new_command is not None  # the brain guarantees it
            self.revise(self.retried(step, fix.new_command), "modify", fix.reason)
            return index
        changed = fix.new_command is not None and fix.new_command != step.command
        if changed:
            self.revise(self.retried(step, fix.new_command), "retry", fix.reason)
        else:
            self.plan = self.retried(step, None)
        self.emit(
            ev.RetryAttempt(
                task_id=self.task_id,
                step_id=step.id,
                retry=step.retries + 1,
                max_retries=MAX_RETRIES_PER_STEP,
                command=self.plan.steps[index].command,
                reason=fix.reason,
                new_command=changed,
            )
        )
        return index

    def retried(self, step: Step, command: str | None) -> Plan:
        """The plan with one more of ``step``'s retries used, and ``command`` as its command
        when given (classified again by the mutator)."""
        plan = self.plan
        if command is not None:
            plan = replace_command(plan, step.id, command, self.workspace)
        return plan.with_step(step.id, retries=step.retries + 1)

    def warn_if_low(self) -> None:
        left = MAX_TOTAL_CORRECTIONS - self.corrections_used
        if left <= MAX_TOTAL_CORRECTIONS * BUDGET_WARNING_RATIO:
            self.emit(
                ev.BudgetWarning(
                    task_id=self.task_id,
                    budget="corrections",
                    used=self.corrections_used,
                    limit=MAX_TOTAL_CORRECTIONS,
                    message=f"{left} of {MAX_TOTAL_CORRECTIONS} corrections left",
                )
            )

    def budget_note(self, step: Step) -> str:
        return (
            f"Limits: {MAX_RETRIES_PER_STEP - step.retries} retries (retry or modify) left "
            f"for this step, {MAX_TOTAL_CORRECTIONS - self.corrections_used} corrections "
            f"left for the plan, {MAX_ADDED_STEPS - self.plan.steps_added} steps may still "
            "be inserted (inserting steps uses none of the step's retries)."
        )

    def revise(self, plan: Plan, action: str, reason: str) -> None:
        self.plan = plan
        self.emit(
            ev.PlanRevised(task_id=self.task_id, plan=plan.to_dict(), action=action, reason=reason)
        )


def _with_dropped(fix: Correction) -> str:
    if not fix.dropped_steps:
        return fix.reason
    return f"{fix.reason} ({fix.dropped_steps} more proposed step(s) dropped: at most 3)"

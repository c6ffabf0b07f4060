"""The plan executor: a ``while`` loop over a plan held as a value.

Each step passes the approval gate, runs, and is recorded in the rolling memory. Modes:
``teacher`` asks before every step and stops at the first failure; ``planner`` stops at the
first failure; ``agentic`` sends a failed step to the brain, whose correction produces a
*new* plan (the old one is never changed), inside the circuit breakers of the executor's
``Corrections``.
The task's wall clock and token budget apply as in run mode.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from pathlib import Path
from typing import Literal

from localhand.cancel import Cancellation
from localhand.errors import ConfigError
from localhand.events import Event, EventBus
from localhand.models.base import ChatModel
from localhand.plan import events as ev
from localhand.plan.brain import Brain
from localhand.plan.corrections import Corrections
from localhand.plan.gate import ApprovalGate
from localhand.plan.memory import MemoryEntry, RollingMemory, model_condenser
from localhand.plan.metered import MeteredModel
from localhand.plan.model import Plan, Step, classified
from localhand.plan.result import PlanResult, build_result
from localhand.plan.runstep import DEFAULT_STEP_TIMEOUT_S, StepOutcome, run_step_command
from localhand.plan.stops import PlanStop
from localhand.run.guardrails import Limits
from localhand.run.lifecycle import CANCELLED, Outcome, Run
from localhand.safety.approval.approver import ApprovalPolicy, Approver, DenyAll, check_policy
from localhand.types import Prefill, Usage

Mode = Literal["teacher", "planner", "agentic"]
MODES: tuple[str, ...] = ("teacher", "planner", "agentic")
TAIL_CHARS = 2000
CONDENSE_GRACE_S = 3.0
"""How long a finished plan waits for a memory summary already being written, so that its
model call and tokens are in the run before its Result rather than after."""

PLAN_LIMITS = Limits(max_iterations=None, repetition=None, stall_iterations=None)
"""Run mode's iteration, repetition and stall checks mean nothing for a plan; the wall clock
and the token budget do."""


class PlanExecutor:
    """Runs ``plan`` in ``workspace``; ``play()`` hands back the ``Outcome`` of the run (its
    ``PlanResult``, for the session to finish and announce: ``localhand.session.finish``) and
    never raises for anything a step or the model does."""

    def __init__(
        self,
        plan: Plan,
        workspace: str | Path,
        *,
        mode: Mode = "planner",
        model: ChatModel | None = None,
        approver: Approver | None = None,
        policy: ApprovalPolicy = "dangerous",
        limits: Limits | None = None,
        bus: EventBus | None = None,
        task_id: str | None = None,
        memory: RollingMemory | None = None,
        step_timeout_s: float = DEFAULT_STEP_TIMEOUT_S,
        spent: Usage | None = None,
        spent_prefill: Prefill | None = None,
        cancellation: Cancellation | None = None,
    ) -> None:
        if mode not in MODES:
            raise ConfigError(f"unknown mode {mode!r}; use one of {', '.join(MODES)}")
        if mode == "agentic" and model is None:
            raise ConfigError("agentic mode needs a model to diagnose failed steps")
        check_policy(policy)
        self.plan = plan
        self.workspace = Path(workspace).resolve()
        self.mode = mode
        self.limits = limits or PLAN_LIMITS
        self.bus = bus or EventBus()
        self.task_id = task_id or uuid.uuid4().hex[:12]
        self.life = Run(
            self.task_id, self.workspace, self.limits, self.bus, cancellation=cancellation
        )
        self.state = self.life.state
        if spent is not None:  # drafting the plan counts against the budget too
            self.state.tokens_in, self.state.tokens_out = (
                spent.prompt_tokens,
                spent.completion_tokens,
            )
        if spent_prefill is not None:  # and its server figures count in the plan's
            self.state.prefill = replace(spent_prefill)
        self.step_timeout_s = step_timeout_s
        self.model = (
            MeteredModel(model, self.limits, self.state, self.emit, self.task_id)
            if model is not None
            else None
        )
        if memory is None:
            agentic_model = self.model if mode == "agentic" else None
            memory = RollingMemory(model_condenser(agentic_model) if agentic_model else None)
        self.memory = memory
        self.gate = ApprovalGate(approver or DenyAll(), policy, self.emit, self.task_id)
        self.corrections = (
            Corrections(Brain(self.model), memory, self.workspace, self.task_id, self.emit)
            if mode == "agentic" and self.model is not None
            else None
        )
        """Agentic mode's answers to failed steps; None in the other modes, which stop."""
        self._cut_by_clock = False  # the last step's timeout was the wall clock's remainder

    def play(self) -> Outcome[PlanResult]:
        self.life.start(
            self.plan.goal,
            self.model.name if self.model else "",
            max_iterations=len(self.plan.steps),
        )
        self.emit(ev.PlanStarted(task_id=self.task_id, plan=self.plan.to_dict(), mode=self.mode))
        try:
            ending = self.life.drive(
                self.loop,
                done="completed",
                iteration=lambda: self.corrections_used,
                cancelled="cancelled by the user",
            )
        finally:
            self.memory.close()
        if ending.reason != CANCELLED:
            self.memory.wait(CONDENSE_GRACE_S)
        if ending.reason != "completed":
            self.emit(
                ev.PlanCancelled(
                    task_id=self.task_id,
                    reason=ending.message,
                    termination_reason=ending.reason,
                    step_id=getattr(ending.stop, "step_id", None),
                )
            )
        result = build_result(
            self.plan,
            task_id=self.task_id,
            mode=self.mode,
            termination_reason=ending.reason,
            message=ending.message,
            error=ending.error,
            corrections_used=self.corrections_used,
            model_used=self.model.name if self.model else "",
            tokens_in=self.state.tokens_in,
            tokens_out=self.state.tokens_out,
            prefill=replace(self.state.prefill),
            duration_s=self.life.duration_s(),
        )
        return Outcome(self.life, lambda checks: result)  # a plan has no checks

    def loop(self) -> None:
        index = 0
        while index < len(self.plan.steps):
            self.life.check_cancelled()
            self.limits.check_wall_clock(self.state)
            outcome = self.attempt(index)
            if outcome.ok:
                index += 1
                continue
            # A Stop that refused the step waiting for approval (the dashboard's) ends the
            # plan cancelled, as a Stop does anywhere else, not refused.
            self.life.check_cancelled()
            # A step cut off by the wall clock is the wall clock's doing, not the step's,
            # even when the clock read now shows microseconds left (timers fire early).
            if outcome.timed_out and self._cut_by_clock:
                raise self.limits.out_of_time()
            self.limits.check_wall_clock(self.state)
            if self.corrections is None:
                step = self.plan.steps[index]
                reason = "refused" if outcome.refused else "step_failed"
                raise PlanStop(reason, f"step {step.id} {_failure(outcome)}", step_id=step.id)
            revision = self.corrections.correct(self.plan, index, outcome)
            self.plan = revision.plan
            for event in revision.events:  # announced once the new plan is the executor's
                self.emit(event)
            index = revision.next_index

    @property
    def corrections_used(self) -> int:
        """Corrections the brain has made of this plan (none outside agentic mode)."""
        return self.corrections.used if self.corrections is not None else 0

    def attempt(self, index: int) -> StepOutcome:
        """One try of the step at ``index``: the gate, the command, the record of it."""
        step = self.plan.steps[index]  # its command's risk as of now (a declared one: a floor)
        step = classified(step, self.workspace, floor=step.risk)
        step = self.update(
            step.id, risk=step.risk, risk_reasons=step.risk_reasons, attempts=step.attempts + 1
        )
        self.emit(
            ev.StepStarted(
                task_id=self.task_id,
                step_id=step.id,
                index=index,
                description=step.description,
                command=step.command,
                attempt=step.attempts,
                risk=step.risk,
            )
        )
        refusal = self.gate.ask(step, teacher=self.mode == "teacher")
        if refusal is not None:
            outcome = StepOutcome.refusal(refusal)
        else:
            outcome = self.execute(step, self.timeout_for(step))
        status = "done" if outcome.ok else "failed"
        self.update(step.id, status=status, error=None if outcome.ok else _failure(outcome))
        self.memory.add(
            MemoryEntry(
                step.id,
                step.command,
                outcome.ok,
                outcome.exit_code,
                outcome.output[-TAIL_CHARS:],
                note=outcome.refused or "",
            )
        )
        self.emit(
            ev.StepFinished(
                task_id=self.task_id,
                step_id=step.id,
                index=index,
                status=status,
                attempt=step.attempts,
                exit_code=outcome.exit_code,
                output_tail=outcome.output[-TAIL_CHARS:],
                duration_ms=round(outcome.duration_s * 1000),
                timed_out=outcome.timed_out,
                stopped=outcome.stopped,
                refused=outcome.refused,
            )
        )
        return outcome

    def update(self, step_id: str, **changes: object) -> Step:
        self.plan = self.plan.with_step(step_id, **changes)
        return self.plan.step(step_id)

    def execute(self, step: Step, timeout_s: float) -> StepOutcome:
        """Run the step's command (override to run it elsewhere: a container, a test fake)."""
        return run_step_command(step.command, self.workspace, timeout_s)

    def timeout_for(self, step: Step) -> float:
        timeout = step.timeout_s or self.step_timeout_s
        remaining = self.limits.remaining_s(self.state)
        self._cut_by_clock = remaining is not None and remaining < timeout
        return timeout if remaining is None else max(0.1, min(timeout, remaining))

    def emit(self, event: Event) -> None:
        self.bus.emit(event)


def _failure(outcome: StepOutcome) -> str:
    if outcome.refused:
        return f"was refused: {outcome.refused}"
    if outcome.timed_out:
        return "timed out"
    if outcome.stopped:
        return "was stopped"
    return f"failed with exit code {outcome.exit_code}"

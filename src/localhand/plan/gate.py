"""The approval gate every step passes just before it runs, whoever wrote it.

The seed gated only the steps of the original plan: a dangerous command the model inserted
or swapped in ran unasked. Here the command is classified again at the last moment, so a
step's origin makes no difference; teacher mode asks for every step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from localhand.events import ApprovalNeeded, Event
from localhand.plan.model import Step
from localhand.safety.approval.announce import ask_announced
from localhand.safety.approval.approver import ApprovalPolicy, Approver, needs_approval
from localhand.safety.risk.classify import Risk


@dataclass(frozen=True, slots=True)
class ApprovalGate:
    """Asks ``approver`` about the steps ``policy`` (or teacher mode) says need approval."""

    approver: Approver
    policy: ApprovalPolicy
    emit: Callable[[Event], None]
    task_id: str

    def ask(self, step: Step, *, teacher: bool = False) -> str | None:
        """None if ``step`` may run, else why not. Teacher mode asks for every step."""
        risk = Risk(step.risk, step.risk_reasons)
        if not teacher and not needs_approval(risk, self.policy):
            return None
        warning = warning_message(step)
        needed = ApprovalNeeded(
            task_id=self.task_id,
            step_id=step.id,
            command=step.command,
            risk=step.risk,
            reasons=list(step.risk_reasons),
            warning_message=warning,
            description=step.description,
            explanation=step.explanation,
            added_by_agent=step.added or step.modified,
        )
        try:
            approved = ask_announced(self.approver, risk, needed, self.emit)
        except Exception as exc:  # a broken approver refuses; it must not end the plan
            return f"approval failed ({exc}): {warning}"
        if approved:
            return None
        why = self.approver.refusal or "it was not approved"
        return f"not approved ({why}): {warning}"


def warning_message(step: Step) -> str:
    """What a person must know before saying yes, in one line."""
    origin = ""
    if step.added:
        origin = " (a repair step the agent inserted)"
    elif step.modified:
        origin = " (the agent changed this command)"
    if step.risk == "safe":
        return f"step {step.id}{origin} runs `{step.command}`"
    why = "; ".join(f"it {reason}" for reason in step.risk_reasons)
    return f"`{step.command}` is {step.risk}{origin}" + (f": {why}" if why else "")

"""Every approval on the run's timeline: asked (``approval_needed``) and answered
(``approval_decided``), whoever asks (a plan step, the model's command, an MCP tool, a verify
command)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from localhand.events import ApprovalDecided, ApprovalNeeded, Event, EventBus
from localhand.safety.approval.approver import Approver, BaseApprover

if TYPE_CHECKING:
    from localhand.safety.risk.classify import Risk


def ask_announced(
    approver: Approver, risk: Risk, needed: ApprovalNeeded, emit: Callable[[Event], None]
) -> bool:
    """Emits ``needed``, asks ``approver`` about its command, and emits the answer. An
    approver that raises is announced as a no ``by="error"``, and its exception goes on."""
    emit(needed)
    approved, by, reason = False, "error", ""
    try:
        approved = bool(approver.approve(needed.command, risk))
        by, reason = approver.decided_by, "" if approved else approver.reason
    finally:  # a broken approver's no is on the timeline too
        emit(
            ApprovalDecided(
                task_id=needed.task_id,
                step_id=needed.step_id,
                command=needed.command,
                approved=approved,
                by=by,
                reason=reason,
            )
        )
    return approved


class AnnouncedApprover(BaseApprover):
    """Emits ``approval_needed`` (with the warning a person would read) before asking, and
    ``approval_decided`` with the answer and the inner approver's ``decided_by``."""

    def __init__(
        self, inner: Approver, bus: EventBus, task_id: str, *, step_id: str = "run_command"
    ) -> None:
        self.inner = inner
        self.bus = bus
        self.task_id = task_id
        self.step_id = step_id

    def approve(self, command: str, risk: Risk, *, description: str | None = None) -> bool:
        needed = ApprovalNeeded(
            task_id=self.task_id,
            step_id=self.step_id,
            command=command,
            risk=risk.level,
            reasons=list(risk.reasons),
            warning_message=f"{risk.level}: {'; '.join(risk.reasons) or 'needs approval'}",
            description=description or "",
            added_by_agent=self.step_id == "run_command",
        )
        return ask_announced(self.inner, risk, needed, self.bus.emit)

    @property
    def refusal(self) -> str:  # type: ignore[override]  # the inner approver's, as it answered
        """Why the inner approver said no, for the tool result the model reads."""
        return self.inner.refusal

    @property
    def decided_by(self) -> str:  # type: ignore[override]
        return self.inner.decided_by

    @property
    def reason(self) -> str:  # type: ignore[override]
        return self.inner.reason

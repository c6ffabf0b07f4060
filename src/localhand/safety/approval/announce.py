"""One approval on the run's timeline: ``approval_needed`` before the question, and
``approval_decided`` with the answer, whoever asks (a plan step, the model's command, an MCP
call, a verify command)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from localhand.events import ApprovalDecided, ApprovalNeeded, Event

if TYPE_CHECKING:
    from localhand.safety.approval.approver import Approver
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

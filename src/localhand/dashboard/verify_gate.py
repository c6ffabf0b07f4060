"""Verify commands typed into the page are commands like any other: classified, and asked for.

A ``verify`` command from the page runs in the workspace when the run ends. Whoever fills in
the form chooses it, so it gets what a model's ``run_command`` gets: the risk classifier, and
the approval policy (``--approve``, default ``dangerous``). A command the policy wants approved
is asked for on the page before the task starts (the same Approve / Deny flow as the model's
commands, see ``approvals``); if any is denied, times out or the dashboard stops, the task does
not start at all, so a refused command can never run at the end of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from localhand.dashboard.approvals import PageApprover
from localhand.dashboard.workspaces import clip
from localhand.events import ApprovalDecided, ApprovalNeeded, EventBus
from localhand.safety.approval import ApprovalPolicy, needs_approval
from localhand.safety.risk import Risk, classify

STEP_ID = "verify"
"""The ``step_id`` of the approval events, so the page tells them from the model's commands."""


@dataclass(frozen=True, slots=True)
class VerifyCommand:
    """A page-supplied verify command and what the classifier and the policy made of it."""

    command: str
    risk: Risk
    needs_approval: bool


def classify_verify(
    commands: Sequence[str], workspace: Path, policy: ApprovalPolicy
) -> list[VerifyCommand]:
    """Each non-blank command with its risk in ``workspace`` and whether ``policy`` asks."""
    found = []
    for text in commands:
        command = text.strip()
        if command:
            risk = classify(command, workspace)
            found.append(VerifyCommand(command, risk, needs_approval(risk, policy)))
    return found


def ask_for_verify(
    commands: Sequence[VerifyCommand], approver: PageApprover, bus: EventBus, task_id: str
) -> str | None:
    """Ask the page for each command that needs it, announcing each request and answer on the
    run's timeline. None when all may run; otherwise why the task must not start."""
    for item in commands:
        if not item.needs_approval:
            continue
        reasons = list(item.risk.reasons)
        bus.emit(
            ApprovalNeeded(
                task_id=task_id,
                step_id=STEP_ID,
                command=item.command,
                risk=item.risk.level,
                reasons=reasons,
                warning_message=f"{item.risk.level}: {'; '.join(reasons) or 'needs approval'}",
                description="verify command from the page, run when the task ends",
            )
        )
        approved = approver.approve(item.command, item.risk)
        bus.emit(
            ApprovalDecided(
                task_id=task_id,
                step_id=STEP_ID,
                command=item.command,
                approved=approved,
                by=approver.decided_by,
            )
        )
        if not approved:
            return (
                f"verify command {clip(item.command)!r} ({item.risk.level}) was not approved: "
                f"{approver.refusal}. The task did not start and nothing ran"
            )
    return None

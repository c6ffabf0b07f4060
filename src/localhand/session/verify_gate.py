"""Verify commands that arrive from outside the command line are commands like any other.

A verify command runs in the workspace when the run ends. One the user typed with ``--verify``
is the user's say; one that arrives with an MCP client's ``run_task``, in a task file, on a
batch line or from the dashboard's form was chosen by someone else, so it gets what the model's
``run_command`` gets: the risk classifier, the approval policy (``--approve``, default
``dangerous``) asked of the run's approver before the run starts (nobody to ask: refused, and
the run does not start, so a refused command can never run at the end of it), and a
checkpoint of the workspace just before a dangerous one runs (``localhand undo RUN``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localhand.events import clip
from localhand.evidence.verify import Check, CommandCheck
from localhand.safety.approval.announce import AnnouncedApprover
from localhand.safety.approval.approver import ApprovalPolicy, needs_approval
from localhand.types import CheckResult

STEP_ID = "verify"
"""The ``step_id`` of the approval events, so a timeline tells them from the model's commands."""


@dataclass(frozen=True, slots=True)
class CheckpointedCommand(CommandCheck):
    """A dangerous verify command that takes a checkpoint of the workspace before it runs."""

    before: Callable[[str], object] | None = field(default=None, compare=False)

    def run(self, workspace: Path, **how: Any) -> CheckResult:
        if self.before is not None:
            self.before(self.command)
        return CommandCheck.run(self, workspace, **how)


class NotApproved(Exception):
    """A verify command from outside was refused: the run must not start."""


def gate_checks(
    checks: Sequence[Check],
    *,
    own: Sequence[Check],
    workspace: Path,
    policy: ApprovalPolicy,
    approver: AnnouncedApprover,
    checkpoint: Callable[[str], object],
) -> tuple[Check, ...]:
    """``checks`` with each command check that is not one of ``own`` (the user's ``--verify``)
    classified and, when ``policy`` says so, approved; a dangerous one checkpoints before it
    runs. Raises ``NotApproved`` (its message says which and why) at the first refusal."""
    gated: list[Check] = []
    for check in checks:
        if not isinstance(check, CommandCheck) or check in own:
            gated.append(check)
            continue
        from localhand.safety.risk.classify import classify  # only for a command to gate

        risk = classify(check.command, workspace)
        if needs_approval(risk, policy):
            described = "verify command, run when the task ends"
            if not approver.approve(check.command, risk, description=described):
                raise NotApproved(
                    f"verify command {clip(check.command, 120)!r} ({risk.level}) was not approved: "
                    f"{approver.refusal}. The task did not start and nothing ran"
                )
        if risk.level == "dangerous":
            check = CheckpointedCommand(check.command, check.timeout_s, before=checkpoint)
        gated.append(check)
    return tuple(gated)

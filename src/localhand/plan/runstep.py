"""Running one step's command, and what came of it.

``run_shell`` ends whatever the command left running when it returns, so no step inherits
the processes of the one before and nothing outlives the plan.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

DEFAULT_STEP_TIMEOUT_S = 300.0


@dataclass(frozen=True, slots=True)
class StepOutcome:
    """How one try of a step went."""

    ok: bool
    exit_code: int | None = None
    output: str = ""
    timed_out: bool = False
    stopped: bool = False
    """Ended by a Stop (the run's cancel switch): the command was killed before it was done."""
    refused: str | None = None
    """Why the step was not run at all (the approval gate said no), else None."""
    duration_s: float = 0.0

    @classmethod
    def refusal(cls, reason: str) -> StepOutcome:
        return cls(ok=False, output=f"[not run: {reason}]", refused=reason)


def run_step_command(command: str, workspace: Path, timeout_s: float) -> StepOutcome:
    """Run ``command`` with bash in ``workspace`` for at most ``timeout_s`` seconds."""
    from localhand.tools.shell import run_shell  # not at import: the CLI reads the default above

    done = run_shell(command, workspace, timeout_s=max(timeout_s, 0.1))
    output = done.output
    if done.timed_out:
        output += f"\n[timed out after {timeout_s:g} s; the command was killed]"
    elif done.cancelled:
        output += "\n[stopped: the plan was stopped; the command was killed]"
    return StepOutcome(
        ok=done.exit_code == 0 and not (done.timed_out or done.cancelled),
        exit_code=done.exit_code,
        output=output,
        timed_out=done.timed_out,
        stopped=done.cancelled,
        duration_s=done.duration_s,
    )

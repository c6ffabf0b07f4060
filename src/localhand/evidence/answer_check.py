"""The task's checks, run when the model says it is done, before its answer is taken.

Small models finish falsely: they answer "done" before the work is, or claim the tests pass
when they do not (benchmarks/robustness_bench.py: 13 false finishes in 60 noisy runs, none of
them caught by the loop itself). When the task has checks (``--verify``, a task file's
``verify``), an answer is checked first; if some fail, the model is told which and what they
printed, and goes on. Once per change of the workspace: an answer given again with nothing
changed is taken, and the checks at the end grade it as they always did.

Checks whose own files the run changed run against those files as they were before the run
(``localhand.evidence.checkguard``), and the model is told so: a rewritten test earns nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from localhand.evidence.checkguard import CheckGuard
from localhand.evidence.verify import Check, run_checks
from localhand.safety.secrets.scrub import scrub_text
from localhand.types import CheckResult

TAIL_CHARS = 600
"""How much of a failing check's output the model is shown."""

NUDGE_CHECKS_FAIL = (
    "You answered that the task is done, but {count} of the task's checks fail:\n{failures}\n"
    "Fix what they show with the tools, then answer again."
)
NOTE_CHECK_FILES = (
    "You changed the checks' own files ({files}): the checks ran against them as they were "
    "before you started, and changing them cannot make a check pass. Fix the code instead.\n"
)


class AnswerCheck:
    """Whether an answer may be taken now, given the task's ``checks``."""

    def __init__(self, checks: Sequence[Check], workspace: Path) -> None:
        self.checks = list(checks)
        self.workspace = workspace
        self._checked_since_change = False
        self.guard: CheckGuard | None = None
        """Set by the tool loop: runs the checks with their own files as they were."""

    def workspace_changed(self) -> None:
        """Files changed: the next answer is checked again."""
        self._checked_since_change = False

    def objection(self) -> str | None:
        """The nudge for an answer the checks contradict, or ``None`` to take the answer."""
        if not self.checks or self._checked_since_change:
            return None
        self._checked_since_change = True
        changed: list[str] = []
        if self.guard is None:
            results = run_checks(self.checks, self.workspace)
        else:
            results, changed = self.guard.run(self.checks)
        failing = [r for r in results if not r.passed]
        if not failing:
            return None
        failures = "\n".join(_described(result) for result in failing)
        note = NOTE_CHECK_FILES.format(files=", ".join(changed)) if changed else ""
        return note + NUDGE_CHECKS_FAIL.format(count=len(failing), failures=failures)


def _described(result: CheckResult) -> str:
    # What a check printed goes to the model like a tool's output: scrubbed of secrets first.
    tail = scrub_text(result.output_tail.strip()[-TAIL_CHARS:])
    return f"- {result.name}" + (f":\n{tail}" if tail else "")

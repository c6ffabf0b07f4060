"""Verification: grade the workspace when a run ends, however it ends.

Status rule (also in docs/results.md):
- ``pass``: the model gave a final answer and every check passes. With no checks, only an
  answer to a question (the simple path) passes: nothing else was asked of it.
- ``unverified``: a run asked to change the workspace (the tool loop) gave a final answer, but
  there were no checks: the model's word is all there is, and that is not a pass.
- ``partial_pass``: at least one check passes, but the run was forced to stop or some check fails.
- ``fail``: no check passes, or a forced stop with no checks at all (a stop is never evidence
  of work done, and with no checks nothing says otherwise).
- ``error``: the run could not proceed (the model server failed, bad configuration).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from localhand.types import CheckResult, Status

if TYPE_CHECKING:
    from localhand.evidence.reports import Collected
    from localhand.safety.box.sandbox import Sandbox

TAIL_CHARS = 2000


class Check(Protocol):
    """Anything that can grade a workspace."""

    def run(self, workspace: Path) -> CheckResult: ...


@dataclass(frozen=True, slots=True)
class CommandCheck:
    """A command run in the workspace (a test suite, a script, a linter). When it runs a test
    runner localhand knows, it passes on the runner's report (``localhand.evidence.reports``):
    tests ran, none failed, and every test of ``before`` ran and passed; otherwise when it
    exits 0."""

    command: str
    timeout_s: float = 600

    def run(
        self,
        workspace: Path,
        *,
        sandbox: Sandbox | None = None,
        note: str = "",
        before: Collected | None = None,
    ) -> CheckResult:
        """Run it (in ``sandbox``, default the one in force); ``note`` heads its output."""
        from localhand.evidence.reporting import checked  # a check's end: off the start-up path

        done, verdict = checked(
            self.command, workspace, timeout_s=self.timeout_s, sandbox=sandbox, before=before
        )
        tail = note + done.output + (f"\n{verdict.note}" if verdict.note else "")
        return CheckResult(
            name=self.command,
            passed=verdict.passed and not done.timed_out,
            output_tail=tail[-TAIL_CHARS:],
            exit_code=done.exit_code,
            evidence="exit_code" if verdict.tests is None else "report",
            tests=verdict.tests,
        )


@dataclass(frozen=True, slots=True)
class FileExists:
    """Passes when ``path`` (relative to the workspace) exists."""

    path: str

    def run(self, workspace: Path) -> CheckResult:
        target = workspace / self.path
        found = target.exists()
        note = "exists" if found else f"{self.path} does not exist"
        return CheckResult(name=f"file exists: {self.path}", passed=found, output_tail=note)


@dataclass(frozen=True, slots=True)
class FileContains:
    """Passes when the text file at ``path`` contains ``text``."""

    path: str
    text: str

    def run(self, workspace: Path) -> CheckResult:
        name = f"file contains: {self.path} ∋ {self.text!r}"
        target = workspace / self.path
        if not target.is_file():
            return CheckResult(name=name, passed=False, output_tail=f"{self.path} is not a file")
        try:
            content = target.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            return CheckResult(name=name, passed=False, output_tail=f"cannot read: {exc}")
        found = self.text in content
        note = "found" if found else f"{self.text!r} not found in {self.path}"
        return CheckResult(name=name, passed=found, output_tail=note)


def run_checks(
    checks: Sequence[Check], workspace: Path, before: Mapping[str, Collected] | None = None
) -> list[CheckResult]:
    """Run every check, a command check against the tests ``before`` lists for its command;
    a check that crashes counts as failed, with the reason as its output."""
    results = []
    for check in checks:
        try:
            if isinstance(check, CommandCheck) and before is not None:
                results.append(check.run(workspace, before=before.get(check.command)))
            else:
                results.append(check.run(workspace))
        except Exception as exc:  # a broken check must not lose the run's Result
            results.append(CheckResult(name=str(check), passed=False, output_tail=repr(exc)))
    return results


def grade(
    reason: str,
    results: Sequence[CheckResult],
    error: str | None = None,
    *,
    answer_only: bool = False,
) -> Status:
    """The run's status by the rule above. ``answer_only``: the run was asked for an answer,
    not for a change (the simple path), so an answer with no checks is a pass; otherwise a
    final answer needs checks that ran and passed."""
    if error is not None or reason == "error":
        return "error"
    passed = sum(result.passed for result in results)
    if reason == "final_answer" and not results and not answer_only:
        return "unverified"
    if reason == "final_answer" and passed == len(results):
        return "pass"
    return "partial_pass" if passed else "fail"

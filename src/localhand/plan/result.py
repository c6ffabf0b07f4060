"""The Plan Result: what a plan run produced, as one JSON object.

Keys: ``task_id``, ``goal``, ``mode``, ``status`` (``pass`` every step done, ``partial_pass``
completed with skipped steps, ``fail`` stopped early, ``error`` could not start), ``steps``
(each with ``id``, ``description``, its final ``command``, ``status`` ``done`` | ``failed`` |
``skipped`` | ``pending``, ``attempts``, ``retries`` (``retry`` and ``modify``
corrections, which the per-step breaker counts), ``risk``, ``added``, ``modified``, ``error``),
``corrections_used``, ``steps_added``, ``termination_reason`` (``completed``, ``step_failed``,
``refused``, ``aborted``, ``stuck``, ``max_corrections``, ``timeout``, ``budget``,
``cancelled``, ``not_approved``, ``error``), ``output`` (one line for people), ``model_used``,
``tokens_in``, ``tokens_out``, ``prefill`` (the model server's own prefill and cache figures
over the plan's model requests, drafting included: ``types.Prefill``, as in a run's Result),
``duration_s``, ``error``.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from localhand.plan.model import Plan
from localhand.types import Prefill, lean

STEP_KEYS = (
    "id",
    "description",
    "command",
    "status",
    "attempts",
    "retries",
    "risk",
    "added",
    "modified",
)


@dataclass(slots=True)
class PlanResult:
    task_id: str
    goal: str
    mode: str
    status: str
    termination_reason: str
    steps: list[dict[str, Any]] = field(default_factory=list)
    corrections_used: int = 0
    steps_added: int = 0
    output: str = ""
    model_used: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    prefill: Prefill = field(default_factory=Prefill)
    """The server's own prefill and cache figures over the plan's model requests."""
    duration_s: float = 0.0
    error: str | None = None

    @classmethod
    def failed(
        cls, task_id: str, message: str, *, goal: str = "", mode: str = "", reason: str = "error"
    ) -> PlanResult:
        """The PlanResult of a plan that never started: ``Result.failed``'s counterpart."""
        return cls(
            task_id=task_id,
            goal=goal,
            mode=mode,
            status="error",
            termination_reason=reason,
            output=f"error: {message}",
            error=message,
        )

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        return {**data, "prefill": lean(data["prefill"])}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)


def build_result(
    plan: Plan,
    *,
    task_id: str,
    mode: str,
    termination_reason: str,
    message: str = "",
    error: str | None = None,
    **extra: Any,
) -> PlanResult:
    """The result of ``plan`` as it stood when the run ended."""
    steps = [
        {**{key: getattr(step, key) for key in STEP_KEYS}, "error": step.error}
        for step in plan.steps
    ]
    counts = {s: sum(1 for step in plan.steps if step.status == s) for s in ("done", "skipped")}
    if error is not None:
        status = "error"
    elif termination_reason != "completed":
        status = "fail"
    else:
        status = "partial_pass" if counts["skipped"] else "pass"
    summary = f"{counts['done']}/{len(plan.steps)} steps done"
    if counts["skipped"]:
        summary += f", {counts['skipped']} skipped"
    output = f"{termination_reason}: {summary}" + (f" — {message}" if message else "")
    return PlanResult(
        task_id=task_id,
        goal=plan.goal,
        mode=mode,
        status=status,
        termination_reason=termination_reason,
        steps=steps,
        steps_added=plan.steps_added,
        output=output,
        error=error,
        **extra,
    )


def step_failure(e: dict[str, Any]) -> str:
    """Why a step (its ``step_finished``) failed, in the words every door uses: ``stopped``,
    ``timed out`` or ``exit code N`` (a refused step says its refusal)."""
    if e.get("refused"):
        return f"not run: {e['refused']}"
    if e.get("stopped"):
        return "stopped"
    return "timed out" if e.get("timed_out") else f"exit code {e.get('exit_code')}"


def plan_summary(r: dict[str, Any]) -> str:
    """A plan Result's closing line after its status: steps done and skipped, the model's
    corrections, tokens and time (the terminal's, and the editor's); a plan that never ran
    has no steps to count."""
    steps = r.get("steps") or []
    done = sum(1 for step in steps if step["status"] == "done")
    parts = [f"{done}/{len(steps)} steps done"] if steps else []
    skipped = sum(1 for step in steps if step["status"] == "skipped")
    if skipped:
        parts.append(f"{skipped} skipped")
    if r.get("model_used"):
        parts.append(_count(r["corrections_used"], "correction"))
        parts.append(_count(r["steps_added"], "step") + " added")
        parts.append(f"{r['tokens_in']}+{r['tokens_out']} tokens")
    parts.append(f"{r.get('duration_s') or 0:.1f} s")
    return " · ".join(parts)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")

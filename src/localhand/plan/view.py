"""How a plan's step and Result are said, in the words every door uses: the terminal's view
(``localhand.cli.plan_view``) and the editor's (``localhand.acp.presenter``).
"""

from __future__ import annotations

from typing import Any


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

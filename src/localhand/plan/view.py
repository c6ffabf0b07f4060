"""The live terminal view of a plan run: a bus subscriber writing to stderr.

It closes the seed's gap of events emitted but never shown: the agent thinking, retries,
revisions and budget warnings each get a line as they happen.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape

from localhand.events import Event

RISK_STYLE = {"safe": "green", "moderate": "yellow", "dangerous": "bold red"}
STATUS_MARK = {
    "pending": "[dim]·[/]",
    "done": "[green]✓[/]",
    "failed": "[red]✗[/]",
    "skipped": "[yellow]⤼[/]",
}
OUTPUT_LINES = 6


class PlanView:
    """Prints plan events; ``show_plan`` prints a plan (a drafted one, before it runs)."""

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True, highlight=False, soft_wrap=True)

    def __call__(self, event: Event) -> None:
        handler = getattr(self, f"on_{event.type}", None)
        if handler is not None:
            handler(_inert(event.to_dict()))

    def show_plan(self, plan: dict[str, Any], title: str = "Plan") -> None:
        plan = _inert(plan)  # also when called directly, for the drafted plan to approve
        self.console.print(f"[bold]{escape(title)}:[/] {escape(plan['goal'])}")
        for number, step in enumerate(plan["steps"], start=1):
            style = RISK_STYLE.get(step["risk"], "")
            origin = " [magenta](added)[/]" if step.get("added") else ""
            self.console.print(
                f"  {STATUS_MARK.get(step['status'], '·')} {number:>2}. "
                f"[bold]{escape(step['id'])}[/] {escape(step['description'])}{origin}\n"
                f"       [dim]$[/] {escape(step['command'])} [{style}]({step['risk']})[/]"
            )

    def on_plan_started(self, e: dict[str, Any]) -> None:
        self.show_plan(e["plan"], title=f"▶ {e['mode']} mode")

    def on_step_started(self, e: dict[str, Any]) -> None:
        again = f" [dim](attempt {e['attempt']})[/]" if e["attempt"] > 1 else ""
        self.console.print(
            f"[bold]▶ {escape(e['step_id'])}[/] {escape(e['description'])}{again}\n"
            f"  [dim]$[/] {escape(e['command'])}"
        )

    def on_approval_needed(self, e: dict[str, Any]) -> None:
        style = RISK_STYLE.get(e["risk"], "yellow")
        if e.get("explanation"):
            self.console.print(f"  [cyan]ℹ {escape(e['explanation'])}[/]")
        self.console.print(f"  [{style}]⚠ approval needed:[/] {escape(e['warning_message'])}")

    def on_step_finished(self, e: dict[str, Any]) -> None:
        if e["status"] == "done":
            self.console.print(f"  [green]✓ done[/] [dim]({e['duration_ms']} ms)[/]")
            return
        if e["refused"]:
            self.console.print(f"  [red]✗ not run:[/] {escape(e['refused'])}")
            return
        self.console.print(f"  [red]✗ failed[/] ({step_failure(e)}, {e['duration_ms']} ms)")
        lines = [line for line in e["output_tail"].splitlines() if line.strip()]
        for line in lines[-OUTPUT_LINES:]:
            self.console.print(f"    [dim]{escape(line[:200])}[/]")

    def on_hook_ran(self, e: dict[str, Any]) -> None:
        if e["blocked"]:
            ended = "[red]blocked the step[/]"
        elif e["timed_out"]:
            ended = "[yellow]timed out[/]"
        else:
            ended = f"exit {e['exit_code'] if e['exit_code'] is not None else '?'}"
        said = f": {escape(e['output_summary'])}" if e["output_summary"] else ""
        self.console.print(
            f"  [bold]hook {e['hook']}[/] [dim]{escape(e['command'])}[/] → {ended}[dim]{said}[/]"
        )

    def on_agent_thinking(self, e: dict[str, Any]) -> None:
        self.console.print(
            f"  [magenta]… agent diagnosing {escape(e['step_id'])} "
            f"(correction {e['corrections_used'] + 1})[/]"
        )

    def on_retry_attempt(self, e: dict[str, Any]) -> None:
        what = f" as `{escape(e['command'])}`" if e["new_command"] else ""
        self.console.print(
            f"  [magenta]↻ retry {e['retry']}/{e['max_retries']}{what}:[/] {escape(e['reason'])}"
        )

    def on_plan_revised(self, e: dict[str, Any]) -> None:
        self.console.print(f"  [magenta]✎ plan revised ({e['action']}):[/] {escape(e['reason'])}")
        for step in e["plan"]["steps"]:
            if step["status"] == "pending" or step["status"] == "failed":
                mark = "[magenta]+[/]" if step["added"] else " "
                self.console.print(
                    f"    {mark} {escape(step['id'])}: [dim]$[/] {escape(step['command'])}"
                )

    def on_step_skipped(self, e: dict[str, Any]) -> None:
        self.console.print(f"  [yellow]⤼ skipped {escape(e['step_id'])}:[/] {escape(e['reason'])}")

    def on_agent_stuck(self, e: dict[str, Any]) -> None:
        self.console.print(f"  [bold red]■ agent stuck:[/] {escape(e['reason'])}")

    def on_plan_cancelled(self, e: dict[str, Any]) -> None:
        self.console.print(
            f"[bold red]■ plan stopped ({e['termination_reason']}):[/] {escape(e['reason'])}"
        )

    def on_warning(self, e: dict[str, Any]) -> None:
        self.console.print(f"  [yellow]! {escape(e['message'])}[/]")

    on_budget_warning = on_warning  # said as any warning is

    def on_guardrail(self, e: dict[str, Any]) -> None:
        self.console.print(f"  [bold red]■ stopped by {e['guardrail']}:[/] {escape(e['reason'])}")

    def on_task_finished(self, e: dict[str, Any]) -> None:
        r = e["result"]
        colour = {"pass": "green", "partial_pass": "yellow"}.get(r["status"], "red")
        self.console.print(
            f"[bold {colour}]■ {r['status']}[/] ({r['termination_reason']}) · {plan_summary(r)}"
        )
        if r["error"]:
            self.console.print(f"[bold red]error:[/] {escape(r['error'])}")


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


def _inert(data: Any) -> Any:
    """``data`` with every string shown inert (``approval.escape``, newlines kept): the
    plan's commands and reasons are the model's, and are shown for approval."""
    from localhand.safety.approval.approver import escape  # as approvals show text

    if isinstance(data, str):
        return "\n".join(escape(line) for line in data.split("\n"))
    if isinstance(data, dict):
        return {key: _inert(value) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [_inert(value) for value in data]
    return data

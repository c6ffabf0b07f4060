"""The live terminal view of a plan run (and ``localhand show``'s, for one): the loop's view
(``localhand.cli.view``) with plan mode's lines added.

It closes the seed's gap of events emitted but never shown: the agent thinking, retries,
revisions and budget warnings each get a line as they happen. Warnings, stops, hooks, the
model's status (``-v``), ``-q`` and the closing lines are the loop's view's own, so a plan
run and a loop run say them alike.
"""

from __future__ import annotations

from typing import Any

from rich.markup import escape

from localhand.cli.lines import hook_line
from localhand.cli.printable import printable_data
from localhand.cli.view import TerminalView
from localhand.events import Event
from localhand.plan.result import plan_summary, step_failure

RISK_STYLE = {"safe": "green", "moderate": "yellow", "dangerous": "bold red"}
STATUS_MARK = {
    "pending": "[dim]·[/]",
    "done": "[green]✓[/]",
    "failed": "[red]✗[/]",
    "skipped": "[yellow]⤼[/]",
}
OUTPUT_LINES = 6
SHOWN = frozenset(
    {
        "plan_started", "step_started", "approval_needed", "step_finished", "hook_ran",
        "agent_thinking", "retry_attempt", "plan_revised", "step_skipped", "agent_stuck",
        "plan_cancelled", "warning", "budget_warning", "guardrail", "model_status",
        "task_finished",
    }
)  # fmt: skip
"""The events a plan run shows: the model's own requests and replies (its corrections) are
said by the plan's lines, and nothing is awaited on a line of its own."""


class PlanView(TerminalView):
    """Prints plan events; ``show_plan`` prints a plan (a drafted one, before it runs)."""

    def __call__(self, event: Event) -> None:
        if event.type in SHOWN:
            super().__call__(event)

    def show_plan(self, plan: dict[str, Any], title: str = "Plan") -> None:
        plan = printable_data(plan)  # also when called directly, for the drafted plan to approve
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
        self.line(hook_line(e))  # the loop's line; a step awaits no running line after it

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

    on_budget_warning = TerminalView.on_warning  # said as any warning is

    def on_task_finished(self, e: dict[str, Any]) -> None:
        self.finished(e["result"], plan_summary(e["result"]))

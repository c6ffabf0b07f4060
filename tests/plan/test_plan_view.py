"""The live view prints every plan event; a handler that broke would vanish silently (the bus
swallows subscriber errors), so each one is exercised here."""

from __future__ import annotations

import io
import json
from pathlib import Path

from rich.console import Console

from localhand.cli.plan_view import PlanView
from localhand.events import ApprovalNeeded, EventBus, Guardrail, TaskFinished, Warning
from localhand.models import ScriptedModel
from localhand.plan import PlanExecutor, RollingMemory, plan_from_data
from localhand.plan import events as ev
from localhand.session.finish import finish

PLAN = {
    "goal": "Ship [it]",
    "steps": [{"id": "a", "description": "d", "command": "echo '[red]x[/]'", "risk": "safe"}],
}


def view() -> tuple[PlanView, io.StringIO]:
    out = io.StringIO()
    return PlanView(Console(file=out, width=200, no_color=True)), out


def test_every_plan_event_is_shown(tmp_path: Path) -> None:
    plan = plan_from_data(PLAN, tmp_path).to_dict()
    t = "t1"
    events = [
        ev.PlanStarted(task_id=t, plan=plan, mode="agentic"),
        ev.StepStarted(
            task_id=t, step_id="a", index=0, description="d", command="c", attempt=2, risk="safe"
        ),
        ApprovalNeeded(
            task_id=t,
            step_id="a",
            command="c",
            risk="dangerous",
            reasons=["r"],
            warning_message="WARNED",
            explanation="EXPLAINED",
        ),
        ev.StepFinished(
            task_id=t,
            step_id="a",
            index=0,
            status="failed",
            attempt=1,
            exit_code=3,
            output_tail="line one\nLAST LINE",
            duration_ms=5,
        ),
        ev.StepFinished(
            task_id=t,
            step_id="a",
            index=0,
            status="failed",
            attempt=1,
            exit_code=None,
            output_tail="",
            duration_ms=0,
            refused="NOT APPROVED",
        ),
        ev.StepFinished(
            task_id=t,
            step_id="a",
            index=0,
            status="done",
            attempt=1,
            exit_code=0,
            output_tail="",
            duration_ms=5,
        ),
        ev.AgentThinking(task_id=t, step_id="a", attempt=1, corrections_used=0),
        ev.RetryAttempt(
            task_id=t,
            step_id="a",
            retry=1,
            max_retries=3,
            command="NEWCMD",
            reason="flaky",
            new_command=True,
        ),
        ev.PlanRevised(task_id=t, plan=plan, action="insert_steps", reason="REVISED"),
        ev.StepSkipped(task_id=t, step_id="a", reason="SKIPPED"),
        ev.BudgetWarning(
            task_id=t, budget="corrections", used=7, limit=10, message="3 of 10 corrections left"
        ),
        ev.AgentStuck(task_id=t, step_id="a", attempts=4, reason="STUCK"),
        ev.PlanCancelled(task_id=t, reason="CANCELLED", termination_reason="stuck", step_id="a"),
        Guardrail(task_id=t, guardrail="wall_clock", reason="TOO LONG", iteration=0),
        Warning(task_id=t, message="WARNING"),
    ]
    shown, out = view()
    bus = EventBus()
    bus.subscribe(shown)
    for event in events:
        bus.emit(event)
    assert bus.errors == []
    text = out.getvalue()
    for needle in (
        "Ship [it]", "echo '[red]x[/]'", "attempt 2", "WARNED", "EXPLAINED", "exit code 3",
        "LAST LINE", "NOT APPROVED", "✓ done", "diagnosing a", "retry 1/3", "NEWCMD",
        "REVISED", "SKIPPED", "3 of 10", "STUCK", "CANCELLED", "TOO LONG", "WARNING",
    ):  # fmt: skip
        assert needle in text, needle


def test_the_final_line_of_a_real_run(tmp_path: Path) -> None:
    plan = plan_from_data(
        {
            "goal": "g",
            "steps": [
                {"description": "d", "command": "exit 1"},
                {"description": "e", "command": "true"},
            ],
        },
        tmp_path,
    )
    shown, out = view()
    bus = EventBus()
    bus.subscribe(shown)
    model = ScriptedModel([json.dumps({"action": "skip", "reason": "optional"})])
    finish(
        PlanExecutor(
            plan, tmp_path, mode="agentic", model=model, bus=bus, memory=RollingMemory(None)
        ).play()
    )
    assert bus.errors == []
    last = out.getvalue().strip().splitlines()[-1]
    assert "partial_pass" in last
    assert "1/2 steps done · 1 skipped · 1 correction · 0 steps added" in last


def test_a_finished_event_without_a_model_shows_no_token_counts() -> None:
    shown, out = view()
    result = {
        "status": "fail",
        "termination_reason": "step_failed",
        "steps": [],
        "model_used": "",
        "corrections_used": 0,
        "steps_added": 0,
        "tokens_in": 0,
        "tokens_out": 0,
        "duration_s": 0.1,
        "error": None,
    }
    shown(TaskFinished(task_id="t", result=result))
    assert "tokens" not in out.getvalue()
    assert "fail" in out.getvalue()

"""Shared by the plan executor tests: a scripted brain's replies, a fast fake shell, a runner
that records every event, and an approver that records what it was asked (run mode's approval
tests take it too)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from localhand.events import EventBus, EventLog
from localhand.models import ScriptedModel
from localhand.plan import PlanExecutor, PlanResult, RollingMemory, plan_from_data
from localhand.plan.runstep import StepOutcome
from localhand.safety.approval.approver import BaseApprover
from localhand.session.finish import finish


def fix(action: str, **fields: Any) -> str:
    return json.dumps({"action": action, "reason": f"because {action}", **fields})


def nth_run_succeeds(n: int, name: str = "count") -> str:
    """A command that fails until its n-th run."""
    return f"c=$(cat {name} 2>/dev/null || echo 0); c=$((c+1)); echo $c > {name}; [ $c -ge {n} ]"


class QuickShell(PlanExecutor):
    """Runs ``true``, ``exit N``, ``touch F`` and ``test -f F`` without a process, for the
    breaker tests that need many steps (real commands are covered by the other tests)."""

    def execute(self, step: Any, timeout_s: float) -> StepOutcome:
        files: set[str] = self.__dict__.setdefault("files", set())
        verb, _, arg = step.command.partition(" ")
        if verb == "touch":
            files.add(arg)
            ok = True
        elif verb == "test":
            ok = arg.removeprefix("-f ") in files
        else:
            ok = verb in ("true", "echo")
        return StepOutcome(ok=ok, exit_code=0 if ok else 1, output="" if ok else "nope")


def run_plan(
    workspace: Path,
    steps: list[tuple[str, str]],
    replies: list[Any] = (),  # type: ignore[assignment]
    *,
    mode: str = "agentic",
    executor: type[PlanExecutor] = PlanExecutor,
    **options: Any,
) -> tuple[PlanResult, EventLog, ScriptedModel]:
    plan = plan_from_data(
        {
            "goal": "the goal",
            "steps": [{"id": i, "description": i, "command": c} for i, c in steps],
        },
        workspace,
    )
    model = ScriptedModel(list(replies))
    log, bus = EventLog(), EventBus()
    bus.subscribe(log)
    if "memory" not in options:
        options["memory"] = RollingMemory(None)  # no condensing: the script is the brain's
    played = executor(plan, workspace, mode=mode, model=model, bus=bus, **options).play()  # type: ignore[arg-type]
    result = finish(played)
    assert not bus.errors
    return result, log, model


def types(log: EventLog) -> list[str]:
    return [e.type for e in log.events]


def step(result: PlanResult, step_id: str) -> dict[str, Any]:
    return next(s for s in result.steps if s["id"] == step_id)


class Recording(BaseApprover):
    """An approver that answers the same every time and remembers what it was asked."""

    def __init__(self, answer: bool) -> None:
        self.answer = answer
        self.asked: list[tuple[str, str]] = []

    def approve(self, command: str, risk: Any) -> bool:
        self.asked.append((command, risk.level))
        return self.answer

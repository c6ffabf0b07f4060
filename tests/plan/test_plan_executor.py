"""The plan executor with a scripted brain: every correction action, the modes, and the
rolling memory condensing in the background."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from localhand.errors import ConfigError
from localhand.events import EventBus, EventLog
from localhand.models import ScriptedModel
from localhand.plan import PlanExecutor, RollingMemory, plan_from_data
from localhand.session.finish import finish
from plan_helpers import QuickShell, Recording, fix, nth_run_succeeds, run_plan, step, types

# -- a plan that works ---------------------------------------------------------------------


def test_a_plan_that_works_runs_every_step_in_order(tmp_path: Path) -> None:
    result, log, model = run_plan(tmp_path, [("a", "echo one > f"), ("b", "grep one f")])
    assert (result.status, result.termination_reason) == ("pass", "completed")
    assert [s["status"] for s in result.steps] == ["done", "done"]
    assert [s["attempts"] for s in result.steps] == [1, 1]
    assert model.calls == []
    assert types(log) == [
        "task_started",
        "plan_started",
        "step_started",
        "step_finished",
        "step_started",
        "step_finished",
        "task_finished",
    ]
    assert all(e.task_id == result.task_id and e.ts > 0 for e in log.events)
    json.dumps([e.to_dict() for e in log.events])  # every event is JSON as it stands
    assert log.of_type("task_finished")[0].result == result.to_dict()


# -- every correction action ---------------------------------------------------------------


def test_retry_runs_the_same_step_again(tmp_path: Path) -> None:
    result, log, model = run_plan(tmp_path, [("flaky", nth_run_succeeds(2))], [fix("retry")])
    assert result.status == "pass"
    assert step(result, "flaky")["attempts"] == 2
    (retry,) = log.of_type("retry_attempt")
    assert (retry.step_id, retry.retry, retry.new_command) == ("flaky", 1, False)
    assert result.corrections_used == 1
    assert "agent_thinking" in types(log)
    assert model.remaining == 0


def test_retry_with_a_new_command_runs_that_command(tmp_path: Path) -> None:
    result, log, _ = run_plan(tmp_path, [("s", "exit 1")], [fix("retry", new_command="echo ok")])
    assert result.status == "pass"
    assert step(result, "s")["command"] == "echo ok"
    assert log.of_type("retry_attempt")[0].new_command is True
    assert log.of_type("plan_revised")[0].plan["steps"][0]["command"] == "echo ok"


def test_modify_replaces_the_command_and_emits_the_whole_plan(tmp_path: Path) -> None:
    result, log, _ = run_plan(
        tmp_path,
        [("read", "cat missing.txt"), ("after", "true")],
        [fix("modify", new_command="echo fixed > missing.txt && cat missing.txt")],
    )
    assert result.status == "pass"
    assert step(result, "read")["modified"] is True
    assert step(result, "read")["attempts"] == 2
    (revised,) = log.of_type("plan_revised")
    assert revised.action == "modify"
    assert [s["id"] for s in revised.plan["steps"]] == ["read", "after"]
    assert revised.plan["steps"][0]["command"].startswith("echo fixed")


def test_insert_steps_runs_the_repair_first_then_the_failed_step(tmp_path: Path) -> None:
    repair = [{"description": "create the flag", "command": "touch ready.txt"}]
    result, log, _ = run_plan(
        tmp_path,
        [("prep", "true"), ("check", "test -f ready.txt"), ("end", "true")],
        [fix("insert_steps", new_steps=repair)],
    )
    assert result.status == "pass"
    assert [(s["id"], s["status"]) for s in result.steps] == [
        ("prep", "done"),
        ("fix-1", "done"),
        ("check", "done"),
        ("end", "done"),
    ]
    assert step(result, "fix-1")["added"] is True
    assert result.steps_added == 1
    (revised,) = log.of_type("plan_revised")
    assert revised.action == "insert_steps"
    assert [s["id"] for s in revised.plan["steps"]] == ["prep", "fix-1", "check", "end"]
    started = [e.step_id for e in log.of_type("step_started")]
    assert started == ["prep", "check", "fix-1", "check", "end"]


def test_skip_moves_on_and_the_result_is_a_partial_pass(tmp_path: Path) -> None:
    result, log, _ = run_plan(
        tmp_path, [("optional", "exit 3"), ("next", "true")], [fix("skip", reason="not needed")]
    )
    assert (result.status, result.termination_reason) == ("partial_pass", "completed")
    assert [s["status"] for s in result.steps] == ["skipped", "done"]
    (skipped,) = log.of_type("step_skipped")
    assert (skipped.step_id, skipped.reason) == ("optional", "not needed")


def test_abort_cancels_the_plan(tmp_path: Path) -> None:
    result, log, _ = run_plan(
        tmp_path, [("bad", "exit 1"), ("never", "touch never.txt")], [fix("abort", reason="no")]
    )
    assert (result.status, result.termination_reason) == ("fail", "aborted")
    assert [s["status"] for s in result.steps] == ["failed", "pending"]
    assert not (tmp_path / "never.txt").exists()
    (cancelled,) = log.of_type("plan_cancelled")
    assert (cancelled.termination_reason, cancelled.step_id) == ("aborted", "bad")
    assert "no" in cancelled.reason


def test_a_brain_reply_that_is_not_json_aborts_with_the_reason(tmp_path: Path) -> None:
    result, log, _ = run_plan(
        tmp_path, [("bad", "exit 1")], ["I would look at the logs, they usually help."]
    )
    assert result.termination_reason == "aborted"
    assert "not valid JSON" in log.of_type("plan_cancelled")[0].reason
    assert "not valid JSON" in result.output


# -- modes ---------------------------------------------------------------------------------


def test_planner_mode_stops_at_the_first_failure_without_asking_the_model(tmp_path: Path) -> None:
    result, log, model = run_plan(
        tmp_path, [("a", "true"), ("b", "exit 4"), ("c", "touch c")], mode="planner"
    )
    assert (result.status, result.termination_reason) == ("fail", "step_failed")
    assert [s["status"] for s in result.steps] == ["done", "failed", "pending"]
    assert "exit code 4" in result.output
    assert model.calls == []
    assert "agent_thinking" not in types(log)
    assert not (tmp_path / "c").exists()


def test_teacher_mode_asks_before_every_step(tmp_path: Path) -> None:
    approver = Recording(True)
    result, log, _ = run_plan(
        tmp_path, [("a", "true"), ("b", "true")], mode="teacher", approver=approver, policy="never"
    )
    assert result.status == "pass"
    assert [c for c, _ in approver.asked] == ["true", "true"]
    assert len(log.of_type("approval_needed")) == 2


def test_teacher_mode_runs_nothing_the_user_declines(tmp_path: Path) -> None:
    result, _, _ = run_plan(tmp_path, [("a", "touch a")], mode="teacher", approver=Recording(False))
    assert (result.status, result.termination_reason) == ("fail", "refused")
    assert not (tmp_path / "a").exists()


def test_bad_executor_settings_are_config_errors(tmp_path: Path) -> None:
    plan = plan_from_data({"goal": "g", "steps": [{"description": "d", "command": "true"}]})
    with pytest.raises(ConfigError, match="unknown mode 'wild'"):
        PlanExecutor(plan, tmp_path, mode="wild")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="needs a model"):
        PlanExecutor(plan, tmp_path, mode="agentic")
    with pytest.raises(ConfigError, match="approval policy 'sometimes'"):
        PlanExecutor(plan, tmp_path, policy="sometimes")  # type: ignore[arg-type]


# -- rolling memory ------------------------------------------------------------------------


def test_condensing_memory_never_holds_up_the_next_step(tmp_path: Path) -> None:
    release, started = threading.Event(), threading.Event()

    def slow(entries: Any) -> str:
        started.set()
        release.wait(5)
        return "s0 to s2 ran fine"

    memory = RollingMemory(slow)
    seen: list[bool] = []

    def watch(event: Any) -> None:
        if event.type == "step_started" and event.step_id == "s5":
            started.wait(5)  # the condenser is inside its (slow) model call now
        if event.type == "step_finished" and event.step_id == "s5":
            seen.append(memory.condensing)
            release.set()

    plan = plan_from_data(
        {
            "goal": "g",
            "steps": [{"id": f"s{i}", "description": "d", "command": "true"} for i in range(7)],
        },
        tmp_path,
    )
    bus = EventBus()
    bus.subscribe(watch)
    executor = QuickShell(
        plan, tmp_path, mode="agentic", model=ScriptedModel([]), bus=bus, memory=memory
    )
    result = finish(executor.play())
    assert started.is_set()
    # The 6th step ran to its end while the first three were still being condensed: had the
    # executor waited for the summary, `condensing` would be over (or the test deadlocked).
    assert seen == [True]
    assert result.status == "pass"
    assert memory.wait(5)
    assert memory.summaries == ["s0 to s2 ran fine"]


def test_in_agentic_mode_the_model_condenses_the_memory(tmp_path: Path) -> None:
    plan = plan_from_data(
        {"goal": "g", "steps": [{"description": "d", "command": f"echo {i}"} for i in range(5)]},
        tmp_path,
    )
    model = ScriptedModel(["Five echoes ran."])
    log, bus = EventLog(), EventBus()
    bus.subscribe(log)
    executor = QuickShell(plan, tmp_path, mode="agentic", model=model, bus=bus)
    assert finish(executor.play()).status == "pass"
    assert executor.memory.wait(5)
    assert executor.memory.summaries == ["Five echoes ran."]
    assert "echo 0" in model.calls[0].messages[-1]["content"]


def test_planner_mode_never_calls_the_model_for_memory(tmp_path: Path) -> None:
    steps = [(f"s{i}", "true") for i in range(6)]
    result, _, model = run_plan(tmp_path, steps, mode="planner", memory=None, executor=QuickShell)
    assert result.status == "pass"
    assert model.calls == []

"""The plan executor's limits: every circuit breaker at its exact threshold, the approval
gate for steps the model wrote, and the wall clock and token budget as in run mode."""

from __future__ import annotations

from pathlib import Path

from localhand.plan import MAX_RETRIES_PER_STEP, MAX_TOTAL_CORRECTIONS, PlanExecutor, Step
from localhand.plan.runstep import StepOutcome
from localhand.run.guardrails import Limits
from plan_helpers import QuickShell, Recording, fix, nth_run_succeeds, run_plan, step, types

# -- circuit breakers, each at its exact threshold -----------------------------------------


def test_three_retries_are_allowed(tmp_path: Path) -> None:
    result, _, model = run_plan(
        tmp_path, [("s", nth_run_succeeds(MAX_RETRIES_PER_STEP + 1))], [fix("retry")] * 3
    )
    assert result.status == "pass"
    assert step(result, "s")["attempts"] == 4
    assert len(model.calls) == 3


def test_after_three_retries_the_agent_is_stuck_and_the_plan_cancelled(tmp_path: Path) -> None:
    result, log, model = run_plan(tmp_path, [("s", "exit 1")], [fix("retry")] * 5)
    assert result.termination_reason == "stuck"
    assert step(result, "s")["attempts"] == MAX_RETRIES_PER_STEP + 1 == 4
    assert len(model.calls) == 3
    assert len(log.of_type("retry_attempt")) == 3
    (stuck,) = log.of_type("agent_stuck")
    assert (stuck.step_id, stuck.attempts) == ("s", 4)
    assert types(log)[-3:] == ["agent_stuck", "plan_cancelled", "task_finished"]


def test_ten_corrections_are_allowed(tmp_path: Path) -> None:
    steps = [(f"s{i}", "exit 1") for i in range(MAX_TOTAL_CORRECTIONS)]
    result, _, model = run_plan(tmp_path, steps, [fix("skip")] * 10, executor=QuickShell)
    assert (result.status, result.corrections_used) == ("partial_pass", 10)
    assert len(model.calls) == 10


def test_the_eleventh_correction_is_refused_and_the_plan_cancelled(tmp_path: Path) -> None:
    steps = [(f"s{i}", "exit 1") for i in range(MAX_TOTAL_CORRECTIONS + 1)]
    result, log, model = run_plan(tmp_path, steps, [fix("skip")] * 11, executor=QuickShell)
    assert result.termination_reason == "max_corrections"
    assert result.corrections_used == 10
    assert len(model.calls) == 10
    assert step(result, "s10")["status"] == "failed"
    assert log.of_type("plan_cancelled")[0].termination_reason == "max_corrections"


def test_budget_warning_when_thirty_percent_or_less_of_corrections_remain(tmp_path: Path) -> None:
    steps = [(f"s{i}", "exit 1") for i in range(MAX_TOTAL_CORRECTIONS)]
    _, log, _ = run_plan(tmp_path, steps, [fix("skip")] * 10, executor=QuickShell)
    warnings = [e for e in log.of_type("budget_warning") if e.budget == "corrections"]
    # Before the 8th diagnosis 3 of 10 are left (30%): the first warning; 4 left (40%) is none.
    assert [w.used for w in warnings] == [7, 8, 9]
    assert warnings[0].message == "3 of 10 corrections left"
    # Seed 003's order: agent_thinking, then the warning, then the brain's model call.
    thinking = log.of_type("agent_thinking")
    assert log.events[log.events.index(thinking[7]) + 1] is warnings[0]
    assert log.events.index(warnings[0]) > log.events.index(thinking[6])


def test_ten_added_steps_then_inserting_is_refused_with_a_visible_reason(tmp_path: Path) -> None:
    def repair(name: str, extra: int) -> str:
        steps = [{"description": "fix", "command": f"touch {name}"}]
        steps += [{"description": "noop", "command": "true"}] * extra
        return fix("insert_steps", new_steps=steps)

    replies = [
        repair("a", 2),  # 3 added
        repair("b", 2),  # 6
        repair("c", 2),  # 9
        repair("d", 1),  # 11 > 10: refused, back to the brain
        repair("d", 0),  # 10: exactly the limit, accepted
        repair("e", 0),  # 11: refused
        fix("skip"),
    ]
    steps = [(n, f"test -f {n}") for n in "abcde"]
    result, log, model = run_plan(tmp_path, steps, replies, executor=QuickShell)
    assert result.steps_added == 10
    assert [s["status"] for s in result.steps if not s["added"]] == [
        "done",
        "done",
        "done",
        "done",
        "skipped",
    ]
    refused = [e for e in log.of_type("budget_warning") if e.budget == "added_steps"]
    assert len(refused) == 2
    assert "refused to insert 2 step(s)" in refused[0].message
    assert "limit is 10" in refused[1].message
    assert (refused[1].used, refused[1].limit) == (10, 10)
    # The brain hears why its correction was refused.
    assert "refused" in model.calls[4].messages[-1]["content"]
    assert model.remaining == 0


# -- the approval gate ---------------------------------------------------------------------

DANGEROUS = "touch ran.txt || git push --force origin main"  # harmless if it ever ran


def test_an_inserted_dangerous_step_needs_approval_and_is_refused(tmp_path: Path) -> None:
    approver = Recording(False)
    repair = [{"description": "publish", "command": DANGEROUS}]
    result, log, _ = run_plan(
        tmp_path,
        [("check", "test -f ready.txt")],
        [fix("insert_steps", new_steps=repair), fix("abort")],
        approver=approver,
    )
    assert approver.asked == [(DANGEROUS, "dangerous")]
    assert not (tmp_path / "ran.txt").exists()
    (needed,) = log.of_type("approval_needed")
    assert (needed.step_id, needed.risk, needed.added_by_agent) == ("fix-1", "dangerous", True)
    assert "inserted" in needed.warning_message
    assert needed.reasons
    finished = log.of_type("step_finished")[-1]
    assert finished.step_id == "fix-1" and finished.refused
    assert step(result, "fix-1")["status"] == "failed"
    assert result.termination_reason == "aborted"


def test_an_approved_inserted_dangerous_step_runs(tmp_path: Path) -> None:
    approver = Recording(True)
    repair = [{"description": "publish", "command": DANGEROUS}]
    result, _, _ = run_plan(
        tmp_path,
        [("check", "test -f ran.txt")],
        [fix("insert_steps", new_steps=repair)],
        approver=approver,
    )
    assert approver.asked == [(DANGEROUS, "dangerous")]
    assert (tmp_path / "ran.txt").exists()
    assert step(result, "check")["status"] == "done"


def test_a_command_the_model_made_dangerous_needs_approval(tmp_path: Path) -> None:
    approver = Recording(False)
    result, log, _ = run_plan(
        tmp_path,
        [("s", "exit 1")],
        [fix("modify", new_command=DANGEROUS), fix("abort")],
        approver=approver,
    )
    assert approver.asked == [(DANGEROUS, "dangerous")]
    assert not (tmp_path / "ran.txt").exists()
    assert log.of_type("approval_needed")[0].added_by_agent is True
    assert "changed" in log.of_type("approval_needed")[0].warning_message
    assert result.termination_reason == "aborted"


def test_without_an_approver_a_dangerous_step_is_refused_with_its_reason(tmp_path: Path) -> None:
    result, log, _ = run_plan(tmp_path, [("push", DANGEROUS)], mode="planner")
    assert (result.status, result.termination_reason) == ("fail", "refused")
    assert not (tmp_path / "ran.txt").exists()
    assert "dangerous" in log.of_type("plan_cancelled")[0].reason


def test_policy_never_runs_dangerous_steps_unasked(tmp_path: Path) -> None:
    approver = Recording(False)
    run_plan(tmp_path, [("push", DANGEROUS)], mode="planner", approver=approver, policy="never")
    assert approver.asked == []
    assert (tmp_path / "ran.txt").exists()


# -- limits as in run mode -----------------------------------------------------------------


def test_the_wall_clock_cuts_a_step_and_ends_the_plan(tmp_path: Path) -> None:
    limits = Limits(max_iterations=None, wall_clock_s=0.5)
    result, log, _ = run_plan(tmp_path, [("slow", "sleep 10")], mode="planner", limits=limits)
    assert result.termination_reason == "timeout"
    assert result.duration_s < 5
    assert log.of_type("guardrail")[0].guardrail == "wall_clock"


class ClockCutEarly(PlanExecutor):
    """A step whose timer, set to the wall clock's remainder, fires before the clock runs out."""

    def execute(self, step: Step, timeout_s: float) -> StepOutcome:
        return StepOutcome(ok=False, timed_out=True)


def test_a_step_cut_by_the_wall_clock_ends_the_plan_even_if_its_timer_fired_early(
    tmp_path: Path,
) -> None:
    limits = Limits(max_iterations=None, wall_clock_s=600)
    result, _, model = run_plan(
        tmp_path,
        [("slow", "sleep 1000")],
        [fix("retry")],
        executor=ClockCutEarly,
        limits=limits,
        step_timeout_s=1000,
    )
    assert (result.termination_reason, model.calls) == ("timeout", [])


def test_the_token_budget_stops_the_brain_before_it_is_asked(tmp_path: Path) -> None:
    limits = Limits(max_iterations=None, token_budget=10)
    result, _, model = run_plan(tmp_path, [("s", "exit 1")], [fix("retry")], limits=limits)
    assert result.termination_reason == "budget"
    assert model.calls == []


def test_the_brain_s_tokens_are_counted(tmp_path: Path) -> None:
    result, log, _ = run_plan(tmp_path, [("s", nth_run_succeeds(2))], [fix("retry")])
    assert result.tokens_in > 0 and result.tokens_out > 0
    assert len(log.of_type("model_reply")) == 1


# -- what counts as a retry (seed 003): retry and modify do, insert_steps does not -----------


def insert(command: str) -> str:
    """The brain's answer: one repair step running ``command`` before the failed one."""
    return fix("insert_steps", new_steps=[{"description": "repair", "command": command}])


def test_a_step_that_needs_four_inserted_repairs_succeeds_and_the_plan_completes(
    tmp_path: Path,
) -> None:
    check = "test -f a && test -f b && test -f c && test -f d"
    replies = [insert(f"touch {name}") for name in "abcd"]
    result, log, model = run_plan(tmp_path, [("check", check), ("end", "true")], replies)
    assert (result.status, result.termination_reason) == ("pass", "completed")
    assert [(s["id"], s["status"]) for s in result.steps] == [
        ("fix-1", "done"),
        ("fix-2", "done"),
        ("fix-3", "done"),
        ("fix-4", "done"),
        ("check", "done"),
        ("end", "done"),
    ]
    # Five runs of the failed step, none of them a retry: the breaker had nothing to count.
    assert (step(result, "check")["attempts"], step(result, "check")["retries"]) == (5, 0)
    assert (result.corrections_used, result.steps_added) == (4, 4)
    assert [e.step_id for e in log.of_type("step_started")] == [
        "check",
        "fix-1",
        "check",
        "fix-2",
        "check",
        "fix-3",
        "check",
        "fix-4",
        "check",
        "end",
    ]
    assert log.of_type("agent_stuck") == [] and log.of_type("retry_attempt") == []
    assert model.remaining == 0
    # The brain is told that its insertions leave the step's retries alone.
    assert "3 retries (retry or modify) left" in model.calls[3].messages[-1]["content"]


def test_after_insertions_the_step_still_has_its_three_retries(tmp_path: Path) -> None:
    replies = [insert("true"), insert("true"), *[fix("retry")] * 4]
    result, log, model = run_plan(tmp_path, [("s", "exit 1")], replies, executor=QuickShell)
    assert result.termination_reason == "stuck"
    assert (step(result, "s")["attempts"], step(result, "s")["retries"]) == (6, 3)
    assert [e.retry for e in log.of_type("retry_attempt")] == [1, 2, 3]
    assert log.of_type("agent_stuck")[0].attempts == 6
    assert len(model.calls) == 5  # the fourth retry was never asked for


def test_modify_uses_one_of_the_step_s_retries(tmp_path: Path) -> None:
    replies = [fix("modify", new_command=f"exit {n}") for n in (2, 3, 4, 5)]
    result, log, model = run_plan(tmp_path, [("s", "exit 1")], replies, executor=QuickShell)
    assert result.termination_reason == "stuck"
    assert (step(result, "s")["attempts"], step(result, "s")["retries"]) == (4, 3)
    assert step(result, "s")["command"] == "exit 4"
    # Every revised plan already carries the retry it used.
    assert [e.plan["steps"][0]["retries"] for e in log.of_type("plan_revised")] == [1, 2, 3]
    assert len(model.calls) == 3


def test_endless_insertions_end_at_the_corrections_and_added_steps_breakers(
    tmp_path: Path,
) -> None:
    # Before seed 003's counting, this plan was `stuck` after the third insertion.
    replies = [insert("true")] * (MAX_TOTAL_CORRECTIONS + 1)
    result, log, model = run_plan(tmp_path, [("s", "test -f never")], replies, executor=QuickShell)
    assert result.termination_reason == "max_corrections"
    assert (result.corrections_used, result.steps_added) == (MAX_TOTAL_CORRECTIONS, 10)
    assert (step(result, "s")["attempts"], step(result, "s")["retries"]) == (11, 0)
    assert log.of_type("agent_stuck") == []
    assert len(model.calls) == MAX_TOTAL_CORRECTIONS

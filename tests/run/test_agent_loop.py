"""The ReAct loop driven by a scripted model: every way a run can end, and what it records."""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import pytest

from localhand import Agent
from localhand.errors import ModelNotFound
from localhand.events import EventBus, EventLog
from localhand.evidence.verify import CommandCheck
from localhand.models.scripted import ScriptedModel, call
from localhand.run.guardrails import Limits
from localhand.types import Reply, ToolCall
from workspaces import BUGGY, CHECK, workspace_with


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    return workspace_with(tmp_path, {"calc.py": BUGGY, "check_calc.py": CHECK})


def make_agent(model: ScriptedModel, workspace: Path, **kwargs) -> tuple[Agent, EventLog]:
    bus = EventBus()
    log = EventLog()
    bus.subscribe(log)
    return Agent(model, workspace, bus=bus, **kwargs), log


FIX_SCRIPT = [
    call("read_file", path="calc.py"),
    call("edit_file", path="calc.py", old_text="return a - b", new_text="return a + b"),
    call("run_command", command="python3 check_calc.py"),
    "Fixed add() in calc.py: it subtracted. check_calc.py passes.",
]


def test_fixes_the_bug_and_passes_verification(demo: Path) -> None:
    model = ScriptedModel(FIX_SCRIPT)
    agent, log = make_agent(model, demo, checks=[CommandCheck("python3 check_calc.py")])

    result = agent.run("Fix the bug in calc.py so check_calc.py passes")

    assert (demo / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    assert result.status == "pass"
    assert result.termination_reason == "final_answer"
    assert result.iterations_used == 4
    assert result.files_modified == ["calc.py"]
    assert result.output.startswith("Fixed add()")
    assert [c.passed for c in result.verification] == [True]
    assert result.tokens_in > 0 and result.tokens_out > 0
    model.assert_exhausted()
    tool_events = log.of_type("tool_call")
    assert [e.tool_name for e in tool_events] == ["read_file", "edit_file", "run_command"]
    assert all(e.ok for e in tool_events)
    assert [e.iteration for e in tool_events] == [1, 2, 3]
    types = [e.type for e in log.events]
    assert types[0] == "task_started" and types[-1] == "task_finished"
    assert "verification" in types


def test_history_is_append_only_and_tool_results_name_their_tool(demo: Path) -> None:
    model = ScriptedModel(FIX_SCRIPT)
    agent, _ = make_agent(model, demo)
    agent.run("Fix the bug")

    sent = [recorded.messages for recorded in model.calls]
    for earlier, later in itertools.pairwise(sent):
        assert later[: len(earlier)] == earlier, "a request rewrote earlier messages"
    tool_messages = [m for m in sent[-1] if m["role"] == "tool"]
    assert [m["tool_name"] for m in tool_messages] == ["read_file", "edit_file", "run_command"]
    assert "return a - b" in tool_messages[0]["content"]
    assert model.calls[0].tools, "tools must be offered on every request"
    system, user = sent[0][0], sent[0][1]
    assert system["role"] == "system" and "edit_file" in system["content"]
    assert "Fix the bug" in user["content"] and "calc.py" in user["content"]


def test_calls_written_as_json_in_content_are_executed(demo: Path) -> None:
    model = ScriptedModel(
        [
            {"content": '{"name": "read_file", "arguments": {"path": "calc.py"}}'},
            {"content": '<tool_call>\n{"name": "list_directory", "arguments": {}}\n</tool_call>'},
            "Done.",
        ]
    )
    agent, log = make_agent(model, demo)
    result = agent.run("Look around")
    assert [e.tool_name for e in log.of_type("tool_call")] == ["read_file", "list_directory"]
    assert result.termination_reason == "final_answer"


def test_max_iterations_stops_at_the_limit(demo: Path) -> None:
    model = ScriptedModel([call("read_file", path="calc.py", start_line=n) for n in range(1, 9)])
    agent, log = make_agent(model, demo, limits=Limits(max_iterations=5, stall_iterations=None))
    result = agent.run("Read forever")
    assert result.termination_reason == "max_iterations"
    assert result.iterations_used == 5
    assert len(model.calls) == 5
    assert result.status == "fail"
    assert [e.guardrail for e in log.of_type("guardrail")] == ["iterations"]


def test_repetition_stops_on_the_third_identical_round(demo: Path) -> None:
    model = ScriptedModel([call("read_file", path="calc.py")] * 5)
    agent, log = make_agent(model, demo)
    result = agent.run("Loop")
    assert result.termination_reason == "repetition"
    assert result.iterations_used == 3
    assert len(log.of_type("tool_call")) == 2, "the third identical round is not executed"
    (event,) = log.of_type("guardrail")
    assert event.guardrail == "repetition" and "read_file" in event.reason
    results = [m["content"] for m in model.calls[-1].messages if m["role"] == "tool"]
    assert "previous turn" not in results[0]
    assert results[1].endswith("act on the result above, or do something different.]")


def test_stall_counts_from_the_first_modification(demo: Path) -> None:
    edit = call("write_file", path="notes.txt", content="x")
    reads = [call("read_file", path="calc.py", start_line=n) for n in range(1, 9)]
    model = ScriptedModel([reads[0], edit, *reads[1:]])
    agent, log = make_agent(model, demo, limits=Limits(max_iterations=20))
    result = agent.run("Stall")
    # iteration 2 modified a file; iterations 3..7 modified nothing: stop after the 7th
    assert result.termination_reason == "stall"
    assert result.iterations_used == 7
    assert result.files_modified == ["notes.txt"]
    assert [e.guardrail for e in log.of_type("guardrail")] == ["stall"]


def test_a_sed_through_run_command_counts_as_progress(demo: Path) -> None:
    steps = [
        call("run_command", command=f"sed -i 's/a - b/a - b + {n}/' calc.py") for n in range(6)
    ]
    model = ScriptedModel([*steps, "done"])
    agent, _ = make_agent(model, demo, limits=Limits(max_iterations=20, stall_iterations=2))
    result = agent.run("Edit by sed")
    assert result.termination_reason == "final_answer"
    assert result.files_modified == ["calc.py"]


def test_empty_replies_get_two_nudges_then_stop(demo: Path) -> None:
    model = ScriptedModel([call("list_directory", path="."), "", {"content": "  "}, ""])
    agent, log = make_agent(model, demo)
    result = agent.run("Say nothing")
    assert result.termination_reason == "nudge_exhausted"
    assert [e.nudge_number for e in log.of_type("nudge")] == [1, 2]
    nudges = [m for m in model.calls[-1].messages if m["role"] == "user"][1:]
    assert len(nudges) == 2


def test_nudges_count_in_a_row_so_a_model_that_recovers_each_time_finishes(demo: Path) -> None:
    cut = Reply(content='{"name": "read_file", "arguments": {"pa', done_reason="length")
    thinking_only = {"content": "", "thinking": '<tool_call>{"name": "list_directory"}</tool_call>'}
    model = ScriptedModel(
        [
            "",
            call("list_directory"),
            cut,
            call("read_file", path="calc.py"),
            thinking_only,
            call("read_file", path="check_calc.py"),
            {"content": "  "},
            "The bug is in add().",
        ]
    )
    agent, log = make_agent(model, demo)
    result = agent.run("Find the bug")
    assert result.termination_reason == "final_answer", "four nudges, never two in a row"
    assert result.output == "The bug is in add()."
    assert [e.nudge_number for e in log.of_type("nudge")] == [1, 1, 1, 1]
    assert agent.state.nudges_total == 4
    model.assert_exhausted()


def test_a_streak_after_a_recovery_still_stops_after_the_second_nudge(demo: Path) -> None:
    model = ScriptedModel(["", call("list_directory"), "", "", "", "never used"])
    agent, log = make_agent(model, demo)
    result = agent.run("Say nothing")
    assert result.termination_reason == "nudge_exhausted"
    assert result.iterations_used == 5
    assert [e.nudge_number for e in log.of_type("nudge")] == [1, 1, 2]
    (stop,) = log.of_type("guardrail")
    assert stop.reason == (
        "the model gave no usable reply after 2 nudges in a row (1 more earlier in the run)"
    )
    assert len(model.calls) == 5


def test_an_answer_before_any_tool_gets_one_nudge(demo: Path) -> None:
    model = ScriptedModel(["The bug is on line 2.", "The bug is on line 2, really."])
    agent, log = make_agent(model, demo)
    result = agent.run("Fix it")
    assert result.termination_reason == "final_answer"
    assert result.output == "The bug is on line 2, really."
    assert len(log.of_type("nudge")) == 1


READ_CALC = '{"name": "read_file", "arguments": {"path": "calc.py"}}'


def test_thinking_only_call_is_not_executed_but_nudged(demo: Path) -> None:
    model = ScriptedModel(
        [
            {"content": "", "thinking": f"<tool_call>{READ_CALC}</tool_call>"},
            call("read_file", path="calc.py"),
            "ok",
        ]
    )
    agent, log = make_agent(model, demo)
    result = agent.run("Read")
    assert result.termination_reason == "final_answer"
    assert len(log.of_type("tool_call")) == 1
    assert "thinking" in log.of_type("nudge")[0].message


def test_truncated_reply_is_not_executed(demo: Path) -> None:
    cut = Reply(
        content='{"name": "write_file", "arguments": {"path": "big.py", "content": "x = 1',
        done_reason="length",
    )
    model = ScriptedModel([cut, call("list_directory"), "ok"])
    agent, log = make_agent(model, demo)
    result = agent.run("Write")
    assert not (demo / "big.py").exists()
    assert result.termination_reason == "final_answer"
    assert "cut off" in log.of_type("nudge")[0].message


def test_bad_tool_arguments_become_a_result_the_model_can_read(demo: Path) -> None:
    model = ScriptedModel([call("read_file"), call("no_such_tool"), call("list_directory"), "ok"])
    agent, log = make_agent(model, demo)
    result = agent.run("Err")
    assert result.termination_reason == "final_answer"
    oks = [e.ok for e in log.of_type("tool_call")]
    assert oks == [False, False, True]
    tool_messages = [m for m in model.calls[-1].messages if m["role"] == "tool"]
    assert "path" in tool_messages[0]["content"]
    assert "read_file" in tool_messages[1]["content"], "unknown tool lists the available tools"


def test_token_budget_stops_before_the_call_that_would_exceed_it(demo: Path) -> None:
    model = ScriptedModel(
        [call("list_directory", path=".")] + [call("read_file", path="calc.py")] * 3
    )
    agent, log = make_agent(model, demo, limits=Limits(token_budget=1500))
    result = agent.run("Spend")
    assert result.termination_reason == "budget"
    assert result.tokens_in + result.tokens_out <= 1500
    assert [e.guardrail for e in log.of_type("guardrail")] == ["token_budget"]


def test_wall_clock_timeout(demo: Path) -> None:
    def slow(messages):
        time.sleep(0.3)
        return Reply(tool_calls=(ToolCall("list_directory", {"path": "."}),))

    model = ScriptedModel([slow] * 10)
    agent, _ = make_agent(model, demo, limits=Limits(wall_clock_s=0.5, repetition=None))
    result = agent.run("Slow")
    assert result.termination_reason == "timeout"
    assert 1 <= result.iterations_used <= 3


def test_model_error_ends_with_status_error_and_a_message(demo: Path) -> None:
    model = ScriptedModel([ModelNotFound("model 'x' not found: run `ollama pull x`")])
    agent, _ = make_agent(model, demo, checks=[CommandCheck("true")])
    result = agent.run("Anything")
    assert result.status == "error"
    assert result.termination_reason == "error"
    assert "ollama pull x" in result.error
    assert [c.passed for c in result.verification] == [True], "checks run on every exit path"


def test_ctrl_c_cancels_with_a_result(demo: Path) -> None:
    model = ScriptedModel([call("list_directory"), KeyboardInterrupt()])
    agent, _ = make_agent(model, demo)
    result = agent.run("Cancel me")
    assert result.termination_reason == "cancelled"
    assert result.iterations_used == 1


def test_forced_stop_with_a_passing_check_is_partial_pass(demo: Path) -> None:
    model = ScriptedModel([call("read_file", path="calc.py")] * 3)
    checks = [CommandCheck("test -f calc.py"), CommandCheck("python3 check_calc.py")]
    agent, _ = make_agent(model, demo, checks=checks)
    result = agent.run("Loop")
    assert result.termination_reason == "repetition"
    assert result.status == "partial_pass"
    assert [c.passed for c in result.verification] == [True, False]
    assert "AssertionError" in result.verification[1].output_tail


def test_history_is_compacted_once_in_one_block_near_the_window(demo: Path) -> None:
    (demo / "big.txt").write_text("".join(f"line {n} " + "x" * 60 + "\n" for n in range(400)))
    reads = [
        call("read_file", path="big.txt", start_line=n * 50 + 1, end_line=n * 50 + 50)
        for n in range(8)
    ]
    model = ScriptedModel([*reads, "done"])
    model.context_limit = 9000  # tokens; each read adds about 1,300 (estimated)
    agent, log = make_agent(model, demo, limits=Limits(max_iterations=20, stall_iterations=None))
    result = agent.run("Read it all")

    assert result.termination_reason == "final_answer"
    warnings = [e.message for e in log.of_type("warning")]
    compactions = [w for w in warnings if "compacted" in w]
    assert compactions == warnings
    # 9 requests, each read ~1,300 tokens: compacting to half the window leaves room for two
    # more reads, so 3 compactions of 2 results each, never one result per turn.
    assert len(compactions) == 3
    assert all("compacted 2 older tool results" in w for w in compactions)
    sent = [recorded.messages for recorded in model.calls]
    rewrites = sum(1 for a, b in itertools.pairwise(sent) if b[: len(a)] != a)
    assert rewrites == len(compactions), "the history is rewritten only when compacting"
    last_tools = [m["content"] for m in sent[-1] if m["role"] == "tool"]
    assert all("compacted" not in c for c in last_tools[-2:]), "recent results stay whole"
    stubs = [c for c in last_tools if "compacted to save context" in c]
    assert len(stubs) >= 3
    assert all(len(c) < 400 for c in stubs)


def test_context_files_go_into_the_first_message_within_the_jail(demo: Path) -> None:
    outside = demo.parent / "secret.txt"
    outside.write_text("TOP SECRET")
    model = ScriptedModel([call("list_directory"), "ok"])
    agent, _ = make_agent(model, demo, context_files=["calc.py", "../secret.txt", "nope.py"])
    agent.run("Fix it")
    first_user = model.calls[0].messages[1]["content"]
    assert "Contents of calc.py:\n```\ndef add(a, b):\n    return a - b\n" in first_user
    assert "TOP SECRET" not in first_user
    assert "context file ../secret.txt left out" in first_user
    assert "context file nope.py left out" in first_user


def test_a_botched_call_that_stays_botched_is_nudged_not_taken_as_the_answer(demo: Path) -> None:
    botched = {"content": "I will read it now. <tool_call>read_file path=calc.py</tool_call>"}
    model = ScriptedModel([botched, "still not a call", call("list_directory"), "done"])
    agent, log = make_agent(model, demo)
    result = agent.run("Read calc.py")
    requests = log.of_type("model_request")
    assert [r.constrained for r in requests[:2]] == [False, True], "one constrained retry"
    assert model.calls[1].tools is None and model.calls[1].options.format is not None
    nudges = log.of_type("nudge")
    assert "could not be read" in nudges[0].message
    assert result.termination_reason == "final_answer"
    assert result.iterations_used == 3


def test_json_naming_an_unknown_tool_gets_the_list_of_tools(demo: Path) -> None:
    model = ScriptedModel(
        [
            {"content": '{"name": "open_file", "arguments": {"path": "calc.py"}}'},
            "x",
            call("list_directory"),
            "done",
        ]
    )
    agent, log = make_agent(model, demo)
    agent.run("Read calc.py")
    message = log.of_type("nudge")[0].message
    assert "no tool named open_file" in message and "read_file" in message


def test_a_command_in_flight_ends_with_the_wall_clock(demo: Path) -> None:
    model = ScriptedModel([call("run_command", command="sleep 30", timeout_ms=60000), "done"])
    agent, log = make_agent(model, demo, limits=Limits(wall_clock_s=1.5))
    started = time.monotonic()
    result = agent.run("Wait")
    assert time.monotonic() - started < 10
    assert result.termination_reason == "timeout"
    (event,) = log.of_type("tool_call")
    assert not event.ok and "wall clock ran out" in event.result_summary


def test_an_answer_after_empty_replies_is_objected_to_then_taken(demo: Path) -> None:
    """Seed 001: a final answer ends the loop. Empty replies use up the nudge streak; the
    answer that follows them ends it, and its objection (no tool used yet) is not counted."""
    model = ScriptedModel(["", "", "calc.py looks fine.", "calc.py looks fine, really."])
    agent, log = make_agent(model, demo)
    result = agent.run("Is calc.py correct?")
    assert result.termination_reason == "final_answer", result
    assert result.output == "calc.py looks fine, really."
    assert [e.nudge_number for e in log.of_type("nudge")] == [1, 2, 0]


def test_an_answer_again_after_the_checks_objected_ends_the_run(demo: Path) -> None:
    """write (the check still fails), empty, empty, answer: objected to once, not counted as
    a nudge; the same answer again ends the run, and verification decides its status."""
    wrong = call("edit_file", path="calc.py", old_text="return a - b", new_text="return a * b")
    model = ScriptedModel([wrong, "", "", "Fixed.", "Fixed, I am sure."])
    agent, log = make_agent(model, demo, checks=[CommandCheck("python3 check_calc.py")])
    result = agent.run("Fix calc.py")
    assert (result.termination_reason, result.status) == ("final_answer", "fail"), result
    assert len(log.of_type("nudge")) == 3  # two empty replies, one objection to "Fixed."
    model.assert_exhausted()


def test_nudges_counted_per_run_stop_a_model_that_recovers_each_time(demo: Path) -> None:
    """``[run] nudge_limit_per = "run"``: seed 001's "2 per run", where the default counts
    them in a row (a model that recovers each time goes on)."""
    read = call("read_file", path="calc.py")
    script = ["", read, "", read, "", "Done."]
    per_streak, _ = make_agent(ScriptedModel(script), demo)
    assert per_streak.run("Look at calc.py").termination_reason == "final_answer"
    limits = Limits(nudges_per="run")
    per_run, log = make_agent(ScriptedModel(script), demo, limits=limits)
    result = per_run.run("Look at calc.py")
    assert result.termination_reason == "nudge_exhausted", result
    assert "after 2 nudges in this run" in result.output
    assert len(log.of_type("nudge")) == 2

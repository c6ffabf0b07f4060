"""The simple path with a scripted model: one streamed answer, its events and its Result."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from localhand.cli.run import _print_result
from localhand.cli.view import TerminalView
from localhand.config.settings import Settings
from localhand.errors import BadResponse
from localhand.events import EventBus, EventLog
from localhand.evidence.verify import CommandCheck
from localhand.models.base import ChatOptions, StreamChunk
from localhand.models.scripted import ScriptedModel, Streamed
from localhand.replay import ReplayModel, replay_run
from localhand.run.routing import route
from localhand.run.simple import EMPTY, TRUNCATED, DeltaCoalescer, run_simple
from localhand.run.task import Task
from localhand.session.api import run_task
from localhand.session.finish import finish
from localhand.store import Store
from localhand.types import Message, Reply, Result, Usage
from workspaces import NOTES, workspace_with

QUESTION = "Explain what notes.md is about"
ANSWER = "It lists the three things left to do before the release, in order of urgency."


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return workspace_with(tmp_path / "ws", {"notes.md": NOTES})


def simple(model: Any, workspace: Path, log: EventLog | None = None, **task: Any) -> Result:
    bus = EventBus()
    if log is not None:
        bus.subscribe(log)
    spec = Task(QUESTION, workspace, id="q1", agentic=False, **task)
    return finish(run_simple(model, spec, bus=bus, routing=route(QUESTION, False)))


def without_duration(result: Result) -> dict[str, Any]:
    data = result.to_dict()
    assert 0 <= data.pop("duration_s") < 5
    # how commands (the checks) were boxed: this machine's, so only its shape here
    assert {"mode", "enforced", "limits"} <= set(data.pop("sandbox"))
    return data


def deltas(log: EventLog, thinking: bool = False) -> list[str]:
    return [e.text for e in log.of_type("answer_delta") if e.thinking == thinking]  # type: ignore[attr-defined]


def test_one_streamed_answer_gives_the_events_and_result_of_a_run(workspace: Path) -> None:
    log = EventLog()
    model = ScriptedModel([Reply(content=ANSWER, usage=Usage(120, 17), done_reason="stop")])
    result = simple(model, workspace, log, context_files=("notes.md",))

    assert without_duration(result) == {
        "task_id": "q1",
        "status": "pass",
        "output": ANSWER,
        "model_used": "scripted",
        "tokens_in": 120,
        "tokens_out": 17,
        "prefill": {  # the scripted model says nothing of a cache: unknown, not zero
            "requests": 1,
            "reported": 0,
            "tokens_prefilled": None,
            "tokens_reused": None,
            "prefill_s": None,
        },
        "termination_reason": "final_answer",
        "iterations_used": 1,
        "files_modified": [],
        "verification": [],
        "error": None,
        "completed": [],
        "remaining": [],
        "follow_up_task": None,
        "suggested_check": None,
        "cost": None,
        "routing": route(QUESTION, False).to_dict(),
        "git": None,
        "check_files_changed": [],
        "sensitive_changes": [],
    }
    types = [e.type for e in log.events]
    assert types[:2] == ["task_started", "model_request"]
    assert types[-2:] == ["model_reply", "task_finished"]
    assert set(types[2:-2]) == {"answer_delta"}
    assert "".join(deltas(log)) == ANSWER
    # Coalesced: the first word at once, the rest of this fast stream in far fewer events.
    assert deltas(log)[0] == "It "
    assert len(deltas(log)) < len(ANSWER.split())
    started = log.of_type("task_started")[0].to_dict()
    assert started["max_iterations"] == 1
    assert started["routing"]["agentic"] is False
    (call,) = model.calls
    assert call.tools is None
    assert "You cannot run tools" in call.messages[0]["content"]
    assert "Contents of notes.md:\n```\n1. tests\n2. docs\n3. tag\n" in call.messages[1]["content"]


def test_context_files_are_cut_to_fit_a_small_window(workspace: Path) -> None:
    (workspace / "big.txt").write_text("x" * 10_000)

    class Small(ScriptedModel):
        context_limit = 1000  # tokens: half of it, about 1500 characters of code, for files

    model = Small(["ok"])
    simple(model, workspace, context_files=("big.txt",))
    sent = model.calls[0].messages[1]["content"]
    shown = max(len(run) for run in sent.split("\n") if set(run) == {"x"})
    assert 1000 <= shown < 10_000, "cut to the model's window: half of it, in tokens"
    assert "big.txt (cut to fit: about 500 of its 2,500 tokens" in sent
    assert "attached files are capped at 500 tokens; cut: big.txt" in sent


def test_ctrl_c_mid_stream_is_a_cancelled_result_with_the_text_so_far(workspace: Path) -> None:
    log = EventLog()
    model = ScriptedModel([Streamed(["Hello ", "wor", KeyboardInterrupt()])])
    result = simple(model, workspace, log)
    assert (result.status, result.termination_reason, result.output) == (
        "fail",
        "cancelled",
        "Hello wor",
    )
    assert result.error is None and result.iterations_used == 1
    assert result.tokens_out == 2  # estimated from the text: the server never sent its counts
    assert "".join(deltas(log)) == "Hello wor"  # flushed before the end
    assert [e.type for e in log.events][-1] == "task_finished"
    assert not log.of_type("model_reply")


def test_the_wall_clock_ends_a_slow_answer(workspace: Path) -> None:
    log = EventLog()
    model = ScriptedModel([Streamed(["early ", "late"], delay=1.0)])
    result = simple(model, workspace, log, timeout_s=0.4)
    assert (result.status, result.termination_reason, result.output) == (
        "fail",
        "timeout",
        "early ",
    )
    assert result.duration_s < 2
    (guardrail,) = log.of_type("guardrail")
    assert guardrail.to_dict()["guardrail"] == "wall_clock"
    assert "0.4 s wall clock" in guardrail.to_dict()["reason"]


def test_the_default_wall_clock_is_ten_minutes() -> None:
    assert Task("q").limits(agentic=False).wall_clock_s == 600


def test_a_truncated_answer_is_kept_but_is_not_a_pass(workspace: Path) -> None:
    log = EventLog()
    model = ScriptedModel([Streamed(["The three things are: tests, d"], done_reason="length")])
    result = simple(model, workspace, log, checks=(CommandCheck("test -f notes.md"),))
    assert result.termination_reason == "final_answer"
    assert result.output == "The three things are: tests, d"
    assert result.status == "partial_pass"  # the check passes, the answer is incomplete
    assert result.completed == ["test -f notes.md"]
    assert result.remaining == [TRUNCATED]
    (warning,) = log.of_type("warning")
    assert "cut off at the model's output-token limit" in warning.to_dict()["message"]
    types = [e.type for e in log.events]
    assert types.index("warning") < types.index("verification") < types.index("task_finished")

    no_checks = simple(ScriptedModel([Streamed(["Half"], done_reason="length")]), workspace)
    assert (no_checks.status, no_checks.remaining) == ("fail", [TRUNCATED])


def test_an_empty_answer_is_not_a_pass(workspace: Path) -> None:
    log = EventLog()
    model = ScriptedModel([Streamed([StreamChunk(thinking="Hmm, notes.")])])
    result = simple(model, workspace, log)
    assert (result.status, result.termination_reason, result.output) == ("fail", "final_answer", "")
    assert result.remaining == [EMPTY]
    assert deltas(log, thinking=True) == ["Hmm, notes."]
    assert "only thought" in log.of_type("warning")[0].to_dict()["message"]


def test_a_failed_check_fails_a_complete_answer(workspace: Path) -> None:
    result = simple(ScriptedModel([ANSWER]), workspace, checks=(CommandCheck("false"),))
    assert (result.status, result.remaining) == ("fail", ["false"])


def test_a_server_error_mid_stream_keeps_the_partial_text(workspace: Path) -> None:
    model = ScriptedModel([Streamed(["Partial ", BadResponse("the runner died")])])
    result = simple(model, workspace)
    assert (result.status, result.termination_reason) == ("error", "error")
    assert (result.output, result.error) == ("Partial ", "the runner died")


def test_the_token_budget_is_checked_before_asking(workspace: Path) -> None:
    log = EventLog()
    model = ScriptedModel([ANSWER])
    result = simple(model, workspace, log, token_budget=50)
    assert (result.termination_reason, result.status, result.iterations_used) == (
        "budget",
        "fail",
        0,
    )
    assert not model.calls
    assert not log.of_type("model_request")
    assert log.of_type("guardrail")[0].to_dict()["guardrail"] == "token_budget"


def test_a_model_that_cannot_stream_answers_in_one_delta(workspace: Path) -> None:
    class ChatOnly:
        name = "chat-only"

        def chat(
            self,
            messages: Sequence[Message],
            tools: Sequence[dict[str, Any]] | None = None,
            options: ChatOptions | None = None,
        ) -> Reply:
            assert tools is None and options is not None and options.timeout is not None
            return Reply(content=ANSWER, usage=Usage(10, 5), done_reason="stop")

    log = EventLog()
    result = simple(ChatOnly(), workspace, log)
    assert (result.status, result.output, result.tokens_in) == ("pass", ANSWER, 10)
    assert deltas(log) == [ANSWER]


def test_replaying_a_simple_run_past_its_replies_is_an_error_not_a_crash(workspace: Path) -> None:
    result = simple(ReplayModel([]), workspace)
    assert result.status == "error"
    assert "recorded only 0" in (result.error or "")


def test_coalescing_joins_deltas_until_50_ms_or_200_characters() -> None:
    now = [0.0]
    out: list[tuple[str, bool]] = []
    buffer = DeltaCoalescer(
        lambda text, thinking: out.append((text, thinking)), clock=lambda: now[0]
    )
    buffer.add("first ")  # at once: the first token's wait is visible
    buffer.add("a ")
    buffer.add("b ")
    assert out == [("first ", False)]
    now[0] = 0.06
    buffer.add("c ")  # 60 ms since the last event
    assert out[-1] == ("a b c ", False)
    buffer.add("x" * 200)  # enough characters, however soon
    assert out[-1] == ("x" * 200, False)
    buffer.add("d")
    buffer.add("why?", thinking=True)  # thinking and answer never share an event
    assert out[-1] == ("d", False)
    buffer.flush()
    assert out[-1] == ("why?", True)
    buffer.flush()  # nothing pending: nothing emitted
    assert "".join(t for t, _ in out) == "first a b c " + "x" * 200 + "dwhy?"


def test_the_terminal_shows_the_answer_on_stdout_and_thinking_on_stderr(workspace: Path) -> None:
    stderr, stdout = io.StringIO(), io.StringIO()
    bus = EventBus()
    console = Console(file=stderr, width=200, no_color=True)
    bus.subscribe(TerminalView(console, answer=stdout, show_thinking=True))
    model = ScriptedModel([Streamed([StreamChunk(thinking="Read it. "), "Three ", "items."])])
    task = Task(QUESTION, workspace, agentic=False)
    result = finish(run_simple(model, task, bus=bus, routing=route(QUESTION, False)))
    assert stdout.getvalue() == "Three items.\n"  # the answer, once, ended by a newline
    err = stderr.getvalue()
    assert "  thinking:\n    ┆ Read it.\n" in err  # --show-thinking: folded, before the answer
    assert err.count("Read it.") == 1  # streamed, so not again from the reply
    assert "one answer, no tools" in err
    assert "Three items." not in err
    assert "■ pass (final_answer)" in err

    # The CLI does not print a streamed answer a second time; the loop's answer it does.
    printed = io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("sys.stdout", printed)
        _print_result(result, json_output=False)
        assert printed.getvalue() == ""
        looped = Result(
            **{**result.to_dict(), "verification": [], "routing": {"agentic": True, "reason": "r"}}
        )
        _print_result(looped, json_output=False)
    assert printed.getvalue() == "Three items.\n"


def test_the_runner_routes_simple_tasks_to_the_stream(workspace: Path, tmp_path: Path) -> None:
    model = ScriptedModel([ANSWER])
    task = Task("What does notes.md list?", workspace, id="auto")  # routed, not set
    result = run_task(task, Settings(model="scripted"), model=model, follow_up_dir=tmp_path)
    assert result.routing == {
        "agentic": False,
        "reason": "asks a question or for text, and changes nothing",
    }
    assert (result.status, result.output, result.iterations_used) == ("pass", ANSWER, 1)
    assert model.calls[0].tools is None

    agentic = ScriptedModel(["Done."])
    task = Task("Fix the typo in notes.md", workspace, id="loop", max_iterations=1)
    result = run_task(task, Settings(model="scripted"), model=agentic, follow_up_dir=tmp_path)
    assert result.routing is not None and result.routing["agentic"] is True
    assert agentic.calls[0].tools  # the loop offers its tools


def test_a_simple_run_is_recorded_and_replays_identically(workspace: Path) -> None:
    store = Store()
    task = Task(QUESTION, workspace, agentic=False)
    run_id = store.begin_run(task, model="qwen3:8b")
    bus = EventBus()
    bus.subscribe(store.recorder())
    run_task(task, Settings(), bus=bus, model=ScriptedModel([ANSWER], name="qwen3:8b"))

    events = store.events(run_id)
    assert "".join(e.data["text"] for e in events if e.type == "answer_delta") == ANSWER
    assert store.run(run_id).status == "pass"
    report = replay_run(store, run_id)
    assert report.ok, report.differences
    assert report.result.output == ANSWER

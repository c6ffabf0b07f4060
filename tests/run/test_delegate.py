"""The ``delegate`` tool: a helper forked from the parent's exact conversation, refused every
call but a read, its answer back as the tool result, its tokens the parent's, its run recorded
apart and linked to the parent's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_helpers import localhand
from localhand.config.settings import load_settings
from localhand.errors import ConfigError
from localhand.events import DelegateFinished, DelegateStarted, EventBus, EventLog, ToolCallEvent
from localhand.models.scripted import ScriptedModel, call
from localhand.parsing import parse_tool_calls
from localhand.profiles import PROFILES
from localhand.profiles.formats import write_call
from localhand.replay import replay_run
from localhand.run.agent import ToolLoop
from localhand.run.delegate import Delegation
from localhand.run.guardrails import Limits
from localhand.run.task import Task
from localhand.session.api import run_task
from localhand.store import Store, open_store
from localhand.testing import FakeOllama
from localhand.tools import default_tools
from localhand.types import Reply, ToolCall

QUESTION = "Which port does notes.txt name?"


def names(tools: list[dict] | None) -> list[str]:
    return [tool["function"]["name"] for tool in tools or []]


def delegated(tmp_path: Path, helper: list[object], store: Store | None = None, iterations=8):
    (tmp_path / "notes.txt").write_text("The server listens on port 8123.\n")
    replies = [call("delegate", task=QUESTION), *helper, "It is 8123."]
    model, bus, log = ScriptedModel(replies), EventBus(), EventLog()
    bus.subscribe(log)
    if store is not None:
        bus.subscribe(store.recorder(archive_bytes=0))
    task = Task(
        description="Find the port", workspace=tmp_path, agentic=True, max_iterations=iterations
    )
    result = run_task(task, load_settings(), model=model, bus=bus, store=store)
    return model, log, result


def test_the_helper_starts_from_the_parents_exact_request_and_its_answer_returns(
    tmp_path: Path,
) -> None:
    store = Store(":memory:")
    helper = [
        call("read_file", path="notes.txt"),
        call("write_file", path="x.txt", content="no"),
        call("delegate", task="again"),
        "Port 8123.",
    ]
    model, log, result = delegated(tmp_path, helper, store)
    parent_first, helper_first, *_, parent_next = model.calls
    sent = parent_first.messages
    assert helper_first.messages[: len(sent)] == sent, "the parent's request, byte for byte"
    reply, ask = helper_first.messages[len(sent) :]
    assert reply["role"] == "assistant" and names(reply["tool_calls"]) == ["delegate"]
    assert ask["role"] == "user" and ask["content"].startswith(QUESTION + "\n\n[You are now")
    assert helper_first.tools == parent_first.tools and "delegate" in names(parent_first.tools)
    assert parent_next.messages[-1]["role"] == "tool"
    assert parent_next.messages[-1]["content"] == "Port 8123."
    assert parent_next.messages[: len(sent) + 1] == helper_first.messages[: len(sent) + 1]
    assert not (tmp_path / "x.txt").exists()
    assert (result.status, result.output) == ("unverified", "It is 8123.")

    started = next(e for e in log.events if isinstance(e, DelegateStarted))
    finished = next(e for e in log.events if isinstance(e, DelegateFinished))
    assert (finished.termination_reason, finished.iterations) == ("final_answer", 4)
    (tool,) = [e for e in log.events if isinstance(e, ToolCallEvent)]  # the parent's only
    assert (tool.tool_name, tool.ok, tool.result_summary) == ("delegate", True, "Port 8123.")
    own = [e for e in log.events if e.type == "model_reply"]
    assert result.tokens_in == sum(e.tokens_in for e in own) + finished.tokens_in
    assert result.tokens_out == sum(e.tokens_out for e in own) + finished.tokens_out

    parent_run, helper_run = store.open_run_for(result.task_id), started.helper_run
    runs = {run.id: run for run in store.runs()}
    assert helper_run is not None and runs[helper_run].kind == "helper"
    assert runs[helper_run].continues == next(r.id for r in runs.values() if r.kind == "run")
    assert parent_run is None and runs[helper_run].status == "unverified"
    calls = [e.data for e in store.events(helper_run) if e.type == "tool_call"]
    assert [(c["tool_name"], c["ok"]) for c in calls] == [
        ("read_file", True),
        ("write_file", False),
        ("delegate", False),
    ]
    assert "a helper only reads" in calls[1]["result_summary"]


def test_a_run_that_delegated_replays_with_its_helpers_replies(tmp_path: Path) -> None:
    store = Store(":memory:")
    helper = [call("read_file", path="notes.txt"), "Port 8123."]
    delegated(tmp_path, helper, store)
    run_id = next(run.id for run in store.runs() if run.kind == "run")
    report = replay_run(store, run_id)
    assert report.ok, report.differences
    assert (report.replies_recorded, report.replies_used) == (4, 4)
    assert report.result.output == "It is 8123."


def test_the_helpers_limits_are_a_share_of_what_the_parent_has_left(tmp_path: Path) -> None:
    parent = ToolLoop(
        ScriptedModel([]), tmp_path, limits=Limits(max_iterations=9, token_budget=10_000)
    )
    parent.state.tokens_in, parent.state.tokens_out = 7_000, 1_000
    limits = Delegation(0.5).limits(parent)
    assert (limits.max_iterations, limits.token_budget) == (5, 2_000)
    assert limits.wall_clock_s is not None and limits.wall_clock_s <= parent.limits.wall_clock_s
    parent.state.tokens_in = 9_000
    tool = default_tools(tmp_path, *Delegation(0.5).tools())
    assert "not set up" in tool.execute(ToolCall("delegate", {"task": "x"})).content
    spent = Delegation(0.5)
    spent.parent = parent
    refused = default_tools(tmp_path, *spent.tools()).execute(ToolCall("delegate", {"task": "x"}))
    assert not refused.ok and "budget has nothing left" in refused.content


def test_a_helper_that_runs_out_says_so_and_the_parent_goes_on(tmp_path: Path) -> None:
    helper = [call("read_file", path="notes.txt"), call("list_directory", path=".")]
    model, log, result = delegated(tmp_path, [*helper, call("read_file", path="a")], iterations=6)
    finished = next(e for e in log.events if isinstance(e, DelegateFinished))
    assert (finished.termination_reason, finished.iterations) == ("max_iterations", 3)  # 6 × ½
    back = model.calls[-1].messages[-1]["content"]
    assert back.startswith("The helper stopped (max_iterations) before it answered")
    assert result.output == "It is 8123."


def test_a_cancelled_parent_cancels_its_helper(tmp_path: Path) -> None:
    def stop(messages: list[dict]) -> Reply:  # the helper's first turn: Stop comes meanwhile
        loop.cancellation.cancel("stopped mid-helper")
        return Reply(content="", tool_calls=[ToolCall("read_file", {"path": "notes.txt"})])

    (tmp_path / "notes.txt").write_text("8123\n")
    model = ScriptedModel([call("delegate", task=QUESTION), stop])
    delegation = Delegation(0.5)
    loop = ToolLoop(model, tmp_path, tools=default_tools(tmp_path, *delegation.tools()))
    delegation.parent = loop
    outcome = loop.play("Find the port")
    assert outcome.life.state.iteration == 1 and len(model.calls) == 2
    assert outcome.settle([]).termination_reason == "cancelled"


def test_not_offered_to_a_tiny_model_nor_with_a_share_of_zero(tmp_path: Path) -> None:
    class Tiny(ScriptedModel):
        tiny = True

    for model, share in (
        (Tiny([call("list_directory", path="."), "Listed."]), 0.5),
        (ScriptedModel([call("list_directory", path="."), "Listed."]), 0.0),
    ):
        task = Task(description="List", workspace=tmp_path, agentic=True)
        run_task(task, load_settings().with_overrides(delegate_share=share), model=model)
        assert "delegate" not in names(model.calls[0].tools)


@pytest.mark.parametrize("share", ["2", "-0.1", "half"])
def test_a_share_outside_zero_to_one_is_refused(share: str) -> None:
    with pytest.raises(ConfigError, match="delegate_share"):
        load_settings({"LOCALHAND_DELEGATE_SHARE": share})


def wire_call(name: str, **arguments: object) -> dict:
    return {"content": "", "tool_calls": [{"function": {"name": name, "arguments": arguments}}]}


def test_the_command_line_shows_the_helper_in_jsonl_and_show(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("The server listens on port 8123.\n")
    script = [
        wire_call("delegate", task=QUESTION),
        wire_call("read_file", path="notes.txt"),
        {"content": "Port 8123."},
        {"content": "It is 8123."},
    ]
    with FakeOllama(script=script, models={"qwen3:8b": {}}) as server:
        args = ("run", "Find the port", "-w", str(tmp_path), "--model", "qwen3:8b", "--agentic")
        done = localhand(*args, "--jsonl", host=server.url, cwd=tmp_path)
        parent_first, helper_first, _, parent_next = (r.body for r in server.chat_requests)
        loads = server.loads
    assert done.returncode == 3, done.stderr  # unverified: no checks
    sent = parent_first["messages"]
    assert helper_first["messages"][: len(sent)] == sent
    assert helper_first["tools"] == parent_first["tools"]
    assert parent_next["messages"][-1]["content"] == "Port 8123."
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    kinds = [line["type"] for line in lines]
    assert kinds.index("delegate_started") < kinds.index("delegate_finished")
    assert lines[-1]["payload"]["output"] == "It is 8123."
    started = lines[kinds.index("delegate_started")]
    helper, parent = started["payload"]["helper_run"], started["run_id"]
    shown = localhand("show", helper, cwd=tmp_path)
    assert f"helper of {parent}" in shown.stdout and "read_file" in shown.stdout
    # The fake server's cache: the prefix each request shares with the one before. The helper
    # reuses all the parent sent; the parent's next request that, and the reply, from the
    # helper's; and one window throughout (Ollama never reloaded the model).
    with open_store() as store:
        forked = next(e.data for e in store.events(helper) if e.type == "model_reply")
    back = [line["payload"] for line in lines if line["type"] == "model_reply"][1]
    assert back["tokens_cached"] > forked["tokens_cached"] > 0 and len(loads) == 1
    parent_shown = localhand("show", parent, cwd=tmp_path).stdout
    assert f"↳ a helper (run {helper}) on: {QUESTION}" in parent_shown
    listed = localhand("runs", cwd=tmp_path).stdout
    assert f"{helper} ↳" in listed and f"{parent} ↳" not in listed, listed


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
def test_each_family_writes_delegate_as_the_parser_reads_it(profile, tmp_path: Path) -> None:
    definitions = default_tools(tmp_path, *Delegation(0.5).tools()).definitions()
    written = write_call(profile.text_format, "delegate", {"task": QUESTION})
    parsed = parse_tool_calls({"role": "assistant", "content": written}, definitions)
    assert [(c.name, c.arguments) for c in parsed.calls] == [("delegate", {"task": QUESTION})]

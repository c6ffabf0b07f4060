"""Tool arguments nested hundreds of levels deep are refused with a result the model can read.

Before, ``{"path": [[[[...]]]]}`` 500 levels deep ended the run with a RecursionError (in the
token estimate of the history that holds the call). Now the parser cuts such a value where it
stands, the registry refuses the call naming the depth, and the run goes on.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from localhand import Agent
from localhand.events import EventBus, EventLog
from localhand.models.ollama import OllamaModel
from localhand.models.scripted import ScriptedModel, call
from localhand.nesting import (
    MAX_DEPTH,
    Cut,
    cut_deep,
    decode_too_deep,
    depth,
    json_loads,
    restore_cuts,
)
from localhand.parsing import coerce_arguments
from localhand.parsing.json_load import loads_lenient
from localhand.run.guardrails import Limits
from localhand.testing import FakeOllama
from localhand.tools import default_tools
from localhand.types import Reply, ToolCall


def nested_list(levels: int) -> Any:
    value: Any = "x"
    for _ in range(levels):
        value = [value]
    return value


def nested_dict(levels: int) -> Any:
    value: Any = "x"
    for _ in range(levels):
        value = {"a": value}
    return value


def wire_depth(messages: Any) -> int:
    """How deep ``messages`` nest as they go on the wire (a cut is its text there)."""
    return depth(json.loads(json.dumps(messages)))


def refusal(tool: str, levels: int) -> str:
    return (
        f"Arguments for {tool} are nested {levels} levels deep; the limit is {MAX_DEPTH}. "
        "Pass each parameter as the plain value its type asks for"
    )


# -- measuring and cutting, without recursion ------------------------------------------------


def test_depth_counts_levels_without_recursing() -> None:
    assert [depth(v) for v in ("x", 1, None, [], {}, ["x"], {"a": [1, {"b": 2}]})] == [
        0,
        0,
        0,
        1,
        1,
        1,
        3,
    ]
    assert depth(nested_list(200_000)) == 200_000  # far past the recursion limit
    assert depth(nested_dict(5_000)) == 5_000
    assert depth([[1], [[[2]]], 3]) == 4


def test_a_cut_counts_as_deep_as_what_it_replaced() -> None:
    assert depth(Cut(7)) == 7
    assert depth({"path": [Cut(10)]}) == 12
    assert copy.deepcopy(Cut(7)).depth == 7
    assert json.loads(json.dumps([Cut(7)])) == ["[cut: 7 more levels of nesting]"]


def test_cut_deep_bounds_the_value_in_place_and_keeps_its_depth() -> None:
    inner = nested_list(500)
    arguments = {"path": inner, "flat": "kept"}
    assert cut_deep(arguments, limit=4) == 501
    assert depth(arguments) == 501  # the cut remembers how deep it was
    assert inner == [[[Cut(497)]]]  # the caller's own list was cut: level 5 is gone
    assert isinstance(inner[0][0][0], Cut)
    assert arguments["flat"] == "kept"
    shallow = {"path": [["x"]]}
    assert cut_deep(shallow, limit=4) == 3 and shallow == {"path": [["x"]]}


def test_restore_cuts_turns_markers_back_into_cuts() -> None:
    value = restore_cuts({"a": ["\0m:12", "\0m:x", "plain"]}, "\0m:")
    assert value == {"a": [Cut(12), "\0m:x", "plain"]}
    assert isinstance(value["a"][0], Cut) and value["a"][0].depth == 12
    assert not isinstance(value["a"][1], Cut)  # only digits make a cut


# -- loading text that nests past json's own recursion limit ---------------------------------


def test_json_nested_past_the_decoders_limit_is_read_with_cuts() -> None:
    levels = 3_000
    text = '{"path": ' + "[" * levels + '"x"' + "]" * levels + "} and then prose"
    with pytest.raises(RecursionError):
        json.loads(text[: text.index(" and")])
    value, end = decode_too_deep(text)
    assert text[end:] == " and then prose"
    assert depth(value) == levels + 1
    assert depth(value) == depth({"path": nested_list(levels)})


def test_brackets_inside_strings_are_not_levels() -> None:
    levels = 2_000
    text = "[" * levels + '"]]]] \\" [[[["' + "]" * levels
    value, end = decode_too_deep(text)
    assert end == len(text) and depth(value) == levels


def test_unclosed_or_broken_deep_text_is_not_read() -> None:
    assert decode_too_deep("[" * 3_000) is None
    assert decode_too_deep('{"a" ' + "[" * 3_000 + "]" * 3_000 + "}") is None  # no colon
    assert decode_too_deep("[" * 3_000 + '"unterminated' + "]" * 3_000) is None
    ok, value = loads_lenient("[" * 3_000 + "1" + "]" * 3_000)
    assert ok and depth(value) == 3_000


def test_coerce_cuts_deep_arguments_without_converting_them() -> None:
    schema = {"type": "object", "properties": {"path": {"type": "string"}}}
    shared = nested_list(600)
    coerced = coerce_arguments({"path": shared}, schema)
    assert depth(coerced) == 601
    assert depth(shared) == 600 and len(json.dumps(shared)) < 200  # the original is cut too
    assert coerce_arguments({"path": "12"}, schema) == {"path": "12"}


# -- the registry refuses, the loop goes on --------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "levels"),
    [
        ({"path": nested_list(500)}, 501),
        ({"path": "a.txt", "start_line": nested_dict(500)}, 501),
        ({"path": nested_list(100_000)}, 100_001),  # straight to the registry, never cut
        ({"path": nested_list(MAX_DEPTH)}, MAX_DEPTH + 1),
    ],
    ids=["list", "dict", "100k", "one-too-many"],
)
def test_the_registry_refuses_deep_arguments_by_depth(
    tmp_path: Path, arguments: dict[str, Any], levels: int
) -> None:
    with default_tools(tmp_path) as registry:
        result = registry.execute(ToolCall("read_file", arguments))
    assert (result.ok, result.content) == (False, refusal("read_file", levels))


def test_arguments_at_the_limit_are_validated_as_usual(tmp_path: Path) -> None:
    with default_tools(tmp_path) as registry:
        result = registry.execute(ToolCall("read_file", {"path": nested_list(MAX_DEPTH - 1)}))
    assert not result.ok and result.content.startswith("Invalid arguments for read_file")


def deep_call_text(levels: int) -> str:
    return (
        '{"name": "read_file", "arguments": {"path": ' + "[" * levels + '"x"' + "]" * levels + "}}"
    )


def run(tmp_path: Path, step: Any, **limits: Any) -> tuple[Any, EventLog, ScriptedModel]:
    (tmp_path / "keep.txt").write_text("precious\n")
    model = ScriptedModel([step, call("read_file", path="keep.txt"), "done"])
    bus, log = EventBus(), EventLog()
    bus.subscribe(log)
    agent = Agent(model, tmp_path, bus=bus, require_action=False, limits=Limits(**limits))
    return agent.run("task"), log, model


@pytest.mark.parametrize(
    ("step", "levels"),
    [
        (call("read_file", path=nested_list(500)), 501),
        (call("write_file", path="a.txt", content=nested_dict(500)), 501),
        (Reply(content=deep_call_text(500)), 501),
        (Reply(content=deep_call_text(5_000)), 5_001),  # past json's own recursion limit
        (Reply(content="```json\n" + deep_call_text(3_000) + "\n```"), 3_001),
    ],
    ids=["native-list", "native-dict", "text", "text-5000", "fenced-3000"],
)
def test_a_deep_call_gets_an_error_and_the_run_ends_normally(
    tmp_path: Path, step: Any, levels: int
) -> None:
    result, log, model = run(tmp_path, step)
    assert (result.termination_reason, result.status, result.error) == (
        "final_answer",
        "unverified",  # no checks: the model's word only
        None,
    )
    assert result.output == "done"
    tool = "write_file" if "write_file" in str(step)[:200] else "read_file"
    tool_messages = [m for m in model.calls[-1].messages if m["role"] == "tool"]
    assert [m["content"] for m in tool_messages] == [refusal(tool, levels), "    1| precious"]
    assert [e.ok for e in log.of_type("tool_call")] == [False, True]
    assert not (tmp_path / "a.txt").exists()
    # The history sent back on every turn holds the call cut down, not 500 levels of it.
    assert wire_depth(model.calls[-1].messages) < MAX_DEPTH + 8


def test_a_repeated_deep_call_trips_the_repetition_guardrail(tmp_path: Path) -> None:
    deep = [call("read_file", path=nested_list(800)) for _ in range(3)]
    model = ScriptedModel([*deep, "never reached"])
    result = Agent(model, tmp_path, require_action=False, limits=Limits(repetition=3)).run("t")
    assert (result.termination_reason, result.error) == ("repetition", None)


def test_a_deep_call_from_a_real_server_is_refused_end_to_end(tmp_path: Path) -> None:
    """Through HTTP and the Ollama backend, as a call and as text."""
    native = {
        "tool_calls": [{"function": {"name": "read_file", "arguments": {"path": nested_list(500)}}}]
    }
    text = deep_call_text(400)
    with FakeOllama([native, text, "done"]) as server:
        model = OllamaModel("qwen3:8b", server.url, sleep=lambda seconds: None)
        bus, log = EventBus(), EventLog()
        bus.subscribe(log)
        result = Agent(model, tmp_path, bus=bus, require_action=False).run("task")
        sent = server.chat_requests[-1].body["messages"]
    assert (result.termination_reason, result.error) == ("final_answer", None)
    assert [m["content"] for m in sent if m["role"] == "tool"] == [
        refusal("read_file", 501),
        refusal("read_file", 401),
    ]
    assert wire_depth(sent) < MAX_DEPTH + 8


def test_a_server_reply_nested_past_jsons_own_limit_is_read_with_cuts() -> None:
    """``json.loads`` raises RecursionError (not ValueError) past ~1,000 levels: what the
    backends read from a server goes through ``json_loads``, which cuts instead."""
    body = '{"message": {"tool_calls": [{"function": {"name": "read_file", "arguments": '
    body += '{"path": ' + "[" * 5000 + "]" * 5000 + "}}}]}}"
    with pytest.raises(RecursionError):
        json.loads(body)
    reply = json_loads(body.encode())
    arguments = reply["message"]["tool_calls"][0]["function"]["arguments"]
    assert depth(arguments) > MAX_DEPTH
    assert depth(json.loads(json.dumps(arguments))) < 100  # what is kept is shallow enough
    with pytest.raises(ValueError, match="too deep"):
        json_loads("[" * 5000 + "]" * 4999)  # deep and broken: not JSON, as before


def test_the_store_keeps_the_reply_that_carried_a_deep_call(tmp_path: Path) -> None:
    """The reply is cut as it arrives, before its event is recorded: the store's copy of a
    500-deep native call would otherwise recurse and that one event be lost."""
    from localhand.store import Store

    native = {
        "tool_calls": [{"function": {"name": "read_file", "arguments": {"path": nested_list(500)}}}]
    }
    store = Store(tmp_path / "runs.db")
    (tmp_path / "ws").mkdir()
    with FakeOllama([native, "done"]) as server:
        model = OllamaModel("qwen3:8b", server.url, sleep=lambda seconds: None)
        bus = EventBus()
        bus.subscribe(store.recorder())
        result = Agent(model, tmp_path / "ws", bus=bus, require_action=False).run("task")
    assert result.termination_reason == "final_answer"
    (run,) = store.runs()
    types = [event.data["type"] for event in store.events(run.id)]
    assert types.count("model_reply") == 2
    store.close()

"""Unit tests for the tool-call parser: the layers, the rules, and the contract."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from localhand.parsing import ParsedReply, call_schema, coerce_arguments, parse_tool_calls
from localhand.types import Reply, ToolCall

TOOLS: list[dict[str, Any]] = json.loads(
    (Path(__file__).parents[1] / "parser_corpus" / "tools.json").read_text()
)


def parse(content: str = "", **fields: Any) -> ParsedReply:
    return parse_tool_calls({"role": "assistant", "content": content, **fields}, TOOLS)


def only_call(reply: ParsedReply) -> ToolCall:
    assert reply.type == "tool_calls", reply
    assert len(reply.calls) == 1, reply.calls
    return reply.calls[0]


# Layer 1: native tool_calls -----------------------------------------------------------------


def test_native_single_call_with_object_arguments() -> None:
    reply = parse("", tool_calls=[{"function": {"name": "read_file", "arguments": {"path": "a"}}}])
    assert only_call(reply) == ToolCall("read_file", {"path": "a"})
    assert reply.source == "native"


def test_native_multiple_calls_keep_order() -> None:
    reply = parse(
        tool_calls=[
            {"function": {"name": "read_file", "arguments": {"path": "a"}}},
            {"function": {"name": "list_files", "arguments": {}}},
        ]
    )
    assert [c.name for c in reply.calls] == ["read_file", "list_files"]


def test_native_openai_shape_with_json_string_arguments_and_id() -> None:
    reply = parse(
        None,
        tool_calls=[
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "run_command", "arguments": '{"command": "ls"}'},
            }
        ],
    )
    assert only_call(reply) == ToolCall("run_command", {"command": "ls"}, "call_1")


def test_native_double_encoded_arguments() -> None:
    encoded = json.dumps(json.dumps({"path": "a.py"}))
    reply = parse(tool_calls=[{"function": {"name": "read_file", "arguments": encoded}}])
    assert only_call(reply).arguments == {"path": "a.py"}


def test_native_unknown_tool_is_still_a_call() -> None:
    reply = parse(tool_calls=[{"function": {"name": "delete_everything", "arguments": {}}}])
    assert only_call(reply).name == "delete_everything"


def test_native_beats_text_calls() -> None:
    reply = parse(
        '<tool_call>{"name": "write_file", "arguments": {"path": "x", "content": ""}}</tool_call>',
        tool_calls=[{"function": {"name": "read_file", "arguments": {"path": "a"}}}],
    )
    assert [c.name for c in reply.calls] == ["read_file"]
    assert reply.content == ""


def test_native_arguments_are_coerced() -> None:
    reply = parse(
        tool_calls=[
            {"function": {"name": "read_file", "arguments": {"path": "a", "end_line": "9"}}}
        ]
    )
    assert only_call(reply).arguments == {"path": "a", "end_line": 9}


def test_reply_object_is_accepted() -> None:
    reply = parse_tool_calls(
        Reply(tool_calls=(ToolCall("read_file", {"path": "a"}),), done_reason="stop"), TOOLS
    )
    assert only_call(reply) == ToolCall("read_file", {"path": "a"})


# Layer 2: JSON in content --------------------------------------------------------------------


def test_bare_json_object() -> None:
    reply = parse('{"name": "read_file", "arguments": {"path": "src/app.py"}}')
    assert only_call(reply) == ToolCall("read_file", {"path": "src/app.py"})
    assert reply.content == ""


def test_json_in_fence_with_prose() -> None:
    reply = parse(
        'I will read it.\n```json\n{"name": "read_file", "arguments": {"path": "a"}}\n```\n'
    )
    assert only_call(reply).arguments == {"path": "a"}
    assert reply.content == "I will read it."


def test_several_objects_and_a_list() -> None:
    two = parse(
        '{"name": "read_file", "arguments": {"path": "a"}}\n'
        '{"name": "read_file", "arguments": {"path": "b"}}'
    )
    assert [c.arguments["path"] for c in two.calls] == ["a", "b"]
    listed = parse(
        '[{"name": "read_file", "arguments": {"path": "a"}}, '
        '{"name": "list_files", "arguments": {}}]'
    )
    assert [c.name for c in listed.calls] == ["read_file", "list_files"]


@pytest.mark.parametrize("key", ["arguments", "parameters", "args"])
def test_argument_key_variants(key: str) -> None:
    reply = parse(json.dumps({"name": "read_file", key: {"path": "a"}}))
    assert only_call(reply).arguments == {"path": "a"}


@pytest.mark.parametrize(
    "wrapped",
    [
        {"function": {"name": "read_file", "arguments": {"path": "a"}}},
        {"type": "function", "function": {"name": "read_file", "arguments": {"path": "a"}}},
        {"tool": "read_file", "args": {"path": "a"}},
        {"tool": {"name": "read_file", "arguments": {"path": "a"}}},
        {"tool_calls": [{"function": {"name": "read_file", "arguments": '{"path": "a"}'}}]},
        {"tool_name": "read_file", "parameters": {"path": "a"}},
        {"action": "read_file", "action_input": {"path": "a"}},
    ],
)
def test_wrappers(wrapped: dict[str, Any]) -> None:
    assert only_call(parse(json.dumps(wrapped))) == ToolCall("read_file", {"path": "a"})


def test_double_encoded_arguments_in_text() -> None:
    text = json.dumps({"name": "read_file", "arguments": json.dumps({"path": "a"})})
    assert only_call(parse(text)).arguments == {"path": "a"}


def test_python_literal_dict() -> None:
    reply = parse("{'name': 'run_command', 'arguments': {'command': 'ls', 'background': True}}")
    assert only_call(reply).arguments == {"command": "ls", "background": True}


def test_unoffered_name_in_prose_is_text() -> None:
    text = 'For example you could send {"name": "get_stock", "arguments": {"s": "X"}} to it.'
    reply = parse(text)
    assert reply.type == "final_answer"
    assert reply.content == text
    assert reply.rejected_calls[0].name == "get_stock"
    assert not reply.needs_constrained_retry


def test_unoffered_name_as_whole_reply_asks_for_retry() -> None:
    reply = parse('{"name": "get_stock", "arguments": {"s": "X"}}')
    assert reply.type == "empty"
    assert reply.content == '{"name": "get_stock", "arguments": {"s": "X"}}'
    assert reply.needs_constrained_retry


def test_without_tools_any_plausible_name_counts() -> None:
    reply = parse_tool_calls({"content": '{"name": "anything", "arguments": {"a": 1}}'})
    assert only_call(reply) == ToolCall("anything", {"a": 1})


def test_json_that_is_not_a_call_is_an_answer() -> None:
    reply = parse('The config is {"name": "demo", "version": 2}.')
    assert reply.type == "final_answer"
    assert not reply.rejected_calls


# Layer 3: tags -------------------------------------------------------------------------------


def test_hermes_tool_call_blocks() -> None:
    reply = parse(
        "<tool_call>\n"
        '{"name": "read_file", "arguments": {"path": "a"}}\n'
        "</tool_call>\n<tool_call>\n"
        '{"name": "list_files", "arguments": {"path": "."}}\n'
        "</tool_call>"
    )
    assert [c.name for c in reply.calls] == ["read_file", "list_files"]
    assert reply.source == "hermes"


def test_hermes_missing_closing_tag_at_end() -> None:
    reply = parse('<tool_call>\n{"name": "read_file", "arguments": {"path": "a"}}')
    assert only_call(reply).arguments == {"path": "a"}


def test_hermes_unknown_name_is_a_call() -> None:
    reply = parse('<tool_call>{"name": "nope", "arguments": {}}</tool_call>')
    assert only_call(reply).name == "nope"


def test_hermes_broken_json_is_malformed_not_an_answer() -> None:
    reply = parse('<tool_call>{"name": "read_file", "arguments": {path: ???}</tool_call>')
    assert reply.type == "empty"
    assert reply.needs_constrained_retry
    assert reply.malformed


def test_closing_tag_inside_argument_string() -> None:
    content = "see </tool_call> here"
    call = {"name": "write_file", "arguments": {"path": "n.md", "content": content}}
    reply = parse(f"<tool_call>{json.dumps(call)}</tool_call>")
    assert only_call(reply).arguments["content"] == content


# Thinking ------------------------------------------------------------------------------------


def test_think_block_is_stripped_from_answer() -> None:
    reply = parse("<think>Let me think.</think>\n\nThe answer is 4.")
    assert reply.type == "final_answer"
    assert reply.content == "The answer is 4."
    assert reply.thinking == "Let me think."


def test_orphan_closing_think_tag() -> None:
    reply = parse("the prompt opened the block</think>Paris.")
    assert reply.content == "Paris."


def test_call_inside_think_only_is_not_executed() -> None:
    reply = parse('<think>I should call {"name": "read_file", "arguments": {"path": "a"}}</think>')
    assert reply.type == "empty"
    assert reply.only_thinking_calls
    assert reply.thinking_calls[0].name == "read_file"


def test_call_in_thinking_field_only() -> None:
    reply = parse(
        "", thinking='<tool_call>{"name": "read_file", "arguments": {"path": "a"}}</tool_call>'
    )
    assert reply.type == "empty"
    assert reply.only_thinking_calls


def test_call_after_thinking_is_executed() -> None:
    reply = parse(
        "<think>maybe read_file</think>"
        '<tool_call>{"name": "read_file", "arguments": {"path": "a"}}</tool_call>'
    )
    assert only_call(reply).name == "read_file"
    assert not reply.only_thinking_calls


# Final answer, empty, truncation ---------------------------------------------------------------


@pytest.mark.parametrize("content", ["", "   \n", None])
def test_empty(content: str | None) -> None:
    reply = parse_tool_calls({"role": "assistant", "content": content}, TOOLS)
    assert reply.type == "empty"
    assert reply.calls == ()


def test_final_answer_json_object() -> None:
    reply = parse('{"final_answer": "All tests pass."}')
    assert reply.type == "final_answer"
    assert reply.content == "All tests pass."
    assert reply.source == "final_answer_json"


def test_truncated_call_is_never_returned() -> None:
    reply = parse(
        '<tool_call>{"name": "write_file", "arguments": {"path": "a", "content": "def f',
        done_reason="length",
    )
    assert reply.calls == ()
    assert reply.truncated
    assert reply.malformed


def test_truncated_keyword_argument() -> None:
    reply = parse_tool_calls(
        {"content": '{"name": "read_file", "arguments": {"path": "a'}, TOOLS, done_reason="length"
    )
    assert reply.calls == ()
    assert reply.truncated


def test_complete_call_before_a_truncated_one_is_kept() -> None:
    reply = parse(
        '<tool_call>{"name": "read_file", "arguments": {"path": "a"}}</tool_call>\n'
        '<tool_call>{"name": "write_file", "arguments": {"path": "b", "content": "x',
        done_reason="length",
    )
    assert [c.name for c in reply.calls] == ["read_file"]
    assert reply.truncated


def test_unclosed_json_repaired_when_not_truncated() -> None:
    reply = parse('{"name": "read_file", "arguments": {"path": "a"}')
    assert only_call(reply).arguments == {"path": "a"}
    assert reply.repaired


@pytest.mark.parametrize(
    "message",
    [None, 42, "plain text", {"content": 5}, {"tool_calls": "x"}, {"tool_calls": [None, 3]}, []],
)
def test_never_raises_on_odd_messages(message: Any) -> None:
    reply = parse_tool_calls(message, TOOLS)
    assert reply.type in ("tool_calls", "final_answer", "empty")


def test_never_raises_on_odd_tools() -> None:
    for tools in (42, [None, "x", {"function": 3}], {"a": 1}):
        reply = parse_tool_calls({"content": "hi"}, tools)
        assert reply.type == "final_answer"


def test_parsed_reply_is_frozen() -> None:
    reply = parse("hi")
    with pytest.raises(AttributeError):
        reply.type = "empty"  # type: ignore[misc]


# coerce_arguments -----------------------------------------------------------------------------

SCHEMA = TOOLS[6]["function"]["parameters"]


def test_coerce_booleans_numbers_json_strings() -> None:
    got = coerce_arguments(
        {"options": '{"verbose": "true", "level": "3"}', "ratio": "0.5", "mode": "null"}, SCHEMA
    )
    # "null" is a valid string for ["string", "null"], so it stays a string.
    assert got == {"options": {"verbose": True, "level": 3}, "ratio": 0.5, "mode": "null"}
    nullable = {"type": "object", "properties": {"n": {"type": ["integer", "null"]}}}
    assert coerce_arguments({"n": "null"}, nullable) == {"n": None}


def test_coerce_leaves_unconvertible_values() -> None:
    got = coerce_arguments({"ratio": "about half", "options": "[1]", "extra": "1"}, SCHEMA)
    assert got == {"ratio": "about half", "options": "[1]", "extra": "1"}


def test_coerce_integer_rules() -> None:
    schema = TOOLS[0]["function"]["parameters"]
    assert coerce_arguments({"start_line": "10", "end_line": 5.0}, schema) == {
        "start_line": 10,
        "end_line": 5,
    }
    assert coerce_arguments({"start_line": "1.5"}, schema) == {"start_line": "1.5"}
    assert coerce_arguments({"start_line": "nan"}, schema) == {"start_line": "nan"}


def test_coerce_arrays_of_objects() -> None:
    schema = TOOLS[5]["function"]["parameters"]
    got = coerce_arguments({"path": 7, "edits": '[{"old": "a", "new": 1}]'}, schema)
    assert got == {"path": "7", "edits": [{"old": "a", "new": "1"}]}


def test_coerce_any_of_and_string_arguments() -> None:
    schema = {
        "type": "object",
        "properties": {"n": {"anyOf": [{"type": "integer"}, {"type": "null"}]}},
    }
    assert coerce_arguments('{"n": "4"}', schema) == {"n": 4}
    assert coerce_arguments("not json", schema) == {}


# call_schema ----------------------------------------------------------------------------------


def test_call_schema_branches_per_tool() -> None:
    schema = call_schema(TOOLS)
    branches = schema["anyOf"]
    assert len(branches) == len(TOOLS)
    first = branches[0]
    assert first["properties"]["name"] == {"type": "string", "enum": ["read_file"]}
    assert first["properties"]["arguments"]["properties"]["path"] == {"type": "string"}
    assert first["required"] == ["name", "arguments"]


def test_call_schema_with_final_answer_round_trips() -> None:
    schema = call_schema(TOOLS[:1], allow_final_answer=True)
    assert schema["anyOf"][-1]["required"] == ["final_answer"]
    assert parse(json.dumps({"final_answer": "done"})).content == "done"
    single = call_schema(TOOLS[:1])
    assert single["properties"]["name"]["enum"] == ["read_file"]

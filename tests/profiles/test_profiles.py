"""Model-family profiles (issue 19): matching names, the table's values, the per-backend switch,
the history shape, and a user's changes from localhand.toml."""

from __future__ import annotations

import re

import pytest

from localhand.errors import ConfigError
from localhand.models.base import DEFAULT_MAX_REPLY_TOKENS
from localhand.parsing import parse_tool_calls
from localhand.profiles import (
    GENERIC,
    PROFILES,
    Sampling,
    assistant_turn,
    normalise,
    profile_for,
    read_profiles,
    sampling_options,
    thinking_switch,
    wire_history,
)
from localhand.profiles.formats import write_call
from localhand.tools import default_tools
from localhand.types import Reply, ToolCall

NAMES = {
    "qwen3:8b": "qwen3",
    "qwen3:30b-a3b-instruct-2507-q4_K_M": "qwen3",
    "hf.co/unsloth/Qwen3-8B-GGUF:Q4_K_M": "qwen3",
    "/models/Qwen3-4B-Q4_K_M.gguf": "qwen3",
    "Qwen/Qwen3-8B": "qwen3",
    "qwen3-coder:30b": "qwen3-coder",
    "hf.co/unsloth/Qwen3-Coder-30B-A3B-Instruct-GGUF:UD-Q4_K_XL": "qwen3-coder",
    "qwen2.5-coder:7b": "qwen2.5-coder",
    "Qwen2.5-Coder-7B-Instruct-Q8_0.gguf": "qwen2.5-coder",
    "gpt-oss:20b": "gpt-oss",
    "ggml-org/gpt-oss-120b-GGUF": "gpt-oss",
    "llama3.1:8b": "llama3",
    "llama3.2:3b": "llama3",
    "Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf": "llama3",
    "library/llama3.3:70b": "llama3",
    "mistral-small3.2:24b": "mistral",
    "mistral-nemo:12b": "mistral",
    "devstral:24b": "devstral",
    "Devstral-Small-2507-Q4_K_M.gguf": "devstral",
    "magistral:24b": "magistral",
    "Ministral-3-14B-Reasoning-2512-Q4_K_M.gguf": "magistral",
    "gemma3:4b": "gemma3",
    "C:\\models\\gemma-3-270m-it-Q4_K_M.gguf": "gemma3",
    "gemma4:e4b": "gemma4",
    "granite3.3:8b": "granite",
    "granite4:tiny-h": "granite4",
    "phi4-mini:3.8b": "phi-4",
    "deepseek-r1:8b": "deepseek-r1",
    "hf.co/bartowski/DeepSeek-R1-Distill-Qwen-7B-GGUF:Q4_K_M": "deepseek-r1",
    "glm-4.5-air": "glm-4.5",
    "hf.co/unsloth/GLM-4.6-GGUF": "glm-4.5",
    "llama2:7b": "generic",
    "qwen3.5:9b": "generic",
    "tinyllama": "generic",
    "": "generic",
}


@pytest.mark.parametrize(("name", "expected"), NAMES.items())
def test_a_model_name_in_any_form_gets_its_family(name: str, expected: str) -> None:
    assert profile_for(name).name == expected


def test_names_are_normalised_from_tags_hub_references_and_files() -> None:
    assert normalise("hf.co/unsloth/Qwen3-8B-GGUF:Q4_K_M") == "qwen3-8b-gguf:q4-k-m"
    assert normalise("/models/Llama-3.2-3B.Q4_K_M.gguf") == "llama-3.2-3b.q4-k-m"
    assert normalise("registry.ollama.ai/library/qwen3:8b") == "qwen3:8b"


def test_the_table_holds_the_families_the_issue_names() -> None:
    names = {p.name for p in PROFILES}
    assert {
        "qwen3",
        "qwen3-coder",
        "qwen2.5-coder",
        "gpt-oss",
        "llama3",
        "mistral",
        "devstral",
        "magistral",
        "gemma3",
        "gemma4",
        "granite",
        "phi-4",
        "deepseek-r1",
        "glm-4.5",
    } <= names
    assert len(names) == len(PROFILES), "two profiles share a name"


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
def test_each_profile_is_consistent(profile) -> None:
    for pattern in profile.patterns:
        re.compile(pattern)
    assert profile.family
    if profile.thinking == "hybrid":
        assert profile.template_switch or profile.ollama_think != "none"
    if profile.thinking == "none":
        assert profile.think_budget is None and profile.reasoning_return == "never"
    if profile.think_budget is not None:
        assert 0 < profile.think_budget < DEFAULT_MAX_REPLY_TOKENS
    for sampling in (profile.sampling, profile.sampling_no_think or Sampling()):
        values = sampling.values()
        assert 0 <= values.get("temperature", 1) <= 2 and 0 < values.get("top_p", 1) <= 1


PARSED_AS = {"phi4": "tool_call_token"}
"""Formats the parser reports under another name (its ``source``)."""


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
def test_each_family_text_format_is_read_by_the_parser(profile) -> None:
    tools = default_tools("/tmp").definitions()
    parsed = parse_tool_calls({"role": "assistant", "content": profile.call_example}, tools)
    assert parsed.type == "tool_calls" and parsed.calls[0].name == "read_file"
    assert parsed.source == PARSED_AS.get(profile.text_format, profile.text_format)
    arguments = {"path": "a b/ç.py", "start_line": 3}
    written = write_call(profile.text_format, "read_file", arguments)
    again = parse_tool_calls({"role": "assistant", "content": written}, tools)
    assert [(c.name, c.arguments) for c in again.calls] == [("read_file", arguments)]


def test_sampling_follows_the_makers() -> None:
    qwen = profile_for("qwen3:8b")
    assert qwen.sampling_for(True).values() == {
        "temperature": 0.6,
        "top_p": 0.95,
        "top_k": 20,
        "min_p": 0.0,
    }
    assert qwen.sampling_for(False).values() == {
        "temperature": 0.7,
        "top_p": 0.8,
        "top_k": 20,
        "min_p": 0.0,
    }
    assert profile_for("gpt-oss:20b").sampling.values() == {"temperature": 1.0, "top_p": 1.0}
    assert profile_for("devstral:24b").sampling.values() == {"temperature": 0.15}
    assert profile_for("granite3.3:8b").sampling.values() == {}
    assert GENERIC.sampling.values() == {}


def test_sampling_under_each_backend_names() -> None:
    coder = profile_for("qwen3-coder:30b")
    assert sampling_options(coder, False, "ollama")["repeat_penalty"] == 1.05
    openai = sampling_options(coder, False, "openai")
    assert openai["repeat_penalty"] == openai["repetition_penalty"] == 1.05
    assert sampling_options(profile_for("qwen3:8b"), False, "openai")["temperature"] == 0.7


def test_the_thinking_switch_per_family() -> None:
    qwen = profile_for("qwen3:8b")
    on = thinking_switch(qwen)
    assert (on.thinks, on.ollama_think, on.template_kwargs, on.soft_switch) == (
        True,
        True,
        {"enable_thinking": True},
        "",
    )
    off = thinking_switch(qwen, False)
    assert (off.thinks, off.ollama_think, off.template_kwargs, off.soft_switch) == (
        False,
        False,
        {"enable_thinking": False},
        " /no_think",
    )
    oss = thinking_switch(profile_for("gpt-oss:20b"), False)  # as little as it goes: low
    assert (oss.thinks, oss.ollama_think, oss.template_kwargs) == (
        True,
        "low",
        {"reasoning_effort": "low"},
    )
    assert thinking_switch(profile_for("gpt-oss:20b"), "high").ollama_think == "high"
    r1 = thinking_switch(profile_for("deepseek-r1:8b"), False)
    assert (r1.thinks, r1.ollama_think, r1.template_kwargs) == (
        False,
        False,
        {"enable_thinking": False},
    )
    magistral = thinking_switch(profile_for("magistral:24b"))  # no switch: nothing sent
    assert (magistral.thinks, magistral.ollama_think, magistral.template_kwargs) == (True, None, {})
    plain = thinking_switch(profile_for("qwen3-coder:30b"), True)
    assert (plain.thinks, plain.ollama_think, plain.template_kwargs) == (False, None, {})
    granite = thinking_switch(profile_for("granite3.3:8b"), True)
    assert granite.template_kwargs == {"thinking": True}


CALL = ToolCall("read_file", {"path": "calc.py"})


def test_a_text_call_is_stored_natively_or_as_written() -> None:
    text = "Reading.\n" + write_call("hermes", "read_file", {"path": "calc.py"})
    reply = Reply(content=text, thinking="plan")
    native = assistant_turn(reply, [CALL], profile_for("qwen3:8b"), prose="Reading.", turn=3)
    assert native == {
        "role": "assistant",
        "content": "Reading.",
        "thinking": "plan",
        "tool_calls": [{"function": {"name": "read_file", "arguments": {"path": "calc.py"}}}],
    }
    kept = assistant_turn(reply, [CALL], GENERIC, prose="Reading.")
    assert kept["content"] == text and "tool_calls" not in kept


def test_a_family_without_tool_calls_in_its_template_gets_every_call_as_text() -> None:
    granite = profile_for("granite3.3:8b")
    turn = assistant_turn(Reply(tool_calls=(CALL,)), [CALL], granite)
    assert turn["content"] == write_call("tool_call_token", "read_file", {"path": "calc.py"})
    assert "tool_calls" not in turn


def test_mistral_call_ids_are_nine_letters_and_digits_and_stable() -> None:
    mistral = profile_for("mistral-small3.2:24b")
    first = assistant_turn(Reply(tool_calls=(CALL, CALL)), [CALL, CALL], mistral, turn=4)
    again = assistant_turn(Reply(tool_calls=(CALL, CALL)), [CALL, CALL], mistral, turn=4)
    ids = [c["id"] for c in first["tool_calls"]]
    assert ids == [c["id"] for c in again["tool_calls"]] and len(set(ids)) == 2
    assert all(len(i) == 9 and i.isalnum() for i in ids)
    served = Reply(tool_calls=(ToolCall("read_file", {}, "abcDEF123"),))
    assert assistant_turn(served, [], mistral)["tool_calls"][0]["id"] == "abcDEF123"
    assert "id" not in assistant_turn(Reply(tool_calls=(CALL,)), [CALL], GENERIC)["tool_calls"][0]


HISTORY = [
    {"role": "system", "content": "s"},
    {"role": "user", "content": "task"},
    {"role": "assistant", "content": "", "thinking": "t1", "tool_calls": [CALL.to_wire()]},
    {"role": "tool", "content": "r1", "tool_name": "read_file"},
    {"role": "assistant", "content": "", "thinking": "t2"},  # empty: nudged
    {"role": "user", "content": "nudge"},
    {"role": "assistant", "content": "", "thinking": "t3", "tool_calls": [CALL.to_wire()]},
    {"role": "tool", "content": "r2", "tool_name": "read_file"},
    {"role": "tool", "content": "r3", "tool_name": "list_directory"},
]


def _thoughts(messages) -> list[str]:
    return [m["thinking"] for m in messages if m.get("thinking")]


def test_reasoning_goes_back_only_where_the_family_template_renders_it() -> None:
    assert _thoughts(wire_history(HISTORY, profile_for("qwen3:8b"))) == ["t3"]
    harmony = wire_history(HISTORY, profile_for("gpt-oss:20b"))
    assert _thoughts(harmony) == ["t1", "t3"]
    assert not any(m["role"] == "assistant" and not m.get("tool_calls") for m in harmony)
    assert _thoughts(wire_history(HISTORY, profile_for("deepseek-r1:8b"))) == []
    assert _thoughts(wire_history(HISTORY, GENERIC)) == []
    assert _thoughts(HISTORY) == ["t1", "t2", "t3"], "the history itself is never changed"


def test_tool_results_become_one_user_turn_per_round_without_a_tool_role() -> None:
    sent = wire_history(HISTORY, profile_for("gemma3:4b"))
    roles = [m["role"] for m in sent]
    assert roles == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    assert sent[-1]["content"] == "Result of read_file:\nr2\n\nResult of list_directory:\nr3"


def test_user_changes_from_localhand_toml() -> None:
    settings = read_profiles(
        {
            "profiles": {
                "qwen3": {"think": False, "think_budget": 1024, "sampling": {"temperature": 0.5}},
                "my-ft": {"patterns": ["my-ft"], "text_format": "hermes", "thinking": "none"},
            },
            "profile": {"think_budget": 0},
        }
    )
    qwen = settings.resolve("qwen3:8b")
    assert (qwen.name, qwen.think, qwen.think_budget) == ("qwen3", False, None)  # [profile] last
    assert qwen.sampling.values() == {"temperature": 0.5, "top_p": 0.95, "top_k": 20, "min_p": 0.0}
    assert settings.resolve("my-ft-7b").name == "my-ft"
    assert settings.resolve("gemma3:4b").name == "gemma3"
    assert read_profiles({}).resolve("qwen3:8b") == profile_for("qwen3:8b")
    forced = read_profiles({"localhand": {"profile": {"use": "mistral"}}}).resolve("my-model")
    assert forced.name == "mistral"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"profiles": {"qwen3": {"thinkk": True}}}, r"\[profiles.qwen3\]: thinkk: unknown field"),
        ({"profiles": {"qwen3": {"thinking": "maybe"}}}, "allowed: none, always, hybrid"),
        ({"profiles": {"qwen3": {"sampling": {"temp": 1}}}}, r"sampling.temp: unknown"),
        ({"profiles": {"qwen3": {"sampling": {"top_k": 2.5}}}}, "top_k must be a whole number"),
        ({"profiles": {"qwen3": {"think": "yes"}}}, "must be true or false"),
        ({"profiles": {"mine": {"think": True}}}, "needs patterns"),
        ({"profiles": {"mine": {"patterns": ["("]}}}, "not a regular expression"),
        ({"profile": {"use": "nope"}}, "no such profile"),
        ({"profile": {"patterns": ["x"]}}, r"patterns belong in a \[profiles.NAME\]"),
        ({"profiles": {"qwen3": {"think_budget": -5}}}, "whole number of tokens"),
    ],
)
def test_a_mistake_in_the_toml_names_the_key_and_what_is_allowed(data, message) -> None:
    with pytest.raises(ConfigError, match=message):
        read_profiles(data)

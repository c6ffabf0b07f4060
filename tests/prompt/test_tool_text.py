"""Tools a model can see: when the server's template drops tool schemas (Gemma 3), localhand
describes them in its system prompt once, in the family's call format, and the system turn of
every later request is the same (the cached prefix). Plus the first prompt's tokens in the
Result."""

from __future__ import annotations

import json
from pathlib import Path

from localhand.models._json_calls import TOOL_TEXT_MARK, plain_messages
from localhand.models.scripted import ScriptedModel, call
from localhand.profiles import profile_for
from localhand.prompt.tool_text import (
    describe_tools,
    known_window,
    sized_definitions,
    template_hides_tools,
    with_tool_text,
)
from localhand.testing.fake_ollama import FakeOllama
from localhand.tools import default_tools
from localhand.types import Reply, Usage
from served_helpers import read_a_file, served


def _systems(fake: FakeOllama) -> list[str]:
    return [request.body["messages"][0]["content"] for request in fake.openai_requests]


def test_gemma3_on_a_server_gets_the_tools_in_its_system_prompt_once(tmp_path: Path) -> None:
    with served("gemma-3-4b-it") as (fake, model):
        result = read_a_file(tmp_path, model)
        first, second = (request.body["messages"] for request in fake.openai_requests)
    assert result.status != "error", result.error
    system = first[0]["content"]
    assert system.count(TOOL_TEXT_MARK) == 1
    assert '```tool_code\nread_file(path="calc.py")\n```' in system  # Gemma 3's own format
    for name in ("read_file", "edit_file", "run_command"):
        assert f"- {name}(" in system
    assert second[:2] == first[:2]  # the cached prefix of the later request is unchanged


def test_families_whose_template_renders_tools_get_no_text(tmp_path: Path) -> None:
    with served("qwen3:8b") as (fake, model):
        read_a_file(tmp_path, model)
        systems = _systems(fake)
    assert systems and all(TOOL_TEXT_MARK not in system for system in systems)


def test_schema_mode_and_other_backends_describe_tools_themselves() -> None:
    gemma = profile_for("gemma3:4b")
    for mode, hidden in (("native", True), ("auto", True), ("schema", False)):
        with served("gemma3:4b", tool_mode=mode) as (_fake, model):
            assert template_hides_tools(gemma, model) is hidden
    assert not template_hides_tools(gemma, ScriptedModel([]))  # not a server


def test_schema_mode_fallback_replaces_the_text_with_its_own(tmp_path: Path) -> None:
    definitions = default_tools(tmp_path).definitions()
    gemma = profile_for("gemma3:4b")
    opening = [{"role": "system", "content": "Be careful."}, {"role": "user", "content": "Go"}]
    with served("gemma3:4b") as (_fake, model):
        with_text = with_tool_text(opening, gemma, definitions, model)
    assert TOOL_TEXT_MARK in with_text[0]["content"]
    plain = plain_messages(with_text, definitions)
    assert TOOL_TEXT_MARK not in plain[0]["content"]
    assert plain[0]["content"].startswith("Be careful.\n\nReply with exactly one JSON object")


def test_small_windows_get_short_descriptions(tmp_path: Path) -> None:
    long_winded = {
        "type": "function",
        "function": {
            "name": "probe",
            "description": "Probe the workspace. It takes long and says much.",
            "parameters": {"type": "object", "properties": {}},
        },
    }
    definitions = [*default_tools(tmp_path).definitions(), long_winded]
    gemma = profile_for("gemma3:4b")
    full = describe_tools(definitions, gemma)
    short = describe_tools(sized_definitions(definitions, 4096), gemma)
    assert "says much" in full and "says much" not in short
    assert "Probe the workspace" in short
    assert short.count("\n- ") == full.count("\n- ") == len(definitions)


def test_result_carries_the_first_prompt_tokens(tmp_path: Path) -> None:
    replies = [
        Reply(tool_calls=call("read_file", path="a.txt").tool_calls, usage=Usage(812, 20)),
        Reply(content="It says hello.", done_reason="stop", usage=Usage(900, 8)),
    ]
    result = read_a_file(tmp_path, ScriptedModel(replies, name="qwen3-8b"))
    assert result.first_prompt_tokens == 812  # type: ignore[attr-defined]
    assert result.tokens_in == 812 + 900  # type: ignore[attr-defined]
    assert result.to_dict()["first_prompt_tokens"] == 812  # type: ignore[attr-defined]


def test_a_small_window_gets_short_schemas_sent(tmp_path: Path) -> None:
    definitions = default_tools(tmp_path).definitions()
    assert sized_definitions(definitions, None) is definitions
    assert sized_definitions(definitions, 32768) is definitions
    short = sized_definitions(definitions, 4096)
    assert [d["function"]["name"] for d in short] == [d["function"]["name"] for d in definitions]
    assert len(json.dumps(short)) < len(json.dumps(definitions)) * 0.9
    edit = next(d for d in short if d["function"]["name"] == "edit_file")["function"]
    assert edit["parameters"]["required"] == ["path", "old_text", "new_text"]
    assert "description" not in edit["parameters"]["properties"]["old_text"]
    with served("qwen3:8b", context_length=4096) as (fake, model):
        read_a_file(tmp_path, model)
        sent = fake.openai_requests[0].body["tools"]
    assert [tool["function"] for tool in sent] == [tool["function"] for tool in short]


class Unreachable(ScriptedModel):
    @property
    def context_limit(self) -> int:  # type: ignore[override]
        raise ConnectionError("no server")


def test_a_window_that_cannot_be_told_yet_is_unknown() -> None:
    assert known_window(Unreachable([])) is None
    sized = ScriptedModel([])
    sized.context_limit = 2048
    assert known_window(sized) == 2048

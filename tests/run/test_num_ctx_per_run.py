"""Ollama's ``num_ctx`` is chosen once per run, before the first request, because every change
makes Ollama reload the model and lose its prompt cache; it grows mid-run only when a prompt
would otherwise be cut, with a warning that says so."""

from __future__ import annotations

from pathlib import Path

from localhand import Agent
from localhand.events import EventBus, EventLog
from localhand.models.ollama import OllamaModel
from localhand.prompt.context import GROWTH_PER_ITERATION, expected_tokens
from localhand.run.guardrails import Limits
from localhand.testing import FakeOllama


def read_call(path: str) -> dict:
    call = {"function": {"name": "read_file", "arguments": {"path": path}}}
    return {"content": "", "tool_calls": [call]}


def test_a_30_step_run_sends_one_num_ctx_and_loads_the_model_once(tmp_path: Path) -> None:
    for n in range(30):  # each read adds ~250 tokens, as the benchmark's 30-step task does
        (tmp_path / f"part{n}.txt").write_text(f"part {n}: " + "lorem ipsum dolor sit " * 45)
    script = [read_call(f"part{n}.txt") for n in range(30)] + ["All parts read."]
    warnings: list[str] = []
    with FakeOllama(script, models={"qwen3:8b": {}}) as fake:
        model = OllamaModel("qwen3:8b", fake.url, on_warning=warnings.append)
        limits = Limits(max_iterations=40, stall_iterations=None, repetition=None)
        result = Agent(model, tmp_path, limits=limits, require_action=False).run("Read all")
        windows = {request.options["num_ctx"] for request in fake.chat_requests}
        loads = list(fake.loads)
    assert result.termination_reason == "final_answer", result.output
    assert len(fake.chat_requests) == 31
    assert windows == {32768}, "one window for the whole run"
    assert loads == [("qwen3:8b", 32768)], "loaded once, before the first reply"
    assert not [w for w in warnings if "num_ctx" in w]


def test_a_prompt_that_outgrows_the_planned_window_grows_it_and_says_it_reloads(
    tmp_path: Path,
) -> None:
    (tmp_path / "big.txt").write_text("many words on a line of text, again and again\n" * 800)
    script = [read_call("big.txt"), "Read it."]
    warnings: list[str] = []
    bus, log = EventBus(), EventLog()
    bus.subscribe(log)
    with FakeOllama(script, models={"qwen3:8b": {}}) as fake:
        model = OllamaModel("qwen3:8b", fake.url, on_warning=warnings.append, num_ctx_min=2048)
        Agent(model, tmp_path, limits=Limits(max_iterations=3), bus=bus).run("Read big.txt")
        windows = [request.options["num_ctx"] for request in fake.chat_requests]
    assert windows[0] < windows[1]
    (grew,) = [w for w in warnings if "no longer fits" in w]
    assert f"num_ctx={windows[0]}" in grew and "reload" in grew


def test_the_expected_length_follows_the_iterations_and_the_budget() -> None:
    assert expected_tokens(1000, 10, None) == 1000 + 10 * GROWTH_PER_ITERATION
    assert expected_tokens(1000, 10, 2000) == 2000  # no prompt can pass the budget
    assert expected_tokens(1000, None, None) > expected_tokens(1000, 5, None)

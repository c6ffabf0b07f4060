"""The prefix warmed before a run needs it (``kept_cache.warm_prefix``): one request of one
token, on the slot the run will hold, whose system prompt and tools are exactly those the
run's first request opens with (so the server's cache holds them); nothing sent where there is
no slot to warm. The wait it saves on a real llama-server: ``benchmarks/kept_cache_bench.py``."""

from __future__ import annotations

from pathlib import Path

from localhand.config.settings import Settings
from localhand.run.task import Task
from localhand.session.api import run_task
from localhand.session.kept_cache import warm_prefix
from localhand.testing import FakeOllama

QWEN = {"qwen3:8b": {}}


def test_the_warm_request_opens_as_the_runs_first_request_does(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("Use tabs.\n")
    with FakeOllama(["ok", "Hello.", "Hello."], models=QWEN, props=True) as fake:
        settings = Settings(model="qwen3:8b", backend="openai", host=fake.url + "/v1")
        warm_prefix(settings, tmp_path)
        run_task(Task(description="Say hi", workspace=tmp_path, agentic=True), settings)
        warm, first, *_ = fake.openai_requests
    assert warm.body["max_tokens"] == 1 and first.body["max_tokens"] > 1
    assert warm.body["id_slot"] == first.body["id_slot"] == 0
    assert warm.body["tools"] == first.body["tools"]
    assert warm.body["messages"][0] == first.body["messages"][0], "the same system turn"
    assert warm.body["messages"][1:] == [{"role": "user", "content": ""}], "nothing of the task"


def test_nothing_is_sent_without_a_slot_to_warm(tmp_path: Path) -> None:
    with FakeOllama(models=QWEN) as fake:  # Ollama, and its /v1 without /props
        warm_prefix(Settings(model="qwen3:8b", backend="ollama", host=fake.url), tmp_path)
        openai = Settings(model="qwen3:8b", backend="openai", host=fake.url + "/v1")
        warm_prefix(openai, tmp_path)
        assert fake.chat_requests == [] and fake.openai_requests == []

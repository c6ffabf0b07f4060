"""Whether the server's template shows the tools, as llama-server's ``/apply-template`` says:
asked once per backend; a template that drops them gets the tools described in localhand's own
system prompt whatever the family's profile says, one that renders them gets none; a server
without the endpoint (404: Ollama's ``/v1``, vLLM) leaves it unknown and the profile decides."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from localhand.batch.endpoints import Endpoint
from localhand.batch.pool import EndpointPool
from localhand.batch.pooled import PooledModel
from localhand.models._json_calls import TOOL_TEXT_MARK
from localhand.models._template_probe import PROBE_TOOL, template_renders_tools
from localhand.profiles import profile_for
from localhand.prompt.system import call_format
from localhand.prompt.tool_text import template_hides_tools
from localhand.testing.fake_ollama import FakeOllama
from served_helpers import read_a_file, served


def _probes(fake: FakeOllama) -> list[Any]:
    return [request for request in fake.requests if request.path == "/apply-template"]


def test_a_template_that_drops_the_tools_gets_them_in_the_system_prompt(tmp_path: Path) -> None:
    # Qwen3's profile says its template renders tools: only the server can say this one does not
    with served("qwen3:8b", renders=False) as (fake, model):
        result = read_a_file(tmp_path, model)
        first, second = (request.body["messages"] for request in fake.openai_requests)
        probes = _probes(fake)
    assert result.status != "error", result.error
    assert model.template_renders_tools is False
    system = first[0]["content"]
    assert system.count(TOOL_TEXT_MARK) == 1
    assert "<tool_call>" in system  # Qwen's own call format, in the worked patterns too
    assert call_format(model, profile_for("qwen3:8b")) == "hermes"
    assert "- read_file(" in system
    assert second[0] == first[0]  # once, in the cached prefix
    assert len(probes) == 1  # asked once for the backend, not per request
    assert probes[0].body["tools"][0]["function"]["name"] == PROBE_TOOL


def test_a_template_that_renders_the_tools_gets_no_text_whatever_the_profile(
    tmp_path: Path,
) -> None:
    # Gemma 3's profile says its template drops tools; this server's template shows them
    with served("gemma-3-4b-it", renders=True) as (fake, model):
        read_a_file(tmp_path, model)
        systems = [request.body["messages"][0]["content"] for request in fake.openai_requests]
    assert systems and all(TOOL_TEXT_MARK not in system for system in systems)
    assert model.template_renders_tools is True


def test_a_server_without_apply_template_leaves_it_to_the_profile() -> None:
    with served("gemma3:4b", renders=None) as (fake, gemma):
        assert template_renders_tools(gemma.base_url, timeout=5) is None  # a 404
        assert gemma.template_renders_tools is None
        assert template_hides_tools(profile_for("gemma3:4b"), gemma)  # its profile says so
        assert [r.path for r in _probes(fake)] == ["/apply-template"] * 2
    with served("qwen3:8b", renders=None) as (_fake, qwen):
        assert not template_hides_tools(profile_for("qwen3:8b"), qwen)


def test_schema_mode_never_asks(tmp_path: Path) -> None:
    with served("qwen3:8b", renders=False, tool_mode="schema") as (fake, model):
        assert not template_hides_tools(profile_for("qwen3:8b"), model)
        assert not _probes(fake)


def test_a_server_that_does_not_answer_is_unknown(tmp_path: Path) -> None:
    with FakeOllama() as fake:
        url = fake.url
    assert template_renders_tools(url + "/v1", timeout=1) is None


def test_a_batch_task_sees_what_the_server_says(tmp_path: Path) -> None:
    with served("qwen3:8b", renders=False) as (fake, model):
        pool = EndpointPool([Endpoint(fake.url + "/v1", 1, "openai", models=("qwen3:8b",))])
        pooled = PooledModel(pool, "qwen3:8b", lambda endpoint: model, close_models=False)
        with pooled:
            assert pooled.server_kind == "openai"
            assert pooled.call_transport == "native"
            assert pooled.template_renders_tools is False
            assert template_hides_tools(profile_for("qwen3:8b"), pooled)

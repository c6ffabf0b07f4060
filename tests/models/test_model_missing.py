"""A model the server lacks, found by the first request of an explicit backend (which does not
probe before the run): the error names the models the server has, the same way for Ollama's
native API and OpenAI-compatible servers, over real HTTP to the fake Ollama."""

from __future__ import annotations

from pathlib import Path

import pytest

from localhand.config.settings import Settings
from localhand.errors import ModelNotFound
from localhand.models.missing import has_models, listed_names, pick_tool_model
from localhand.session.backend import select_backend
from localhand.testing import FakeOllama

MODELS = {"llama3.1:8b": {}, "gemma2:2b": {"tools": False}}
HELLO = [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize("backend", ["ollama", "openai"])
def test_the_first_request_for_a_missing_model_lists_the_servers_models(backend: str) -> None:
    with FakeOllama(models=MODELS) as fake:
        model = select_backend(Settings(backend=backend, host=fake.url, model="qwen2.5:7b"))
        with pytest.raises(ModelNotFound) as caught:
            model.chat(HELLO)
        listed = [r.path for r in fake.requests if r.path in ("/api/tags", "/v1/models")]
    message = str(caught.value)
    assert "does not have the model 'qwen2.5:7b'" in message
    assert "The models it has: gemma2:2b, llama3.1:8b." in message
    assert listed == ["/api/tags" if backend == "ollama" else "/v1/models"]  # once


@pytest.mark.parametrize("backend", ["ollama", "openai"])
def test_streamed_requests_list_them_too(backend: str) -> None:
    with FakeOllama(models=MODELS) as fake:
        model = select_backend(Settings(backend=backend, host=fake.url, model="nope"))
        with pytest.raises(ModelNotFound, match=r"The models it has: gemma2:2b, llama3\.1:8b"):
            list(model.stream(HELLO))


def test_an_empty_server_says_it_has_none() -> None:
    with FakeOllama(models={}) as fake:
        model = select_backend(Settings(backend="openai", host=fake.url, model="qwen3:8b"))
        with pytest.raises(ModelNotFound, match="It has no models yet"):
            model.chat(HELLO)


def test_listings_of_both_apis_are_read() -> None:
    tags = {"models": [{"name": "a:1b", "model": "a:1b"}, {"name": "b"}, {"size": 3}]}
    assert listed_names(tags) == ["a:1b", "b"]
    assert listed_names({"object": "list", "data": [{"id": "x"}, {"id": ""}]}) == ["x"]
    assert listed_names({"object": "list", "data": None}) == []  # Ollama's /v1 when empty
    assert listed_names("<html>") == []


def test_the_suggestion_is_a_model_that_takes_tools_of_a_known_family() -> None:
    candidates = [("all-minilm", False), ("zz-unknown:1b", True), ("qwen3:4b", True)]
    assert pick_tool_model(candidates) == "qwen3:4b"
    assert pick_tool_model([("zz-unknown:1b", True)]) == "zz-unknown:1b"
    assert pick_tool_model([("gemma2:2b", False), ("x", None)]) is None


def test_a_long_listing_is_cut() -> None:
    names = [f"m{i:03}" for i in range(25)]
    text = has_models(names)
    assert "m019" in text and "m020" not in text and "and 5 more" in text


def test_localhand_run_without_the_default_model_exits_2_listing_the_models(
    tmp_path: Path,
) -> None:
    from cli_helpers import localhand

    with FakeOllama(models=MODELS) as fake:
        done = localhand("run", "say hi", "--workspace", str(tmp_path), host=fake.url)
        assert not fake.chat_requests  # no stand-in model ran the task either
    assert done.returncode == 2, done.stderr
    assert "does not have the model 'qwen3:8b'" in done.stderr
    assert "The models it has: gemma2:2b, llama3.1:8b." in done.stderr
    assert "--model llama3.1:8b" in done.stderr
    assert "embedded" not in done.stderr

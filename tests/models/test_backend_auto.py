"""``select_backend``: which backend each setting gives, and ``auto``'s fall-through from Ollama
to the embedded tiny model to a message saying how to get a model. Nothing here runs a model:
selection must stay cheap (the embedded model loads on its first request). So the embedded
extra is stood in for (``tiny``), and these tests run without it."""

from __future__ import annotations

import socket
from dataclasses import replace
from pathlib import Path

import pytest

from localhand.config.settings import Settings
from localhand.errors import ConfigError
from localhand.models.embedded import EmbeddedModel
from localhand.models.ollama import OllamaModel
from localhand.models.openai_compat import OpenAICompatModel
from localhand.session import backend as auto
from localhand.session.backend import select_backend
from localhand.testing import FakeOllama


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


@pytest.fixture(autouse=True)
def tiny(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The embedded extra as selection sees it: the tiny model's GGUF (a stand-in file: no
    model is loaded here) and llama-cpp-python importable."""
    gguf = tmp_path / "gemma-3-270m-q4_k_m.gguf"
    gguf.write_bytes(b"GGUF")
    monkeypatch.setattr(auto, "default_gguf", lambda: gguf)
    monkeypatch.setattr(auto, "embedded_available", lambda: True)
    return gguf.resolve()


def test_auto_uses_ollama_when_it_has_the_model(warnings: list[str]) -> None:
    with FakeOllama(models={"qwen3:8b": {}}) as fake:
        model = select_backend(Settings(host=fake.url), warnings.append)
        assert isinstance(model, OllamaModel)
        assert model.host == fake.url
        assert [r.path for r in fake.requests] == ["/api/tags"]  # one quick probe, no chat
    assert not warnings


def test_auto_honours_ollama_host(monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeOllama(models={"llama3.1:8b": {}}) as fake:
        monkeypatch.setenv("OLLAMA_HOST", fake.url)
        model = select_backend(Settings(model="llama3.1:8b"))
        assert isinstance(model, OllamaModel)
        assert model.name == "llama3.1:8b"


def test_the_default_model_ollama_lacks_is_an_error_suggesting_one_with_tools(
    warnings: list[str],
) -> None:
    # Not a silent switch to the tiny model: the user has models, and learns which.
    without_tools = {"tools": False}
    models = {"llama3.1:8b": {}, "gemma2:2b": without_tools, "nomic-embed-text": without_tools}
    with FakeOllama(models=models) as fake:
        with pytest.raises(ConfigError) as caught:
            select_backend(Settings(host=fake.url), warnings.append)
        assert not fake.chat_requests
    message = str(caught.value)
    assert "does not have the model 'qwen3:8b'" in message
    assert "ollama pull qwen3:8b" in message
    assert "gemma2:2b, llama3.1:8b, nomic-embed-text" in message
    assert "llama3.1:8b takes tools: --model llama3.1:8b" in message
    assert not warnings


def test_an_ollama_without_models_says_so(warnings: list[str]) -> None:
    with FakeOllama(models={}) as fake, pytest.raises(ConfigError, match="has no models") as caught:
        select_backend(Settings(host=fake.url), warnings.append)
    assert "It has no models yet" in str(caught.value)
    assert "ollama pull qwen3:8b" in str(caught.value)


def test_a_named_model_ollama_lacks_is_an_error_not_a_tiny_stand_in(
    warnings: list[str],
) -> None:
    with FakeOllama(models={"llama3.1:8b": {}, "qwen3:8b": {}}) as fake:
        with pytest.raises(ConfigError) as caught:
            select_backend(Settings(model="llama3.l:8b", host=fake.url), warnings.append)
        assert not fake.chat_requests
    message = str(caught.value)
    assert "does not have the model 'llama3.l:8b'" in message
    assert "ollama pull llama3.l:8b" in message
    assert "llama3.1:8b, qwen3:8b" in message
    assert not warnings


def test_auto_falls_back_when_ollama_is_down(warnings: list[str]) -> None:
    url = closed_port_url()
    model = select_backend(Settings(host=url), warnings.append)
    assert isinstance(model, EmbeddedModel)
    (warning,) = warnings
    assert f"Cannot reach Ollama at {url}" in warning
    assert "Retrying" not in warning  # the probe does not retry


def test_status_messages_go_to_the_warning_callback_by_default(warnings: list[str]) -> None:
    model = select_backend(Settings(host=closed_port_url()), warnings.append)
    assert isinstance(model, EmbeddedModel)
    model._status("loaded")
    assert warnings[-1] == "loaded"


def test_no_model_anywhere_says_how_to_get_one(
    monkeypatch: pytest.MonkeyPatch, warnings: list[str]
) -> None:
    monkeypatch.setattr(auto, "default_gguf", lambda: None)
    url = closed_port_url()
    with pytest.raises(ConfigError) as caught:
        select_backend(Settings(host=url), warnings.append)
    message = str(caught.value)
    assert f"Cannot reach Ollama at {url}" in message
    assert "ollama serve" in message
    assert "ollama pull qwen3:8b" in message
    assert "pip install 'localhand[embedded]'" in message
    assert "--backend embedded --model /path/to/model.gguf" in message
    assert "--backend openai" in message


def test_without_llama_cpp_the_message_says_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(auto, "embedded_available", lambda: False)
    with pytest.raises(ConfigError, match="llama-cpp-python is not"):
        select_backend(Settings(host=closed_port_url()))


def test_a_gguf_path_as_the_model_skips_ollama(tmp_path: Path) -> None:
    gguf = tmp_path / "my-model.Q4.gguf"
    gguf.write_bytes(b"GGUF")
    with FakeOllama() as fake:
        model = select_backend(Settings(model=str(gguf), host=fake.url))
        assert fake.requests == []
    assert isinstance(model, EmbeddedModel)
    assert (model.path, model.name) == (gguf, "my-model.Q4")


def test_a_configured_gguf_is_the_fallback(tmp_path: Path, warnings: list[str]) -> None:
    gguf = tmp_path / "mine.gguf"
    gguf.write_bytes(b"GGUF")
    settings = Settings(host=closed_port_url(), gguf=str(gguf))
    model = select_backend(settings, warnings.append)  # type: ignore[arg-type]
    assert isinstance(model, EmbeddedModel)
    assert model.path == gguf
    assert "tiny" not in warnings[0]


def test_explicit_backends_do_not_probe(warnings: list[str], tiny: Path) -> None:
    with FakeOllama() as fake:
        ollama = select_backend(Settings(backend="ollama", host=fake.url, model="x"))
        openai = select_backend(
            Settings(backend="openai", host=fake.url, model="x", think="low", request_timeout=7)
        )
        embedded = select_backend(Settings(backend="embedded"))
        assert fake.requests == []
    assert isinstance(ollama, OllamaModel)
    assert isinstance(openai, OpenAICompatModel)
    assert openai.base_url == fake.url + "/v1"
    assert (openai.reasoning_effort, openai.request_timeout) == ("low", 7)
    assert isinstance(embedded, EmbeddedModel)
    assert embedded.path == tiny


def test_openai_tool_mode_comes_from_the_settings() -> None:
    model = select_backend(Settings(backend="openai", model="tiny", tool_mode="schema"))
    assert isinstance(model, OpenAICompatModel)
    assert model.tool_mode == "schema"


def test_embedded_without_any_gguf_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(auto, "default_gguf", lambda: None)
    with pytest.raises(ConfigError, match="needs a GGUF model file"):
        select_backend(Settings(backend="embedded"))


def test_an_unknown_backend_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown backend"):
        select_backend(replace(Settings(), backend="magic"))

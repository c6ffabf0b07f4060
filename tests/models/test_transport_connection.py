"""One ``Connection`` value for both network backends, and the keywords and attributes they
had before it: given either way, the same requests go out."""

from __future__ import annotations

import dataclasses

import pytest

from localhand.errors import ConfigError
from localhand.models.connection import Connection
from localhand.models.ollama import OllamaModel
from localhand.models.openai_compat import OpenAICompatModel
from localhand.testing import FakeOllama

USER = [{"role": "user", "content": "Say hello."}]


def test_the_defaults_are_the_backends_old_defaults() -> None:
    assert Connection() == Connection(
        host=None,
        api_key=None,
        request_timeout=300.0,
        first_request_timeout=900.0,
        connect_timeout=10.0,
        metadata_timeout=10.0,
        stream_idle_timeout=120.0,
        max_attempts=3,
        backoff=0.5,
        max_reply_tokens=4096,
    )
    for backend in (OllamaModel("m"), OpenAICompatModel("m")):
        assert backend.connection == Connection()


def test_a_connection_is_frozen_keeps_one_attempt_and_hides_its_key() -> None:
    connection = Connection("http://box:11434", api_key="sk-secret", max_attempts=0)
    assert connection.max_attempts == 1
    assert "sk-secret" not in repr(connection)
    with pytest.raises(dataclasses.FrozenInstanceError):
        connection.request_timeout = 1.0  # type: ignore[misc]


@pytest.mark.parametrize("backend", [OllamaModel, OpenAICompatModel])
def test_keywords_override_the_connection_they_come_with(backend: type) -> None:
    shared = Connection("http://127.0.0.1:9", request_timeout=60.0, max_attempts=5)
    model = backend("m", connection=shared, max_attempts=1)
    assert model.connection == dataclasses.replace(shared, max_attempts=1)
    assert (model.request_timeout, model.max_attempts) == (60.0, 1)
    assert backend("m", "http://127.0.0.1:8", connection=shared).connection.host == (
        "http://127.0.0.1:8"
    )
    with pytest.raises(TypeError, match="request_timout"):
        backend("m", request_timout=1.0)


def test_setting_an_attribute_replaces_the_connection_for_the_next_request() -> None:
    with FakeOllama(["one", "two"]) as fake, OllamaModel("qwen3:8b", fake.url) as model:
        before = model.connection
        model.request_timeout = 30
        model.max_reply_tokens = 123
        assert before.request_timeout == 300.0  # the old value is unchanged: frozen
        assert model.connection == dataclasses.replace(
            before, request_timeout=30, max_reply_tokens=123
        )
        assert model.transport.connection is model.connection
        model.chat(USER)
        model.max_attempts = 0
        assert model.max_attempts == 1
    assert fake.chat_requests[0].options["num_predict"] == 123


def test_a_connection_gives_the_address_the_key_and_the_ceiling() -> None:
    with FakeOllama(["native", "v1"]) as fake:
        server = Connection(fake.url, api_key="sekrit", max_reply_tokens=77)
        with OllamaModel("qwen3:8b", connection=server) as ollama:
            assert ollama.host == fake.url
            assert ollama.chat(USER).content == "native"
        with OpenAICompatModel("qwen3:8b", connection=server) as openai:
            assert openai.base_url == fake.url + "/v1"
            assert openai.max_tokens == openai.max_reply_tokens == 77
            assert openai.chat(USER).content == "v1"
    native, v1 = fake.chat_requests[0], fake.openai_requests[0]
    assert native.options["num_predict"] == 77 and v1.body["max_tokens"] == 77
    for request in (native, v1):
        assert {k.lower(): v for k, v in request.headers.items()}["authorization"] == (
            "Bearer sekrit"
        )


def test_max_tokens_is_the_openai_backends_name_for_the_ceiling() -> None:
    model = OpenAICompatModel("m", connection=Connection(max_reply_tokens=5), max_tokens=None)
    assert model.connection.max_reply_tokens is None
    model.max_tokens = 9
    assert model.connection.max_reply_tokens == 9
    with pytest.raises(ConfigError, match="one setting"):
        OpenAICompatModel("m", max_tokens=1, max_reply_tokens=2)

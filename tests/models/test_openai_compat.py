"""OpenAICompatModel against the fake server's ``/v1``: real sockets, the backend's own httpx
client (``test_fake_ollama_v1`` checks the fake against the official ``openai`` SDK)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from backend_helpers import CALL, TOOLS, USER, building
from localhand.errors import (
    BadResponse,
    ConfigError,
    ModelNotFound,
    ModelTimeout,
    ServerUnavailable,
    ToolsUnsupported,
)
from localhand.models._openai_wire import base_url, to_openai_messages
from localhand.models.base import ChatModel, ChatOptions
from localhand.models.openai_compat import OpenAICompatModel
from localhand.parsing import call_schema
from localhand.testing import FakeOllama, Fault
from localhand.types import ToolCall

CALLED = {"role": "assistant", "content": "", **CALL}

Make = Callable[..., OpenAICompatModel]


@pytest.fixture
def make(warnings: list[str]) -> Iterator[Make]:
    """Builds backends with tiny timeouts and no real backoff, and closes them afterwards."""
    yield from building(OpenAICompatModel, warnings)


def sent(fake: FakeOllama, index: int = -1) -> dict[str, Any]:
    return fake.openai_requests[index].body


def header(fake: FakeOllama, name: str, request: Any = None) -> str:
    headers = (request or fake.openai_requests[-1]).headers
    return next(v for k, v in headers.items() if k.lower() == name)


def headers_of(request: Any) -> dict[str, str]:
    return {k.lower(): v for k, v in request.headers.items()}


# -- happy paths -------------------------------------------------------------------------------
def test_tool_calls_come_back_with_ids_and_parsed_arguments(
    fake: FakeOllama, warnings: list[str], make: Make
) -> None:
    fake.add({**CALL, "thinking": "Look first."})
    model = make(fake)
    assert isinstance(model, ChatModel)
    reply = model.chat(USER, tools=TOOLS)
    (call,) = reply.tool_calls
    assert (call.name, call.arguments) == ("list_files", {"path": "."})
    assert call.id is not None
    assert call.id.startswith("call_")
    assert reply.thinking == "Look first."
    assert reply.done_reason == "tool_calls"
    assert reply.model == "qwen3:8b"
    assert reply.usage.prompt_tokens > 0
    assert reply.usage.completion_tokens > 0
    body = sent(fake)
    assert body["stream"] is False
    assert body["tools"][0]["function"]["name"] == "list_files"
    assert "response_format" not in body
    assert header(fake, "authorization").startswith("Bearer ")
    assert not warnings


def test_reasoning_content_and_length(make: Make) -> None:
    item = {"content": "Partly", "thinking": "Hmm.", "done_reason": "length"}
    with FakeOllama([item], openai_reasoning_field="reasoning_content") as fake:
        reply = make(fake).chat(USER)
    assert (reply.content, reply.thinking, reply.done_reason) == ("Partly", "Hmm.", "length")


def test_history_goes_out_in_openai_shape(fake: FakeOllama, make: Make) -> None:
    seen: list[dict[str, Any]] = []
    fake.add(lambda native: seen.append(native) or "Done.")
    history = [
        *USER,
        {
            "role": "assistant",
            "content": "",
            "thinking": "hm",
            "tool_calls": [
                {"id": "call_a", "function": {"name": "list_files", "arguments": {"path": "."}}},
                {"function": {"name": "read_file", "arguments": {"path": "b.py"}}},  # no id
            ],
        },
        {"role": "tool", "content": "b.py text", "tool_name": "read_file"},
        {
            "role": "tool",
            "content": "a.py b.py",
            "tool_name": "list_files",
            "tool_call_id": "call_a",
        },
        {"role": "tool", "content": "stray", "tool_name": "run_command"},  # answers nothing
    ]
    assert make(fake).chat(history).content == "Done."
    messages = sent(fake)["messages"]
    assistant = messages[1]
    assert assistant["content"] is None
    assert [c["id"] for c in assistant["tool_calls"]] == ["call_a", "call_1_1"]
    assert all(c["type"] == "function" for c in assistant["tool_calls"])
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {"path": "."}
    assert [(m["role"], m.get("tool_call_id")) for m in messages[2:]] == [
        ("tool", "call_1_1"),
        ("tool", "call_a"),
        ("user", None),
    ]
    assert messages[4]["content"] == "Result of run_command:\nstray"
    # Ollama itself resolved each result's tool from its id:
    assert [m.get("tool_name") for m in seen[0]["messages"][2:4]] == ["read_file", "list_files"]


@pytest.mark.parametrize(
    ("host", "url"),
    [
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080/v1"),
        ("http://127.0.0.1:8080/", "http://127.0.0.1:8080/v1"),
        ("http://127.0.0.1:8080/v1/", "http://127.0.0.1:8080/v1"),
        ("127.0.0.1:1234/v1", "http://127.0.0.1:1234/v1"),
        ("https://box.lan/openai/v1", "https://box.lan/openai/v1"),
    ],
)
def test_host_with_or_without_v1(host: str, url: str) -> None:
    assert base_url(host) == url


def test_host_with_v1_reaches_the_server(fake: FakeOllama, make: Make) -> None:
    fake.add("a", "b")
    assert make(fake.url + "/v1").chat(USER).content == "a"
    assert make(fake.url + "/v1/").chat(USER).content == "b"


def test_format_becomes_response_format_without_tools(fake: FakeOllama, make: Make) -> None:
    seen: list[dict[str, Any]] = []
    fake.add(lambda native: seen.append(native) or '{"name": "list_files", "arguments": {}}')
    schema = call_schema(TOOLS)
    reply = make(fake).chat(USER, tools=TOOLS, options=ChatOptions(format=schema))
    assert reply.content == '{"name": "list_files", "arguments": {}}'
    assert reply.tool_calls == ()  # a format reply is JSON for the caller, not a call
    body = sent(fake)
    assert "tools" not in body
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "reply", "schema": schema},
    }
    assert seen[0]["format"] == schema


def test_settings_are_passed(fake: FakeOllama, make: Make) -> None:
    fake.add("ok")
    model = make(
        fake,
        reasoning_effort="low",
        max_tokens=99,
        temperature=0.1,
        extra_body={"top_k": 20},
        api_key="sekrit",
        context_length=8192,
    )
    assert model.context_limit == 8192
    assert make(fake).context_limit is None  # unknown: the server keeps its own window
    model.chat(USER)
    body = sent(fake)
    assert (body["reasoning_effort"], body["max_tokens"]) == ("low", 99)
    assert (body["temperature"], body["top_k"]) == (0.1, 20)
    assert header(fake, "authorization") == "Bearer sekrit"


def test_the_wire_carries_what_the_sdk_sent(
    fake: FakeOllama, make: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    fake.add("one", "two")
    model = make(fake)
    model.chat(USER)
    model.list_models()
    list(model.stream(USER))
    # (GET /props: the slot a llama-server would give this backend, test_server_figures.py)
    chat, models, stream = [r for r in fake.requests if r.path != "/props"]
    assert (chat.method, chat.path) == ("POST", "/v1/chat/completions")
    assert (models.method, models.path) == ("GET", "/v1/models")
    sent_chat = headers_of(chat)
    assert sent_chat["authorization"] == "Bearer no-key-needed"  # local servers want none
    assert sent_chat["content-type"] == "application/json"
    assert sent_chat["accept"] == "application/json"
    assert sent_chat["user-agent"].startswith("localhand (")
    assert "content-type" not in headers_of(models)  # a GET has no body
    assert headers_of(models)["authorization"] == "Bearer no-key-needed"
    assert headers_of(stream)["accept"] == "text/event-stream"
    assert headers_of(stream)["content-type"] == "application/json"
    assert (stream.body["stream"], stream.body["stream_options"]) == (True, {"include_usage": True})


def test_the_api_key_comes_from_the_argument_or_openai_api_key(
    fake: FakeOllama, make: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "from-env")
    fake.add("a", "b")
    make(fake).chat(USER)
    assert header(fake, "authorization") == "Bearer from-env"
    make(fake, api_key="given").chat(USER)
    assert header(fake, "authorization") == "Bearer given"


def test_extra_body_is_merged_into_the_body_and_wins(fake: FakeOllama, make: Make) -> None:
    fake.add("a", {"content": "b"})
    extra = {"top_k": 20, "temperature": 0.7, "chat_template_kwargs": {"enable_thinking": False}}
    model = make(fake, temperature=0.1, extra_body=extra)
    model.chat(USER)
    body = sent(fake)
    assert (body["top_k"], body["temperature"]) == (20, 0.7)  # as the SDK merged extra_body
    assert body["chat_template_kwargs"] == {"enable_thinking": False}
    assert "extra_body" not in body
    list(model.stream(USER))
    assert (sent(fake)["top_k"], sent(fake)["stream"]) == (20, True)


def test_openai_base_url_is_honoured(
    fake: FakeOllama, monkeypatch: pytest.MonkeyPatch, make: Make
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", fake.url + "/v1/")
    fake.add("from the environment")
    model = OpenAICompatModel("qwen3:8b", backoff=0.0)
    try:
        assert model.base_url == fake.url + "/v1"
        assert model.chat(USER).content == "from the environment"
    finally:
        model.close()
    monkeypatch.delenv("OPENAI_BASE_URL")
    assert OpenAICompatModel("m").base_url == "http://127.0.0.1:8080/v1"


@pytest.mark.parametrize("host", ["http://[::1", "http://127.0.0.1:99999", "ftp://box", "http://"])
def test_an_unusable_host_is_a_config_error(host: str) -> None:
    with pytest.raises(ConfigError, match="not a valid server address"):
        OpenAICompatModel("m", host)


def test_the_backend_does_not_import_the_openai_sdk(fake: FakeOllama) -> None:
    fake.add("hello")
    code = (
        "import sys\n"
        "from localhand.models.openai_compat import OpenAICompatModel\n"
        f"with OpenAICompatModel('qwen3:8b', {fake.url!r}) as model:\n"
        "    assert model.chat([{'role': 'user', 'content': 'hi'}]).content == 'hello'\n"
        "    assert model.list_models()\n"
        "print(sorted(m for m in sys.modules if m == 'openai' or m.startswith('openai.')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


# -- schema mode -----------------------------------------------------------------------------
def test_schema_mode_asks_for_json_and_decodes_it(fake: FakeOllama, make: Make) -> None:
    fake.add('{"name": "list_files", "arguments": {"path": "src"}}', '{"final_answer": "Done."}')
    model = make(fake, tool_mode="schema")
    result = {"role": "tool", "content": "x", "tool_name": "list_files"}
    history = [*USER, CALLED, result]
    call = model.chat(history, tools=TOOLS).tool_calls[0]
    assert (call.name, call.arguments) == ("list_files", {"path": "src"})
    body = sent(fake)
    assert "tools" not in body
    schema = body["response_format"]["json_schema"]["schema"]
    assert schema == call_schema(TOOLS, allow_final_answer=True)
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["system", "user", "assistant", "user"]
    assert "list_files(path?: string)" in body["messages"][0]["content"]
    assert json.loads(body["messages"][2]["content"])["name"] == "list_files"
    final = model.chat(USER, tools=TOOLS)
    assert (final.content, final.tool_calls) == ("Done.", ())


def test_refused_tools_switch_auto_mode_to_schema(
    fake: FakeOllama, warnings: list[str], make: Make
) -> None:
    fake.add('{"name": "list_files", "arguments": {}}')
    model = make(fake, model="gemma2:2b")
    reply = model.chat(USER, tools=TOOLS)
    assert reply.tool_calls == (ToolCall("list_files", {}),)
    assert model.tool_mode == "schema"
    assert "gemma2:2b does not support tools" in warnings[0]
    assert "schema mode" in warnings[0]
    assert [("tools" in r.body) for r in fake.openai_requests] == [True, False]


def test_refused_tools_in_native_mode_say_what_to_do(fake: FakeOllama, make: Make) -> None:
    fake.add("unused")
    with pytest.raises(ToolsUnsupported, match="does not support tools"):
        make(fake, model="gemma2:2b", tool_mode="native").chat(USER, tools=TOOLS)
    assert fake.remaining == 1


def test_response_format_falls_back_to_llama_cpp_dialect(
    fake: FakeOllama, warnings: list[str], make: Make
) -> None:
    refusal = "1 validation error: response_format.type Input should be 'text' or 'json_object'"
    fake.add(Fault.status(422, refusal), "{}", "{}")
    model = make(fake)
    fmt = ChatOptions(format={"type": "object"})
    assert model.chat(USER, options=fmt).content == "{}"
    model.chat(USER, options=fmt)
    formats = [r.body["response_format"] for r in fake.openai_requests]
    assert formats[0]["type"] == "json_schema"
    assert formats[1:] == [{"type": "json_object", "schema": {"type": "object"}}] * 2
    assert not warnings


# -- failures ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "fault",
    [Fault.status(500), Fault.status(503), Fault.status(429), Fault.reset(), Fault.non_json()],
)
def test_transient_failures_are_retried(warnings: list[str], fault: Fault, make: Make) -> None:
    with FakeOllama([fault, "recovered"]) as fake:
        assert make(fake).chat(USER).content == "recovered"
    assert len(warnings) == 1
    assert "Retrying" in warnings[0]
    assert "attempt 2 of 3" in warnings[0]


def test_retries_back_off_and_give_up(warnings: list[str], make: Make) -> None:
    slept: list[float] = []
    with FakeOllama([Fault.status(503)] * 3) as fake:
        model = make(fake, backoff=0.25, sleep=slept.append)
        with pytest.raises(BadResponse, match="HTTP 503") as caught:
            model.chat(USER)
    assert caught.value.status == 503
    assert slept == [0.25, 0.5]
    assert len(warnings) == 2


def test_unknown_model_names_it_and_is_not_retried(fake: FakeOllama, make: Make) -> None:
    fake.add("unused")
    with pytest.raises(ModelNotFound) as caught:
        make(fake, model="qwen9:1b").chat(USER)
    assert "qwen9:1b" in str(caught.value)
    assert fake.url in str(caught.value)
    assert len(fake.openai_requests) == 1
    assert fake.remaining == 1


def test_a_400_is_not_retried(fake: FakeOllama, make: Make) -> None:
    fake.add(Fault.status(400, "bad things"), "unused")
    with pytest.raises(BadResponse, match="HTTP 400: bad things"):
        make(fake).chat(USER)
    assert fake.remaining == 1


def test_context_overflow_says_how_to_fix_it(fake: FakeOllama, make: Make) -> None:
    fake.add(Fault.status(400, "the request exceeds the available context size"))
    with pytest.raises(BadResponse, match="larger context"):
        make(fake).chat(USER)


def test_a_wrong_path_is_not_a_missing_model(fake: FakeOllama, make: Make) -> None:
    with pytest.raises(BadResponse, match="OpenAI-compatible base URL"):
        make(fake.url + "/api").chat(USER)


def test_server_down_names_the_host(warnings: list[str], make: Make) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(ServerUnavailable) as caught:
        make(f"http://127.0.0.1:{port}").chat(USER)
    assert f"127.0.0.1:{port}/v1" in str(caught.value)
    assert "--host" in str(caught.value)
    assert len(warnings) == 2  # two retries, then the error


def test_a_hung_request_times_out_without_retrying(fake: FakeOllama, make: Make) -> None:
    fake.add(Fault.hang(30))
    start = time.monotonic()
    with pytest.raises(ModelTimeout, match="first_request_timeout"):
        make(fake, first_request_timeout=0.5).chat(USER)
    assert time.monotonic() - start < 3
    assert len(fake.openai_requests) == 1


def test_the_task_deadline_caps_the_request(fake: FakeOllama, make: Make) -> None:
    fake.add(Fault.hang(30))
    start = time.monotonic()
    with pytest.raises(ModelTimeout, match="longer --timeout"):
        make(fake).chat(USER, options=ChatOptions(timeout=0.5))
    assert time.monotonic() - start < 3


def test_models_are_listed(make: Make) -> None:
    with FakeOllama(models={"qwen3:8b": {}, "someone/coder:7b": {}}) as fake:
        model = make(fake)
        assert model.list_models() == ["qwen3:8b", "someone/coder:7b"]
    with FakeOllama(models={}) as empty:
        assert make(empty).list_models() == []


def test_bad_settings_are_config_errors() -> None:
    with pytest.raises(ConfigError):
        OpenAICompatModel("", "http://127.0.0.1:1")
    with pytest.raises(ConfigError, match="tool_mode"):
        OpenAICompatModel("m", "http://127.0.0.1:1", tool_mode="magic")  # type: ignore[arg-type]


def test_orphan_results_and_plain_messages_convert() -> None:
    out = to_openai_messages([{"role": "tool", "content": "x", "tool_name": "t"}, *USER])
    assert out == [{"role": "user", "content": "Result of t:\nx"}, *USER]

"""OllamaModel against the fake Ollama server: real sockets, Ollama's wire format."""

from __future__ import annotations

import http.server
import shutil
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
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
from localhand.models.base import ChatModel, ChatOptions
from localhand.models.ollama import OllamaModel
from localhand.models.tokens import estimate_prompt_tokens
from localhand.testing import FakeOllama, Fault
from localhand.types import ToolCall

Make = Callable[..., OllamaModel]


@pytest.fixture
def make(warnings: list[str]) -> Iterator[Make]:
    """Builds backends with tiny timeouts and no real backoff, and closes them afterwards."""
    yield from building(OllamaModel, warnings)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def text(chars: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": "y" * chars}]


# -- happy paths -------------------------------------------------------------------------------
def test_native_tool_calls_become_a_reply(
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
    assert reply.content == ""
    assert reply.model == "qwen3:8b"
    assert reply.done_reason == "stop"
    assert reply.usage.prompt_tokens > 0
    assert reply.usage.completion_tokens > 0
    sent = fake.chat_requests[0].body
    assert sent["stream"] is False
    assert sent["tools"][0]["function"]["name"] == "list_files"
    assert not warnings


def test_content_reply_keeps_thinking_apart(
    fake: FakeOllama, warnings: list[str], make: Make
) -> None:
    fake.add({"content": "Two files.", "thinking": "Counting...", "done_reason": "length"})
    reply = make(fake).chat(USER)
    assert reply.content == "Two files."
    assert reply.thinking == "Counting..."
    assert reply.done_reason == "length"


def test_history_goes_out_in_ollamas_shape(
    fake: FakeOllama, warnings: list[str], make: Make
) -> None:
    fake.add(CALL, "Done.")
    model = make(fake)
    first = model.chat(USER, tools=TOOLS)
    history = [
        *USER,
        first.to_message(),
        {"role": "tool", "content": "a.py", "tool_name": "list_files"},
    ]
    model.chat(history, tools=TOOLS)
    sent = fake.chat_requests[1].body["messages"]
    assert sent[1]["tool_calls"] == [
        {"function": {"name": "list_files", "arguments": {"path": "."}}}
    ]
    assert sent[2] == {"role": "tool", "content": "a.py", "tool_name": "list_files"}


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [('{"path": "src"}', {"path": "src"}), ("not json", {"__raw__": "not json"}), ("", {})],
)
def test_string_arguments_from_other_servers(
    warnings: list[str], arguments: str, expected: dict[str, Any], make: Make
) -> None:
    item = {"tool_calls": [{"function": {"name": "list_files", "arguments": arguments}}]}
    with FakeOllama([item]) as fake:
        reply = make(fake).chat(USER, tools=TOOLS)
    assert reply.tool_calls == (ToolCall("list_files", expected, reply.tool_calls[0].id),)


def test_think_keep_alive_and_options_are_passed(
    fake: FakeOllama, warnings: list[str], make: Make
) -> None:
    fake.add("a", "b")
    make(fake, think="high", keep_alive="30m", options={"temperature": 0}).chat(USER)
    make(fake).chat(USER)
    tuned, plain = (r.body for r in fake.chat_requests)
    assert tuned["think"] == "high"
    assert tuned["keep_alive"] == "30m"
    assert tuned["options"]["temperature"] == 0
    assert "think" not in plain
    assert "keep_alive" not in plain


def test_format_is_sent_without_tools(fake: FakeOllama, warnings: list[str], make: Make) -> None:
    schema = {"type": "object", "properties": {"done": {"type": "boolean"}}}
    fake.add('{"done": true}')
    reply = make(fake).chat(USER, tools=TOOLS, options=ChatOptions(format=schema))
    sent = fake.chat_requests[0].body
    assert sent["format"] == schema
    assert not sent.get("tools")
    assert reply.content == '{"done": true}'


# -- the context window ------------------------------------------------------------------------
def test_num_ctx_is_always_sent_and_sized_from_the_prompt(warnings: list[str], make: Make) -> None:
    with FakeOllama(["a", "b"]) as fake:
        model = make(fake)
        model.chat(USER)
        small = model.num_ctx
        assert fake.chat_requests[0].options["num_ctx"] == small == 8192
        model.chat(text(60_000))  # ~15k tokens + the reply reserve
        assert fake.chat_requests[1].options["num_ctx"] == model.num_ctx == 32768


def test_num_ctx_only_grows(warnings: list[str], make: Make) -> None:
    with FakeOllama(["a", "b", "c"]) as fake:
        model = make(fake)
        for messages in (USER, text(30_000), USER):
            model.chat(messages)
    assert [r.options["num_ctx"] for r in fake.chat_requests] == [8192, 16384, 16384]


def test_a_window_already_loaded_is_kept_so_the_model_is_not_reloaded(make: Make) -> None:
    with FakeOllama(["a", "b", "c"]) as fake:
        fake.preload("qwen3:8b", 16384)  # an earlier run grew it
        make(fake).chat(USER)
        make(fake).chat(text(30_000))  # the next run needs that much: still no reload
        assert [r.options["num_ctx"] for r in fake.chat_requests] == [16384, 16384]
        assert fake.loads == []
        fake.preload("qwen3:8b", 2048)  # too small for our minimum: reload at ours
        make(fake).chat(USER)
        assert fake.chat_requests[-1].options["num_ctx"] == 8192
        assert fake.loads == [("qwen3:8b", 8192)]


def test_a_loaded_window_beyond_the_maximum_is_not_adopted(make: Make) -> None:
    with FakeOllama(["a"]) as fake:
        fake.preload("qwen3:8b", 65536)
        make(fake, num_ctx_max=32768).chat(USER)
    assert fake.chat_requests[0].options["num_ctx"] == 8192


def test_num_ctx_is_bounded_by_the_maximum(warnings: list[str], make: Make) -> None:
    with FakeOllama(["a"]) as fake:
        make(fake, num_ctx_max=12000).chat(text(200_000))
    assert fake.chat_requests[0].options["num_ctx"] == 12000


def test_num_ctx_is_bounded_by_the_models_context_length(warnings: list[str], make: Make) -> None:
    with FakeOllama(["a"], models={"small:1b": {"context_length": 6000}}) as fake:
        model = make(fake, model="small:1b")
        model.chat(USER)
        assert model.context_length() == 6000
    assert fake.chat_requests[0].options["num_ctx"] == 6000
    assert sum(r.path == "/api/show" for r in fake.requests) == 1  # asked once, cached


def test_truncation_is_reported_once(warnings: list[str], make: Make) -> None:
    with FakeOllama(["a", "b"]) as fake:
        model = make(fake, num_ctx_max=8192)
        model.chat(text(50_000))
        model.chat(text(50_001))
    assert fake.chat_requests[0].options["num_ctx"] == 8192
    (warning,) = warnings
    assert "truncated" in warning
    assert "num_ctx=8192" in warning
    assert "num_ctx_max" in warning


def test_a_count_that_fills_the_window_warns(
    fake: FakeOllama, warnings: list[str], make: Make
) -> None:
    fake.add({"content": "a", "prompt_eval_count": 8192})
    make(fake).chat(USER)
    assert len(warnings) == 1
    assert "evaluated 8192 prompt tokens" in warnings[0]


def test_prompt_cache_hits_are_not_false_alarms(warnings: list[str], make: Make) -> None:
    first = text(20_000)
    second = [*first, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "next"}]
    with FakeOllama(["ok", "ok"], count_cached_tokens=False) as fake:
        model = make(fake)
        model.chat(first)
        reply = model.chat(second)
    assert reply.usage.prompt_tokens < estimate_prompt_tokens(second) / 10
    assert not warnings


def test_context_length_unknown_when_the_server_is_down(warnings: list[str], make: Make) -> None:
    model = make(f"http://127.0.0.1:{free_port()}")
    assert model.context_length() is None


# -- retries -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "fault",
    [Fault.status(500), Fault.status(502), Fault.status(503), Fault.reset(), Fault.non_json()],
)
def test_transient_failures_are_retried(warnings: list[str], fault: Fault, make: Make) -> None:
    with FakeOllama([fault, "recovered"]) as fake:
        reply = make(fake).chat(USER)
        assert reply.content == "recovered"
        assert len(fake.chat_requests) == 2
    (warning,) = warnings
    assert "Retrying" in warning
    assert "attempt 2 of 3" in warning


def test_retries_back_off_exponentially_and_give_up(warnings: list[str], make: Make) -> None:
    slept: list[float] = []
    with FakeOllama([Fault.status(503)] * 3) as fake:
        model = make(fake, backoff=0.25, sleep=slept.append)
        with pytest.raises(BadResponse, match="HTTP 503") as caught:
            model.chat(USER)
        assert len(fake.chat_requests) == 3
    assert slept == [0.25, 0.5]
    assert caught.value.retryable
    assert caught.value.status == 503


def test_connection_refused_then_the_server_comes_up(warnings: list[str], make: Make) -> None:
    port = free_port()
    servers: list[FakeOllama] = []

    def start_server_while_backing_off(_: float) -> None:
        servers.append(FakeOllama(["up now"], port=port))

    model = make(f"127.0.0.1:{port}", sleep=start_server_while_backing_off)
    try:
        assert model.chat(USER).content == "up now"
    finally:
        for server in servers:
            server.close()
    assert len(servers) == 1
    assert len(warnings) == 1
    assert "Cannot reach Ollama" in warnings[0]


@pytest.mark.parametrize(
    ("model_name", "think", "tools", "error", "words"),
    [
        ("qwen9:1b", None, None, ModelNotFound, ["ollama pull qwen9:1b"]),
        ("gemma2:2b", None, TOOLS, ToolsUnsupported, ["qwen3", "llama3.1", "tool-capable"]),
        ("gemma2:2b", True, None, BadResponse, ["HTTP 400", "does not support thinking"]),
    ],
)
def test_no_retry_on_400_and_404(
    warnings: list[str],
    model_name: str,
    think: bool | None,
    tools: list[dict[str, Any]] | None,
    error: type[Exception],
    words: list[str],
    make: Make,
) -> None:
    with FakeOllama(["unused"]) as fake:
        model = make(fake, model=model_name, think=think)
        with pytest.raises(error) as caught:
            model.chat(USER, tools=tools)
        assert len(fake.chat_requests) == 1
        assert fake.remaining == 1
    message = str(caught.value)
    assert all(word in message for word in words), message
    assert "Traceback" not in message
    assert not warnings


# -- errors a person can act on ------------------------------------------------------------------
def test_server_down_names_the_host_and_ollama_host(warnings: list[str], make: Make) -> None:
    port = free_port()
    model = make(f"127.0.0.1:{port}", max_attempts=2)
    with pytest.raises(ServerUnavailable) as caught:
        model.chat(USER)
    message = str(caught.value)
    assert f"http://127.0.0.1:{port}" in message
    assert "OLLAMA_HOST" in message
    assert "ollama serve" in message
    assert len(warnings) == 1


def test_ollama_host_is_honoured_like_the_client(
    monkeypatch: pytest.MonkeyPatch, warnings: list[str]
) -> None:
    monkeypatch.setenv("OLLAMA_HOST", "0.0.0.0:11434")
    assert OllamaModel("qwen3:8b").host == "http://0.0.0.0:11434"
    with FakeOllama(["via env"]) as fake:
        monkeypatch.setenv("OLLAMA_HOST", f"127.0.0.1:{fake.port}")
        with OllamaModel("qwen3:8b", on_warning=warnings.append) as model:
            assert model.host == fake.url
            assert model.chat(USER).content == "via env"


def test_an_empty_model_name_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="qwen3:8b"):
        OllamaModel("")


def test_first_request_timeout_is_separate(warnings: list[str], make: Make) -> None:
    script = [Fault.hang(0.4, then="loaded"), Fault.hang(30)]
    with FakeOllama(script) as fake:
        model = make(fake, first_request_timeout=5.0, request_timeout=0.2)
        assert model.chat(USER).content == "loaded"  # slower than request_timeout: fine
        start = time.monotonic()
        with pytest.raises(ModelTimeout, match="request_timeout") as caught:
            model.chat(USER)
        assert time.monotonic() - start < 3
        assert len(fake.chat_requests) == 2  # timeouts are not retried
    assert "0.2 s" in str(caught.value)


def timed_out(fake: FakeOllama, ask: Callable[[], object]) -> tuple[str, float]:
    """``ask()`` of a server that hangs: the ModelTimeout's message, and how long it took."""
    fake.add(Fault.hang(30))
    start = time.monotonic()
    with pytest.raises(ModelTimeout) as caught:
        ask()
    return str(caught.value), time.monotonic() - start


def test_a_hung_first_request_times_out_quickly(
    fake: FakeOllama, warnings: list[str], make: Make
) -> None:
    message, took = timed_out(fake, lambda: make(fake, first_request_timeout=0.3).chat(USER))
    assert "first_request_timeout" in message and took < 3


def test_the_task_deadline_caps_the_request(
    fake: FakeOllama, warnings: list[str], make: Make
) -> None:
    options = ChatOptions(timeout=0.3)
    message, took = timed_out(fake, lambda: make(fake).chat(USER, options=options))
    assert "--timeout" in message and took < 3


# -- discovery ---------------------------------------------------------------------------------
def test_models_are_listed(warnings: list[str], make: Make) -> None:
    models = {"qwen3:8b": {}, "mistral-nemo:latest": {"tools": True, "thinking": False}}
    with FakeOllama(models=models) as fake:
        model = make(fake)
        assert model.list_models() == ["qwen3:8b", "mistral-nemo:latest"]


def test_list_models_when_the_server_is_down(warnings: list[str], make: Make) -> None:
    model = make(f"http://127.0.0.1:{free_port()}", max_attempts=1)
    with pytest.raises(ServerUnavailable):
        model.list_models()


# -- the wire, as the official client speaks it -----------------------------------------------
@pytest.mark.parametrize(
    "host",
    [
        None,
        "",
        "1.2.3.4",
        ":56789",
        "0.0.0.0:11434",
        "http://1.2.3.4",
        "https://1.2.3.4",
        "https://example.com:56789/path/",
        "example.com/path",
        "Example.COM:8080",
        "[0001:002:003:0004::1]",
        "[0001:002:003:0004::1]:56789/path/",
        "https://[::1]",
    ],
)
def test_hosts_are_read_as_the_official_client_reads_them(host: str | None) -> None:
    from ollama._client import _parse_host

    assert OllamaModel("qwen3:8b", host or None).host == _parse_host(host)


def test_a_host_with_a_bad_port_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="OLLAMA_HOST"):
        OllamaModel("qwen3:8b", "localhost:port")


def test_requests_carry_the_clients_headers_and_the_api_key(
    monkeypatch: pytest.MonkeyPatch, make: Make
) -> None:
    monkeypatch.setenv("OLLAMA_API_KEY", "secret-key")
    with FakeOllama(["hi", "there"]) as fake:
        model = make(fake)
        model.chat(USER)
        list(model.stream(USER))
    chat, streamed = fake.chat_requests
    for request in (chat, streamed):
        headers = {k.lower(): v for k, v in request.headers.items()}
        assert headers["authorization"] == "Bearer secret-key"
        assert headers["content-type"] == "application/json"
        assert headers["user-agent"].startswith("localhand")
    assert {k.lower(): v for k, v in chat.headers.items()}["accept"] == "application/json"
    assert chat.body["stream"] is False and streamed.body["stream"] is True


def test_a_redirect_to_https_says_to_give_the_https_address(tmp_path: Path, make: Make) -> None:
    """An http:// host gets a TLS context without CAs (no bundle to load at start-up), so a
    redirect to https must fail verification, and say what to do, not pass unverified."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    secure = http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    secure.socket = tls.wrap_socket(secure.socket, server_side=True)
    target = f"https://127.0.0.1:{secure.server_port}"

    class Redirect(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.send_response(307)
            self.send_header("Location", target + self.path)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    plain = http.server.HTTPServer(("127.0.0.1", 0), Redirect)
    threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in (secure, plain)]
    for thread in threads:
        thread.start()
    try:
        model = make(f"http://127.0.0.1:{plain.server_port}", max_attempts=1)
        with pytest.raises(BadResponse, match="https:// address"):
            model.chat(USER)
    finally:
        for server in (secure, plain):
            server.shutdown()
            server.server_close()


def test_text_with_every_kind_of_line_break_survives_chat_and_stream(make: Make) -> None:
    """The fake writes JSON as Go does: UTF-8 raw, U+2028/U+2029 escaped but U+0085 (and the
    C1 and separator characters ``str.splitlines`` breaks at) not. NDJSON is split at LF."""
    text = "a\u0085b\u2028c\u2029d\x1ce <tag> & é 中文"
    with FakeOllama([text, text]) as fake:
        model = make(fake)
        assert model.chat(USER).content == text
        streamed = "".join(chunk.content for chunk in model.stream(USER))
    assert streamed == text

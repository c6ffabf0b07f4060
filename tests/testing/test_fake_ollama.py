"""The fake Ollama server speaks Ollama's wire protocol: shapes, streaming, errors, faults."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import ollama
import pytest

from backend_helpers import function_tool
from localhand.testing import FakeOllama, Fault
from localhand.types import Reply, ToolCall

USER = [{"role": "user", "content": "hi"}]
TOOL = function_tool("read_file", "Read a file", "path")


@contextlib.contextmanager
def serving(script: Any = (), **kwargs: Any) -> Iterator[tuple[FakeOllama, httpx.Client]]:
    with FakeOllama(script, **kwargs) as fake, httpx.Client(base_url=fake.url, timeout=5) as http:
        yield fake, http


def chat(http: httpx.Client, **body: Any) -> httpx.Response:
    return http.post("/api/chat", json={"model": "qwen3:8b", "messages": USER, **body})


def ndjson(response: httpx.Response) -> list[dict[str, Any]]:
    return [json.loads(line) for line in response.text.splitlines() if line]


# -- plain endpoints ---------------------------------------------------------------------------
def test_root_version_and_unknown_paths(http: httpx.Client) -> None:
    assert http.get("/").text == "Ollama is running"
    assert http.head("/").status_code == 200
    assert http.get("/api/version").json() == {"version": "0.12.6"}
    assert http.get("/api/nothing").status_code == 404
    assert http.get("/api/chat").status_code == 405


def test_tags_lists_models_like_ollama() -> None:
    with (
        FakeOllama(models={"qwen3:8b": {}, "mistral-nemo": {}}) as fake,
        httpx.Client(base_url=fake.url) as http,
    ):
        models = http.get("/api/tags").json()["models"]
    assert [m["name"] for m in models] == ["qwen3:8b", "mistral-nemo"]
    first = models[0]
    assert first["model"] == "qwen3:8b"
    assert len(first["digest"]) == 64
    assert set(first["details"]) >= {"format", "family", "parameter_size", "quantization_level"}


def test_show_reports_capabilities_and_context_length() -> None:
    models = {
        "qwen3:8b": {"context_length": 40960, "thinking": True},
        "gemma2:2b": {"tools": False},
    }
    with FakeOllama(models=models) as fake, httpx.Client(base_url=fake.url) as http:
        shown = http.post("/api/show", json={"model": "qwen3:8b"}).json()
        legacy = http.post("/api/show", json={"name": "gemma2:2b"}).json()
        missing = http.post("/api/show", json={"model": "nope:1b"})
        no_name = http.post("/api/show", json={})
    assert shown["capabilities"] == ["completion", "tools", "thinking"]
    info = shown["model_info"]
    assert info[f"{info['general.architecture']}.context_length"] == 40960
    assert legacy["capabilities"] == ["completion"]
    assert missing.status_code == 404
    assert missing.json() == {"error": "model 'nope:1b' not found"}
    assert no_name.status_code == 400
    assert no_name.json() == {"error": "model is required"}


def test_ps_lists_loaded_models_with_their_window_and_loads_are_counted() -> None:
    with FakeOllama(["a", "b", "c"]) as fake, httpx.Client(base_url=fake.url) as http:
        assert http.get("/api/ps").json() == {"models": []}
        for num_ctx in (8192, 8192, 16384):
            body = {"model": "qwen3:8b", "messages": [{"role": "user", "content": "hi"}]}
            options = {"options": {"num_ctx": num_ctx}, "stream": False}
            assert http.post("/api/chat", json={**body, **options}).status_code == 200
        loaded = ollama.Client(host=fake.url).ps().models  # the official client reads it
        assert fake.loads == [("qwen3:8b", 8192), ("qwen3:8b", 16384)]  # a new window reloads
    assert [(m.model, m.context_length) for m in loaded] == [("qwen3:8b", 16384)]


# -- /api/chat ---------------------------------------------------------------------------------
def test_unstreamed_chat_has_ollamas_fields() -> None:
    with FakeOllama(["Hello there."]) as fake, httpx.Client(base_url=fake.url) as http:
        response = chat(http, stream=False)
    assert response.headers["content-type"] == "application/json; charset=utf-8"
    body = response.json()
    assert body["message"] == {"role": "assistant", "content": "Hello there."}
    assert body["done"] is True
    assert body["done_reason"] == "stop"
    assert body["model"] == "qwen3:8b"
    assert body["created_at"].endswith("Z")
    durations = ("load_duration", "prompt_eval_duration", "eval_duration")
    assert all(isinstance(body[k], int) and body[k] > 0 for k in durations)
    assert body["total_duration"] >= sum(body[k] for k in durations)  # nanoseconds
    assert body["prompt_eval_count"] > 0
    assert body["eval_count"] > 0


def test_tool_calls_and_thinking_come_back_natively() -> None:
    item = {
        "thinking": "I should read it.",
        "tool_calls": [{"function": {"name": "read_file", "arguments": {"path": "a.py"}}}],
    }
    with FakeOllama([item]) as fake, httpx.Client(base_url=fake.url) as http:
        message = chat(http, stream=False, tools=[TOOL]).json()["message"]
    assert message["content"] == ""
    assert message["thinking"] == "I should read it."
    (call,) = message["tool_calls"]
    assert call["id"].startswith("call_")
    assert call["function"] == {"index": 0, "name": "read_file", "arguments": {"path": "a.py"}}


@pytest.mark.parametrize("stream", [None, True])
def test_chat_streams_ndjson_by_default(stream: bool | None) -> None:
    item = {"content": "The sky is blue.", "thinking": "Rayleigh."}
    with FakeOllama([item]) as fake, httpx.Client(base_url=fake.url) as http:
        response = chat(http) if stream is None else chat(http, stream=True)
    assert response.headers["content-type"] == "application/x-ndjson"
    chunks = ndjson(response)
    assert len(chunks) > 3
    assert all(not c["done"] for c in chunks[:-1])
    assert "".join(c["message"]["content"] for c in chunks) == "The sky is blue."
    assert "".join(c["message"].get("thinking", "") for c in chunks) == "Rayleigh."
    assert chunks[-1]["done"]
    assert chunks[-1]["done_reason"] == "stop"
    assert chunks[-1]["eval_count"] > 0


def test_the_official_client_streams_from_it() -> None:
    with FakeOllama(["one two three"]) as fake, ollama.Client(host=fake.url) as client:
        parts = client.chat("qwen3:8b", USER, stream=True)
        assert "".join(p.message.content or "" for p in parts) == "one two three"


def test_unknown_model_is_a_404_that_keeps_the_script(fake: FakeOllama, http: httpx.Client) -> None:
    fake.add("reply")
    response = http.post("/api/chat", json={"model": "qwen9:1b", "messages": USER})
    assert response.status_code == 404
    assert response.json() == {"error": 'model "qwen9:1b" not found, try pulling it first'}
    assert fake.remaining == 1


def test_latest_tag_is_optional() -> None:
    with serving(["a", "b"], models={"mistral-nemo": {}, "qwen3:latest": {}}) as (_, http):
        one = http.post("/api/chat", json={"model": "mistral-nemo:latest", "messages": USER})
        two = http.post("/api/chat", json={"model": "QWEN3", "messages": USER})
        assert one.status_code == two.status_code == 200


def test_tools_for_a_model_without_tools_is_ollamas_400(fake: FakeOllama) -> None:
    fake.add("reply")
    with httpx.Client(base_url=fake.url) as http:
        body = {"model": "gemma2:2b", "messages": USER, "tools": [TOOL]}
        response = http.post("/api/chat", json=body)
        thinking = http.post(
            "/api/chat", json={"model": "gemma2:2b", "messages": USER, "think": True}
        )
    assert response.status_code == 400
    assert response.json() == {
        "error": "registry.ollama.ai/library/gemma2:2b does not support tools"
    }
    assert thinking.status_code == 400
    assert thinking.json() == {"error": '"gemma2:2b" does not support thinking'}
    assert fake.remaining == 1


def test_script_running_out_is_a_loud_500(http: httpx.Client) -> None:
    response = chat(http, stream=False)
    assert response.status_code == 500
    assert "script ran out" in response.json()["error"]


def test_callables_see_the_request_and_loads_need_no_script() -> None:
    with serving([lambda body: f"{len(body['messages'])} messages"]) as (_, http):
        load = http.post("/api/chat", json={"model": "qwen3:8b", "messages": []}).json()
        reply = chat(http, stream=False).json()
    assert load["done_reason"] == "load"
    assert reply["message"]["content"] == "1 messages"


def test_requests_are_recorded(http: httpx.Client, fake: FakeOllama) -> None:
    fake.add("ok")
    options = {"num_ctx": 8192, "temperature": 0}
    chat(
        http, stream=False, options=options, keep_alive="5m", think=False, format={"type": "object"}
    )
    (request,) = fake.chat_requests
    assert request.method == "POST"
    assert request.path == "/api/chat"
    assert request.options == options
    assert request.body["keep_alive"] == "5m"
    assert request.body["think"] is False
    assert request.body["format"] == {"type": "object"}
    assert request.body["messages"] == USER
    assert request.headers["Content-Type"] == "application/json"


# -- faults ------------------------------------------------------------------------------------
def test_status_faults_use_ollamas_error_body() -> None:
    script = [Fault.status(503), Fault.status(500, error="boom"), Fault.status(502)]
    with FakeOllama(script) as fake, httpx.Client(base_url=fake.url) as http:
        replies = [chat(http, stream=False) for _ in script]
    assert [r.status_code for r in replies] == [503, 500, 502]
    assert "server busy" in replies[0].json()["error"]
    assert replies[1].json() == {"error": "boom"}


def test_hang_ends_in_a_dropped_connection_or_a_late_reply() -> None:
    with serving([Fault.hang(0.2), Fault.hang(0.2, then="late")]) as (_, http):
        with pytest.raises(httpx.RemoteProtocolError):
            chat(http, stream=False)
        assert chat(http, stream=False).json()["message"]["content"] == "late"


def test_hang_outlasts_a_client_timeout() -> None:
    with FakeOllama([Fault.hang()]) as fake, httpx.Client(base_url=fake.url, timeout=0.2) as http:
        start = time.monotonic()
        with pytest.raises(httpx.ReadTimeout):
            chat(http, stream=False)
        assert time.monotonic() - start < 2


def test_close_returns_promptly_while_a_request_hangs() -> None:
    fake = FakeOllama([Fault.hang()])
    errors: list[BaseException] = []

    def request() -> None:
        try:
            with httpx.Client(base_url=fake.url, timeout=30) as http:
                chat(http, stream=False)
        except httpx.HTTPError as exc:
            errors.append(exc)

    thread = threading.Thread(target=request)
    thread.start()
    while not fake.chat_requests:
        time.sleep(0.01)
    start = time.monotonic()
    fake.close()
    thread.join(timeout=5)
    assert time.monotonic() - start < 2
    assert not thread.is_alive()
    assert errors


def test_reset_and_non_json_faults() -> None:
    with serving([Fault.reset(), Fault.non_json()]) as (_, http):
        with pytest.raises(httpx.RemoteProtocolError):
            chat(http, stream=False)
        page = chat(http, stream=False)
    assert page.status_code == 200
    assert page.headers["content-type"] == "text/html"
    with pytest.raises(ValueError, match="Expecting value"):
        page.json()


def test_stream_error_mid_stream_and_unstreamed() -> None:
    script = [Fault.stream_error("runner died"), Fault.stream_error()]
    with FakeOllama(script) as fake, ollama.Client(host=fake.url) as client:
        seen: list[str] = []

        def drain() -> None:
            for part in client.chat("qwen3:8b", USER, stream=True):
                seen.append(part.message.content or "")

        with pytest.raises(ollama.ResponseError, match="runner died"):
            drain()
        assert seen  # some content arrived before the error line
        with pytest.raises(ollama.ResponseError) as caught:
            client.chat("qwen3:8b", USER)
        assert caught.value.status_code == 500


# -- accounting ----------------------------------------------------------------------------------
def long_chat(chars: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": "x" * chars}]


def test_prompt_eval_count_grows_with_the_prompt_and_eval_count_with_the_reply() -> None:
    with serving(["short", "a much longer reply " * 20]) as (_, http):
        small = http.post(
            "/api/chat", json={"model": "qwen3:8b", "messages": long_chat(400), "stream": False}
        ).json()
        large = http.post(
            "/api/chat",
            json={
                "model": "qwen3:8b",
                "messages": long_chat(4000),
                "tools": [TOOL],
                "stream": False,
            },
        ).json()
    assert 100 <= small["prompt_eval_count"] < large["prompt_eval_count"]
    assert large["prompt_eval_count"] > 1000
    assert small["eval_count"] < large["eval_count"]
    assert large["load_duration"] < small["load_duration"]  # only the first request loads


@pytest.mark.parametrize(
    ("truncation", "options", "expected"),
    [("limit", {"num_ctx": 2048}, 2048), ("half", {"num_ctx": 2048}, 1026), ("limit", {}, 4096)],
)
def test_an_overlong_prompt_is_truncated_to_the_window(
    truncation: Any, options: dict[str, int], expected: int
) -> None:
    with serving(["ok"], truncation=truncation) as (_, http):
        body = {"model": "qwen3:8b", "messages": long_chat(80_000), "options": options}
        reply = http.post("/api/chat", json={**body, "stream": False}).json()
    assert reply["prompt_eval_count"] == expected


def test_num_ctx_is_capped_at_the_models_trained_length() -> None:
    with serving(["ok"], models={"tiny:1b": {"context_length": 1024}}) as (_, http):
        body = {
            "model": "tiny:1b",
            "messages": long_chat(80_000),
            "stream": False,
            "options": {"num_ctx": 65536},
        }
        assert http.post("/api/chat", json=body).json()["prompt_eval_count"] == 1024


def test_prompt_cache_can_hide_the_shared_prefix() -> None:
    first = long_chat(4000)
    second = [*first, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "more"}]
    with serving(["ok", "ok"], count_cached_tokens=False) as (_, http):
        one = chat(http, messages=first, stream=False).json()["prompt_eval_count"]
        two = chat(http, messages=second, stream=False).json()["prompt_eval_count"]
    assert one > 1000
    assert two < 50


def test_scripted_counts_and_done_reason_override_the_accounting() -> None:
    item = {"content": "cut", "done_reason": "length", "prompt_eval_count": 7, "eval_count": 9}
    with FakeOllama([item]) as fake, httpx.Client(base_url=fake.url) as http:
        body = chat(http, stream=False).json()
    assert (body["done_reason"], body["prompt_eval_count"], body["eval_count"]) == ("length", 7, 9)


def test_replies_and_bad_items_in_the_script() -> None:
    reply = Reply(tool_calls=(ToolCall("read_file", {"path": "a"}),))
    with serving([reply, 42]) as (_, http):
        call = chat(http, stream=False).json()["message"]["tool_calls"][0]["function"]
        bad = chat(http, stream=False)
    assert call["arguments"] == {"path": "a"}
    assert bad.status_code == 500
    assert "42" in bad.json()["error"]


def test_a_misspelt_model_setting_is_refused() -> None:
    with pytest.raises(ValueError, match="context_lenght"):
        FakeOllama(models={"qwen3:8b": {"context_lenght": 8192}})

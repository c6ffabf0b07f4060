"""The fake Ollama server's OpenAI-compatible ``/v1``, checked against Ollama's behaviour:
shapes, string arguments, finish reasons, usage, reasoning, errors, streaming, refusals."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from backend_helpers import function_tool, tool_reply
from localhand.testing import FakeOllama, Fault

USER = [{"role": "user", "content": "hi"}]
TOOL = function_tool("read_file", "Read a file", "path")
CALL = tool_reply("read_file", path="a.py")


def complete(http: httpx.Client, **body: Any) -> httpx.Response:
    return http.post("/v1/chat/completions", json={"model": "qwen3:8b", "messages": USER, **body})


def error_of(response: httpx.Response) -> dict[str, Any]:
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"message", "type", "param", "code"}
    return body["error"]


def test_a_text_reply_is_a_chat_completion(fake: FakeOllama, http: httpx.Client) -> None:
    fake.add("Hello there.")
    response = complete(http)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.text.endswith("}\n")  # Go's json.Encoder ends with a newline
    body = response.json()
    assert body["object"] == "chat.completion"
    assert body["id"].startswith("chatcmpl-")
    assert body["model"] == "qwen3:8b"
    assert body["system_fingerprint"] == "fp_ollama"
    (choice,) = body["choices"]
    assert choice == {
        "index": 0,
        "message": {"role": "assistant", "content": "Hello there."},
        "finish_reason": "stop",
    }
    usage = body["usage"]
    assert usage["prompt_tokens"] > 0
    assert usage["completion_tokens"] > 0
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


def test_tool_calls_have_ids_types_and_string_arguments(
    fake: FakeOllama, http: httpx.Client
) -> None:
    fake.add({**CALL, "thinking": "Read it first."})
    body = complete(http, tools=[TOOL]).json()
    (choice,) = body["choices"]
    assert choice["finish_reason"] == "tool_calls"
    message = choice["message"]
    assert message["content"] == ""
    assert message["reasoning"] == "Read it first."
    (call,) = message["tool_calls"]
    assert call["id"].startswith("call_")
    assert (call["index"], call["type"]) == (0, "function")
    assert call["function"]["name"] == "read_file"
    assert isinstance(call["function"]["arguments"], str)
    assert json.loads(call["function"]["arguments"]) == {"path": "a.py"}


def test_reasoning_field_and_length_finish_are_configurable() -> None:
    item = {"content": "Partial", "thinking": "Hmm", "done_reason": "length"}
    with (
        FakeOllama([item], openai_reasoning_field="reasoning_content") as fake,
        httpx.Client(base_url=fake.url) as http,
    ):
        (choice,) = complete(http).json()["choices"]
    assert choice["finish_reason"] == "length"
    assert choice["message"]["reasoning_content"] == "Hmm"
    assert "reasoning" not in choice["message"]


def test_history_is_translated_to_native_messages(fake: FakeOllama, http: httpx.Client) -> None:
    seen: list[dict[str, Any]] = []
    fake.add(lambda body: seen.append(body) or "done")
    history = [
        {"role": "user", "content": "read a.py"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "print(1)"},
    ]
    response = complete(http, messages=history, max_tokens=64, reasoning_effort="none")
    assert response.status_code == 200
    (native,) = seen
    assistant, tool = native["messages"][1:]
    assert assistant["tool_calls"][0]["function"]["arguments"] == {"path": "a.py"}
    assert tool == {"role": "tool", "content": "print(1)", "tool_name": "read_file"}
    assert native["options"]["num_predict"] == 64
    assert native["think"] is False


def calling_with(arguments: Any) -> dict[str, Any]:
    """A request body whose one message is an assistant's call of read_file with ``arguments``
    as they stand in the JSON (the OpenAI wire wants a string holding JSON)."""
    call = {
        "id": "c",
        "type": "function",
        "function": {"name": "read_file", "arguments": arguments},
    }
    return {"messages": [{"role": "assistant", "content": "", "tool_calls": [call]}]}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            calling_with({"path": "a"}),
            "json: cannot unmarshal object into Go struct field "
            "ToolCall.messages.tool_calls.function.arguments of type string",
        ),
        (
            calling_with("{not json"),
            "invalid tool call arguments",
        ),
        ({"messages": []}, "[] is too short - 'messages'"),
        ({"messages": [{"role": "user", "content": None}]}, "invalid message content type: <nil>"),
        (
            {"reasoning_effort": "max"},
            'invalid reasoning value: \'max\' (must be "high", "medium", "low", or "none")',
        ),
        (
            {"model": "gemma2:2b", "tools": [TOOL]},
            "registry.ollama.ai/library/gemma2:2b does not support tools",
        ),
    ],
)
def test_bad_requests_are_400s_that_keep_the_script(
    fake: FakeOllama, http: httpx.Client, body: dict[str, Any], message: str
) -> None:
    fake.add("unused")
    response = complete(http, **body)
    assert response.status_code == 400
    assert error_of(response) == {
        "message": message,
        "type": "invalid_request_error",
        "param": None,
        "code": None,
    }
    assert fake.remaining == 1


def test_unknown_model_is_a_not_found_error(fake: FakeOllama, http: httpx.Client) -> None:
    response = complete(http, model="qwen9:1b")
    assert response.status_code == 404
    error = error_of(response)
    assert error["type"] == "not_found_error"
    assert error["message"] == 'model "qwen9:1b" not found, try pulling it first'


def test_faults_answer_in_openai_shape(fake: FakeOllama, http: httpx.Client) -> None:
    fake.add(Fault.status(503), Fault.non_json(), Fault.stream_error("boom"))
    busy = complete(http)
    assert busy.status_code == 503
    assert error_of(busy)["type"] == "api_error"
    assert error_of(busy)["message"].startswith("server busy")
    html = complete(http)
    assert html.status_code == 200
    assert html.headers["content-type"] == "text/html"
    failed = complete(http)
    assert failed.status_code == 500
    assert error_of(failed)["message"] == "boom"
    ran_out = complete(http)
    assert ran_out.status_code == 500
    assert "script ran out at /v1/chat/completions request 4" in error_of(ran_out)["message"]


def test_a_reset_cuts_the_body(fake: FakeOllama, http: httpx.Client) -> None:
    fake.add(Fault.reset())
    with pytest.raises(httpx.HTTPError):
        complete(http)


def test_streaming_sends_server_sent_events(fake: FakeOllama, http: httpx.Client) -> None:
    fake.add({**CALL, "content": "Let me look."})
    response = complete(http, stream=True, stream_options={"include_usage": True}, tools=[TOOL])
    assert response.headers["content-type"] == "text/event-stream"
    events = [line[6:] for line in response.text.split("\n\n") if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    assert "".join(d.get("content", "") for d in deltas) == "Let me look."
    calls = [call for d in deltas for call in d.get("tool_calls", [])]
    assert [c["function"]["name"] for c in calls] == ["read_file"]
    finishes = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]]
    assert finishes[-1] == "tool_calls"
    assert set(finishes[:-1]) == {None}
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"]["completion_tokens"] > 0


def test_models_are_listed_and_retrieved() -> None:
    models = {"qwen3:8b": {}, "someone/coder:7b": {}}
    with FakeOllama(models=models) as fake, httpx.Client(base_url=fake.url) as http:
        listed = http.get("/v1/models").json()
        one = http.get("/v1/models/qwen3:8b").json()
        missing = http.get("/v1/models/nope:1b")
    assert listed["object"] == "list"
    assert [(m["id"], m["owned_by"]) for m in listed["data"]] == [
        ("qwen3:8b", "library"),
        ("someone/coder:7b", "someone"),
    ]
    assert one["id"] == "qwen3:8b"
    assert one["object"] == "model"
    assert missing.status_code == 404
    assert error_of(missing)["message"] == "model 'nope:1b' not found"
    with FakeOllama(models={}) as fake, httpx.Client(base_url=fake.url) as http:
        assert http.get("/v1/models").json() == {"object": "list", "data": None}  # Go's nil


def test_requests_to_v1_are_recorded_apart(fake: FakeOllama, http: httpx.Client) -> None:
    fake.add("a")
    complete(http, temperature=0)
    (request,) = fake.openai_requests
    assert request.body["temperature"] == 0
    assert fake.chat_requests == []

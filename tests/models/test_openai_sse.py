"""The OpenAI-compatible backend reading server-sent events the way real servers write them.

``FakeOllama`` writes its events one way, Ollama's; llama-server, vLLM, LM Studio and
``llama_cpp.server`` (sse-starlette: CRLF line ends, ``: ping`` comments) each differ a little.
So here a tiny server on loopback sends exactly the bytes a test gives it, in the pieces it
gives them, and the parser is also checked on its own against every way of splitting a
stream into chunks."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from backend_helpers import went_quiet
from localhand.errors import BadResponse
from localhand.models._lines import sse_events, sse_lines
from localhand.models.openai_compat import OpenAICompatModel

USER = [{"role": "user", "content": "Say hello."}]


@dataclass
class Canned:
    """One response: the status, the content type, and the body in the pieces to write
    (each flushed on its own, with a short pause, so the client reads them as chunks; a
    number is a pause of that many seconds)."""

    pieces: list[bytes | float]
    status: int = 200
    content_type: str = "text/event-stream"


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class Server:
    url: str
    responses: list[Canned]
    requests: list[Seen] = field(default_factory=list)


class _Handler(BaseHTTPRequestHandler):
    server: Any

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self._answer()

    def do_GET(self) -> None:
        self._answer()

    def _answer(self) -> None:
        state: Server = self.server.state
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        state.requests.append(Seen(self.path, headers, json.loads(raw) if raw else None))
        canned = state.responses.pop(0)
        self.send_response(canned.status)
        self.send_header("Content-Type", canned.content_type)
        self.send_header("Connection", "close")  # the body ends when the connection does
        self.end_headers()
        try:
            for piece in canned.pieces:
                if isinstance(piece, float):
                    time.sleep(piece)
                    continue
                self.wfile.write(piece)
                self.wfile.flush()
                time.sleep(0.002)
        except OSError:
            pass  # the client gave up (a timeout test)
        self.close_connection = True


@pytest.fixture
def server() -> Iterator[Server]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    state = Server(f"http://127.0.0.1:{httpd.server_address[1]}", [])
    httpd.state = state  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    yield state
    httpd.shutdown()
    httpd.server_close()
    thread.join()


@pytest.fixture
def model(server: Server, warnings: list[str]) -> Iterator[OpenAICompatModel]:
    with OpenAICompatModel(
        "tiny",
        server.url,
        backoff=0.0,
        request_timeout=5,
        first_request_timeout=5,
        on_warning=warnings.append,
        pin_slot=False,  # the canned server answers every request, /props too: none asked
    ) as backend:
        yield backend


def chunk(content: str | None = None, finish: str | None = None, **delta: Any) -> dict[str, Any]:
    if content is not None:
        delta["content"] = content
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {"object": "chat.completion.chunk", "model": "tiny", "choices": [choice]}


USAGE = {
    "object": "chat.completion.chunk",
    "model": "tiny",
    "choices": [],
    "usage": {"prompt_tokens": 12, "completion_tokens": 3},
}


def event(obj: Any, end: str = "\n") -> bytes:
    return f"data: {json.dumps(obj, ensure_ascii=False)}{end}{end}".encode()


def collect(model: OpenAICompatModel) -> tuple[str, str, Any]:
    chunks = list(model.stream(USER))
    text = "".join(c.content for c in chunks if not c.done)
    thinking = "".join(c.thinking for c in chunks if not c.done)
    return text, thinking, chunks[-1]


# -- the parser on its own ----------------------------------------------------------------------
STREAM = (
    b": a comment, then a keep-alive ping\r\n"
    b": ping - 2025-06-01 12:00:00\r\n\r\n"
    b"id: 1\r\n"
    b"event: message\r\n"
    b'data:{"a": 1}\r\n\r\n'  # no space after the colon
    b"data: {\n"
    b'data:   "b": 2\n'
    b"data: }\n\n"  # one event over three lines
    b"retry: 3000\r\r"  # no data: not dispatched; CR alone ends lines too
    b"event: error\n"
    b'data: {"message": "x"}\n\n'
    b'error: {"code": 500}\n\n'  # llama-server's own field
    b"data\n\n"  # a field without a colon: an event with empty data
    b"data: [DONE]\n\n"
    b'data: {"never": "dispatched"}'  # the stream ends mid-event
)
EVENTS = [
    ("message", '{"a": 1}'),
    ("message", '{\n  "b": 2\n}'),
    ("error", '{"message": "x"}'),
    ("error", '{"code": 500}'),
    ("message", ""),
    ("message", "[DONE]"),
]


def test_events_are_parsed_as_the_sse_spec_says() -> None:
    assert list(sse_events([STREAM])) == EVENTS


def test_events_do_not_depend_on_how_the_stream_is_cut_into_chunks() -> None:
    for cut in range(1, len(STREAM)):
        assert list(sse_events([STREAM[:cut], b"", STREAM[cut:]])) == EVENTS, cut
    assert list(sse_events(STREAM[i : i + 1] for i in range(len(STREAM)))) == EVENTS


def test_only_cr_and_lf_end_lines() -> None:
    text = 'data: {"content": "a\u2028b\u0085c\x1cd"}\n\n'  # all legal unescaped in JSON
    assert list(sse_lines([text.encode()])) == [text[:-2], ""]
    assert list(sse_lines([b"a\r", b"\nb\r", b"c\n"])) == ["a", "b", "c"]
    assert list(sse_lines([b"a\r", b"\r\n"])) == ["a", ""]


# -- the backend against servers that write SSE their own way -------------------------------
def test_a_stream_written_as_sse_starlette_writes_it(
    server: Server, model: OpenAICompatModel
) -> None:
    # llama_cpp.server: CRLF, comments as pings, ``event``/``id`` lines, JSON over two lines
    split = json.dumps(chunk(" world\u2028!"), ensure_ascii=False).replace(
        ', "choices"', ',\r\ndata: "choices"'
    )
    body = [
        b": ping\r\n\r\n",
        b"event: message\r\nid: 0\r\n" + event(chunk("", role="assistant"), "\r\n"),
        event(chunk(reasoning_content="Hm."), "\r\n"),
        event(chunk("Hel"), "\r\n")[:9],  # an event split across writes
        event(chunk("Hel"), "\r\n")[9:] + b"data:" + split.encode() + b"\r\n\r\n",
        event(chunk(None, "stop"), "\r\n"),
        event(USAGE, "\r\n") + b"data: [DONE]\r\n\r\n",
    ]
    server.responses.append(Canned(body))
    text, thinking, done = collect(model)
    assert (text, thinking) == ("Hel world\u2028!", "Hm.")
    assert (done.done, done.done_reason, done.model) == (True, "stop", "tiny")
    assert (done.usage.prompt_tokens, done.usage.completion_tokens) == (12, 3)
    (request,) = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["accept"] == "text/event-stream"
    assert request.body["stream_options"] == {"include_usage": True}


def test_a_stream_written_a_byte_at_a_time(server: Server, model: OpenAICompatModel) -> None:
    whole = event(chunk("Hi ")) + b"data:\n\n" + event(chunk("there", "length"))
    whole += b"data: [DONE]\n\n"
    server.responses.append(Canned([whole[i : i + 1] for i in range(len(whole))]))
    text, _, done = collect(model)
    assert (text, done.done_reason, done.usage) == ("Hi there", "length", None)


def test_llama_server_error_line_before_the_answer(
    server: Server, model: OpenAICompatModel
) -> None:
    error = {"code": 500, "message": "failed to decode the batch", "type": "server_error"}
    server.responses.append(
        Canned([b"error: " + json.dumps(error).encode() + b"\n\n", b"data: [DONE]\n\n"])
    )
    with pytest.raises(BadResponse, match="stopped the answer with an error: failed to decode"):
        collect(model)
    assert len(server.requests) == 1  # the model failing: not retried


def test_a_context_overflow_mid_stream_says_how_to_fix_it(
    server: Server, model: OpenAICompatModel
) -> None:
    error = {
        "code": 400,
        "message": "the request exceeds the available context size",
        "type": "exceed_context_size_error",
    }
    server.responses.append(Canned([b"event: error\n", event({"error": error})]))
    with pytest.raises(BadResponse, match="larger context"):
        collect(model)


def test_an_error_event_after_text_keeps_the_text(server: Server, model: OpenAICompatModel) -> None:
    server.responses.append(
        Canned([event(chunk("Let me ")), event({"error": {"message": "boom", "code": 500}})])
    )
    stream = model.stream(USER)
    assert next(stream).content == "Let me "
    with pytest.raises(BadResponse, match="stopped the answer with an error: boom"):
        next(stream)


def test_a_stream_that_goes_quiet_hits_the_idle_timeout(
    server: Server, model: OpenAICompatModel
) -> None:
    model.stream_idle_timeout = 0.3
    server.responses.append(Canned([event(chunk("one ")), 3.0, event(chunk("two", "stop"))]))
    stream = model.stream(USER)
    first, why, took = went_quiet(stream)
    assert first == "one "
    assert re.search(r"went quiet mid-answer: nothing for 0\.3 s after 4", why)
    assert took < 2


def test_a_stream_that_just_ends_is_reported_as_cut(
    server: Server, model: OpenAICompatModel
) -> None:
    server.responses.append(Canned([event(chunk("Partial")), b'data: {"obj']))
    with pytest.raises(BadResponse, match="without a finish reason"):
        collect(model)


def test_garbage_before_the_first_delta_is_retried(
    server: Server, model: OpenAICompatModel, warnings: list[str]
) -> None:
    server.responses += [
        Canned([b"data: <html>bad gateway</html>\n\n"]),
        Canned([event(chunk("ok", "stop")), b"data: [DONE]\n\n"]),
    ]
    text, _, done = collect(model)
    assert (text, done.done_reason) == ("ok", "stop")
    (warning,) = warnings
    assert "not JSON" in warning and "Retrying" in warning


def test_a_5xx_before_the_stream_is_retried(
    server: Server, model: OpenAICompatModel, warnings: list[str]
) -> None:
    server.responses += [
        Canned([b'{"error": {"message": "loading model"}}'], 503, "application/json"),
        Canned([event(chunk("ok", "stop"))]),
    ]
    assert collect(model)[0] == "ok"
    assert "HTTP 503: loading model" in warnings[0]


# -- unstreamed answers that are not what they should be ---------------------------------------
def test_json_that_is_not_a_chat_completion_is_not_retried(
    server: Server, model: OpenAICompatModel
) -> None:
    server.responses += [Canned([b'{"models": []}'], content_type="application/json")] * 2
    with pytest.raises(BadResponse, match="not a chat completion"):
        model.chat(USER)
    assert len(server.requests) == 1


def test_a_body_that_is_not_json_is_retried(
    server: Server, model: OpenAICompatModel, warnings: list[str]
) -> None:
    reply = {
        "model": "tiny",
        "choices": [{"message": {"content": "fine"}, "finish_reason": "stop"}],
    }
    server.responses += [
        Canned([b"<html>502</html>"], content_type="text/html"),
        Canned([json.dumps(reply).encode()], content_type="application/json"),
    ]
    assert model.chat(USER).content == "fine"
    assert "not JSON" in warnings[0]
    assert server.requests[0].headers["content-type"] == "application/json"
    assert server.requests[0].headers["accept"] == "application/json"


def test_models_without_data_list_nothing(server: Server, model: OpenAICompatModel) -> None:
    server.responses += [
        Canned(
            [b'{"object": "list", "data": [{"id": "a"}, {"id": "b"}, {}]}'],
            content_type="application/json",
        ),
        Canned([b'{"object": "list", "data": null}'], content_type="application/json"),
    ]
    assert model.list_models() == ["a", "b"]
    assert model.list_models() == []
    assert [r.path for r in server.requests] == ["/v1/models", "/v1/models"]

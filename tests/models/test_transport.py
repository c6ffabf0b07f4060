"""The transport under the network backends (``localhand.models.transport``), on its own
against the fake Ollama server over real sockets: which failures it retries and how it backs
off, its time limits and the names it gives them, and streams (NDJSON and server-sent events):
retried before their first delta, never after it, and cut when they go quiet."""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from backend_helpers import went_quiet
from localhand.errors import (
    BadResponse,
    ModelError,
    ModelNotFound,
    ModelTimeout,
    ServerUnavailable,
)
from localhand.models._ollama_stream import read_chunks as read_ndjson
from localhand.models._ollama_wire import OllamaWire, request_headers
from localhand.models._openai_stream import read_chunks as read_sse
from localhand.models._openai_wire import OpenAIWire
from localhand.models.base import StreamChunk
from localhand.models.connection import Connection
from localhand.models.transport import Retry, Transport
from localhand.testing import FakeOllama, Fault

MODEL = "qwen3:8b"
USER = [{"role": "user", "content": "Say hello."}]
ASK = {"model": MODEL, "messages": USER, "stream": False}
STREAM = {**ASK, "stream": True}
V1_STREAM = {**STREAM, "stream_options": {"include_usage": True}}

Make = Callable[..., Transport]


@pytest.fixture
def sleeps() -> list[float]:
    """The backoff's sleeps, recorded instead of slept."""
    return []


@pytest.fixture
def make(warnings: list[str], sleeps: list[float]) -> Iterator[Make]:
    """Transports to a server with Ollama's wire (``openai=True``: the OpenAI-compatible one
    under ``/v1``), short time limits unless given, closed afterwards."""
    built: list[Transport] = []

    def build(url: str, *, openai: bool = False, **fields: Any) -> Transport:
        connection = Connection(**{"request_timeout": 5.0, "first_request_timeout": 5.0, **fields})
        if openai:
            url = url + "/v1"
        wire = OpenAIWire(url, MODEL) if openai else OllamaWire(url, MODEL, host_given=True)
        transport = Transport(
            url, request_headers(None), connection, wire, warn=warnings.append, sleep=sleeps.append
        )
        built.append(transport)
        return transport

    yield build
    for transport in built:
        transport.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def ndjson(transport: Transport, deadline: float | None = None) -> Iterator[StreamChunk]:
    wire = transport.wire
    assert isinstance(wire, OllamaWire)
    return transport.stream_ndjson(
        "/api/chat", STREAM, lambda lines: read_ndjson(lines, wire), deadline
    )


def sse(transport: Transport) -> Iterator[StreamChunk]:
    wire = transport.wire
    assert isinstance(wire, OpenAIWire)
    return transport.stream_sse(
        "/chat/completions", V1_STREAM, lambda events: read_sse(events, wire), None
    )


def text(chunks: Iterator[StreamChunk]) -> str:
    return "".join(chunk.content for chunk in chunks)


# -- replies -----------------------------------------------------------------------------------
def test_a_reply_switches_from_the_first_requests_limit_to_the_later_one(
    fake: FakeOllama, make: Make
) -> None:
    fake.add("Hello.")
    transport = make(fake.url, first_request_timeout=900.0, request_timeout=300.0)
    assert transport.reply_limit()[0] == 900.0
    assert "the first request's time limit" in transport.reply_limit()[1]
    assert transport.ask("/api/chat", ASK, None)["message"]["content"] == "Hello."
    assert transport.loaded
    assert transport.reply_limit() == (300.0, "the per-request time limit: raise request_timeout")


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504])
def test_busy_and_failing_servers_are_retried_with_doubling_backoff(
    fake: FakeOllama, make: Make, warnings: list[str], sleeps: list[float], status: int
) -> None:
    fake.add(Fault.status(status), Fault.status(status), "At last.")
    transport = make(fake.url, max_attempts=3, backoff=0.25)
    assert transport.ask("/api/chat", ASK, None)["message"]["content"] == "At last."
    assert sleeps == [0.25, 0.5]
    assert [f"Retrying in {s:.1f} s (attempt {n} of 3)" in w for s, n, w in
            zip(sleeps, (2, 3), warnings, strict=True)] == [True, True]  # fmt: skip
    assert f"answered HTTP {status}" in warnings[0]


def test_the_last_attempts_error_is_raised(
    fake: FakeOllama, make: Make, warnings: list[str]
) -> None:
    fake.add(*[Fault.status(503)] * 3)
    with pytest.raises(BadResponse, match="answered HTTP 503: server busy") as caught:
        make(fake.url, max_attempts=3).ask("/api/chat", ASK, None)
    assert (caught.value.status, caught.value.retryable) == (503, True)
    assert len(fake.chat_requests) == 3 and len(warnings) == 2


@pytest.mark.parametrize("status", [400, 401, 403, 422])
def test_other_client_errors_are_not_retried(
    fake: FakeOllama, make: Make, warnings: list[str], status: int
) -> None:
    fake.add(Fault.status(status, "no"), "unused")
    with pytest.raises(BadResponse, match=f"answered HTTP {status}: no") as caught:
        make(fake.url).ask("/api/chat", ASK, None)
    assert not caught.value.retryable
    assert fake.remaining == 1 and not warnings


def test_the_wire_names_the_errors_that_mean_something(fake: FakeOllama, make: Make) -> None:
    with pytest.raises(ModelNotFound, match=r"model \"nope:1b\" not found.*`ollama pull "):
        make(fake.url).ask("/api/chat", {**ASK, "model": "nope:1b"}, None)
    assert len(fake.chat_requests) == 1  # not retried


@pytest.mark.parametrize("fault", [Fault.non_json(), Fault.reset()], ids=["garbled", "cut"])
def test_a_garbled_or_cut_answer_is_retried(
    fake: FakeOllama, make: Make, warnings: list[str], fault: Fault
) -> None:
    fake.add(fault, "Whole.")
    assert make(fake.url).ask("/api/chat", ASK, None)["message"]["content"] == "Whole."
    (warning,) = warnings
    assert "not Ollama's JSON" in warning or "cut the connection mid-reply" in warning


def test_a_server_that_is_down_is_tried_again_then_reported(
    make: Make, warnings: list[str], sleeps: list[float]
) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(ServerUnavailable, match=f"Cannot reach Ollama at {url}"):
        make(url, max_attempts=2, backoff=0.1).ask("/api/chat", ASK, None)
    assert sleeps == [0.1] and len(warnings) == 1


# -- time limits ---------------------------------------------------------------------------------
def test_timeouts_are_not_retried_and_name_the_limit_hit(
    fake: FakeOllama, make: Make, warnings: list[str]
) -> None:
    fake.add(Fault.hang(5), "Loaded.", Fault.hang(5))
    transport = make(fake.url, first_request_timeout=0.3, request_timeout=0.3)
    with pytest.raises(ModelTimeout, match=r"within 0\.3 s \(the first request's time limit"):
        transport.ask("/api/chat", ASK, None)
    transport.ask("/api/chat", ASK, None)
    started = time.monotonic()
    with pytest.raises(ModelTimeout, match="the per-request time limit: raise request_timeout"):
        transport.ask("/api/chat", ASK, None)
    assert time.monotonic() - started < 3
    assert len(fake.chat_requests) == 3 and not warnings


def test_the_deadline_caps_the_time_limit_and_says_so(fake: FakeOllama, make: Make) -> None:
    fake.add(Fault.hang(5))
    started = time.monotonic()
    with pytest.raises(ModelTimeout, match=r"the task's wall clock: .* --timeout"):
        make(fake.url, request_timeout=30).ask("/api/chat", ASK, started + 0.3)
    assert time.monotonic() - started < 3


def test_no_backoff_runs_past_the_deadline(
    fake: FakeOllama, make: Make, sleeps: list[float]
) -> None:
    fake.add(Fault.status(503), "unused")
    with pytest.raises(BadResponse, match="HTTP 503"):
        make(fake.url, backoff=5.0).ask("/api/chat", ASK, time.monotonic() + 1)
    assert sleeps == [] and fake.remaining == 1


def test_a_request_that_is_not_a_reply_gets_the_metadata_limit(make: Make) -> None:
    """A server that accepts the connection and never answers (the kernel's backlog)."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        transport = make(url, metadata_timeout=0.3, request_timeout=30)
        started = time.monotonic()
        with pytest.raises(ModelTimeout, match=r"within 0\.3 s \(the server seems hung; restart"):
            transport.fetch("GET", "/api/tags")
        assert time.monotonic() - started < 3


def test_a_probe_is_one_attempt_and_says_whether_another_may_help(
    fake: FakeOllama, make: Make, warnings: list[str]
) -> None:
    with pytest.raises(Retry) as caught:
        make(f"http://127.0.0.1:{free_port()}").probe("GET", "/api/ps")
    assert isinstance(caught.value.error, ServerUnavailable)
    with pytest.raises(ModelError):  # a 404 will not change: no Retry
        make(fake.url).probe("POST", "/api/show", {"model": "nope:1b"})
    assert make(fake.url).probe("GET", "/api/ps") == {"models": []}
    assert not warnings


def test_a_new_connection_applies_from_the_next_request(
    fake: FakeOllama, make: Make, sleeps: list[float]
) -> None:
    fake.add(Fault.status(503), Fault.status(503), "ok")
    transport = make(fake.url, max_attempts=1)
    with pytest.raises(BadResponse):
        transport.ask("/api/chat", ASK, None)
    transport.connection = Connection(max_attempts=2, backoff=0.0)
    assert transport.ask("/api/chat", ASK, None)["message"]["content"] == "ok"
    assert sleeps == [0.0]


# -- streams -----------------------------------------------------------------------------------
def test_an_ndjson_stream_hands_out_deltas_then_the_end(fake: FakeOllama, make: Make) -> None:
    fake.add("Hello there, world.")
    transport = make(fake.url)
    chunks = list(ndjson(transport))
    assert "".join(c.content for c in chunks) == "Hello there, world."
    assert len(chunks) > 2 and [c.done for c in chunks].count(True) == 1 and chunks[-1].done
    assert chunks[-1].usage is not None and chunks[-1].model == MODEL
    assert transport.loaded
    assert fake.chat_requests[0].headers["Accept"] == "application/x-ndjson"


@pytest.mark.parametrize("fault", [Fault.status(503), Fault.non_json(), Fault.hang(0.1)])
def test_a_stream_is_retried_before_its_first_delta(
    fake: FakeOllama, make: Make, warnings: list[str], fault: Fault
) -> None:
    fake.add(fault, "Second try.")
    assert text(ndjson(make(fake.url))) == "Second try."
    assert len(warnings) == 1 and "Retrying" in warnings[0]


def test_a_stream_is_never_retried_after_its_first_delta(
    fake: FakeOllama, make: Make, warnings: list[str]
) -> None:
    fake.add(Fault.reset(), "unused")
    stream = ndjson(make(fake.url))
    assert next(stream).content == "Let me "
    assert next(stream).content == "look"
    with pytest.raises(BadResponse, match="mid-answer, after 11 characters") as caught:
        next(stream)
    assert "Not retried, so that the answer is not shown twice" in str(caught.value)
    assert not caught.value.retryable
    assert fake.remaining == 1 and not warnings


def test_a_stream_that_goes_quiet_hits_the_idle_timeout(fake: FakeOllama, make: Make) -> None:
    fake.add({"content": "one two three", "chunk_delay": 3.0})
    stream = ndjson(make(fake.url, stream_idle_timeout=0.3))
    first, why, took = went_quiet(stream)
    assert first == "one "
    assert re.search(r"went quiet mid-answer: nothing for 0\.3 s after 4", why)
    assert took < 2


def test_the_first_chunk_gets_the_first_requests_limit_not_the_idle_one(
    fake: FakeOllama, make: Make, warnings: list[str]
) -> None:
    fake.add(Fault.hang(0.6, then="Slow start."), Fault.hang(5))
    transport = make(fake.url, first_request_timeout=3.0, stream_idle_timeout=0.2)
    assert text(ndjson(transport)) == "Slow start."
    transport.connection = Connection(request_timeout=0.3)
    with pytest.raises(ModelTimeout, match="the per-request time limit"):
        list(ndjson(transport))
    assert len(fake.chat_requests) == 2 and not warnings  # the timeout was not retried


def test_the_deadline_cuts_a_stream_that_keeps_trickling(fake: FakeOllama, make: Make) -> None:
    fake.add({"content": "word " * 40, "chunk_delay": 0.1})
    started = time.monotonic()
    stream = ndjson(make(fake.url, stream_idle_timeout=5.0), deadline=started + 0.6)
    with pytest.raises(ModelTimeout, match="still answering when the task's wall clock ran out"):
        text(stream)
    assert time.monotonic() - started < 3


def test_server_sent_events_stream_by_the_same_rules(
    fake: FakeOllama, make: Make, warnings: list[str]
) -> None:
    fake.add(Fault.status(503), "Hello from v1.", Fault.stream_error("boom"))
    transport = make(fake.url, openai=True)
    chunks = list(sse(transport))
    assert "".join(c.content for c in chunks) == "Hello from v1."
    assert chunks[-1].done and chunks[-1].done_reason == "stop" and chunks[-1].usage is not None
    assert len(warnings) == 1  # the 503, before the first delta
    assert fake.openai_requests[-1].headers["Accept"] == "text/event-stream"
    stream = sse(transport)
    assert next(stream).content == "Let me "
    with pytest.raises(BadResponse, match="stopped the answer with an error: boom"):
        next(stream)
    assert len(warnings) == 1  # after a delta: not retried

"""The backends' HTTP client (``localhand.models._http``) against real sockets on loopback: a
raw server here answers each request as the test scripts it, and counts the connections."""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from localhand.models._http import (
    Client,
    ConnectFailed,
    ConnectionCut,
    ProtocolError,
    Response,
    Timeout,
)
from localhand.models._http_connect import Origin, proxy_for

LIMITS = {"timeout": 5.0, "connect_timeout": 5.0}


@dataclass
class Request:
    line: str
    headers: dict[str, str]
    body: bytes
    connection: int
    stop: threading.Event
    """Set when the server closes: what a hanging answer waits for."""


Answer = Callable[[socket.socket, Request], bool]
"""Writes the answer to one request; returns whether the connection stays open."""


class Server:
    """HTTP/1.1 on loopback, one thread per connection, the answers taken in order."""

    def __init__(self, *answers: Answer) -> None:
        self.answers = list(answers)
        self.requests: list[Request] = []
        self.accepts = 0
        self.stop = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._open: list[socket.socket] = []
        self._accepting = threading.Thread(target=self._accept, daemon=True)
        self._accepting.start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = self._listener.accept()
                self.accepts += 1
                self._open.append(conn)
                threading.Thread(target=self._serve, args=(conn, self.accepts), daemon=True).start()

    def _serve(self, conn: socket.socket, number: int) -> None:
        with contextlib.suppress(OSError), conn:
            reader = conn.makefile("rb")
            while (request := read_request(reader, number, self.stop)) is not None:
                self.requests.append(request)
                if not self.answers.pop(0)(conn, request):
                    break

    def close(self) -> None:
        self.stop.set()
        # close() alone leaves a blocked accept() listening: it took later tests' connections
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        self._accepting.join(5)
        for conn in self._open:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)


def read_request(reader: Any, number: int, stop: threading.Event) -> Request | None:
    line = reader.readline().decode().rstrip("\r\n")
    if not line:
        return None
    headers = {}
    while (header := reader.readline().decode().rstrip("\r\n")) != "":
        name, _, value = header.partition(":")
        headers[name.strip().lower()] = value.strip()
    body = reader.read(int(headers.get("content-length") or 0))
    return Request(line, headers, body, number, stop)


def ok(body: bytes = b'{"ok":true}', keep: bool = True) -> Answer:
    def answer(conn: socket.socket, request: Request) -> bool:
        head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}"
        conn.sendall(head.encode() + b"\r\n\r\n" + body)
        return keep

    return answer


def chunked(*pieces: bytes, hold: threading.Event | None = None, stall: bool = False) -> Answer:
    """A chunked body; its end waits for ``hold`` if given, never comes if ``stall``."""

    def answer(conn: socket.socket, request: Request) -> bool:
        conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        for piece in pieces:
            conn.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
        if stall:
            request.stop.wait(10)
            return False
        if hold is not None:
            hold.wait(10)
        conn.sendall(b"0\r\n\r\n")
        return True

    return answer


def raw(data: bytes, keep: bool = False) -> Answer:
    """Exactly ``data`` (a partial answer, nothing at all...), then close unless ``keep``."""

    def answer(conn: socket.socket, request: Request) -> bool:
        conn.sendall(data)
        return keep

    return answer


@pytest.fixture
def serve() -> Iterator[Callable[..., Server]]:
    servers: list[Server] = []

    def start(*answers: Answer) -> Server:
        servers.append(Server(*answers))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


@pytest.fixture(autouse=True)
def _no_proxy_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


def test_requests_share_one_kept_alive_connection(serve: Callable[..., Server]) -> None:
    server = serve(ok(b'{"n":1}'), ok(b'{"n":2}'), chunked(b'{"n":', b"3}"), ok(b'{"n":4}'))
    with contextlib.closing(Client(server.url + "/v1", {"User-Agent": "test"})) as client:
        assert client.request("GET", "/models", **LIMITS).json() == {"n": 1}
        assert client.request("POST", "chat", {"a": 1}, **LIMITS).json() == {"n": 2}
        with client.stream("POST", "/chat", {"a": 2}, **LIMITS) as response:
            assert b"".join(response.iter_bytes()) == b'{"n":3}'
        assert client.request("GET", "/models", **LIMITS).json() == {"n": 4}
    assert server.accepts == 1
    assert [r.connection for r in server.requests] == [1, 1, 1, 1]
    assert [r.line for r in server.requests] == [
        "GET /v1/models HTTP/1.1",
        "POST /v1/chat HTTP/1.1",
        "POST /v1/chat HTTP/1.1",
        "GET /v1/models HTTP/1.1",
    ]
    assert server.requests[0].headers["user-agent"] == "test"


def test_json_bodies_are_the_bytes_httpx_sent(serve: Callable[..., Server]) -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": 'é 中文 \u2028 "q"'}]}
    server = serve(ok())
    with contextlib.closing(Client(server.url)) as client:
        client.request("POST", "/api/chat", body, **LIMITS)
    (request,) = server.requests
    assert request.body == httpx.Request("POST", server.url, json=body).content
    assert request.headers["content-type"] == "application/json"
    assert request.headers["content-length"] == str(len(request.body))


def test_a_connection_the_server_closed_while_idle_is_replaced(
    serve: Callable[..., Server],
) -> None:
    server = serve(ok(b'{"n":1}', keep=False), ok(b'{"n":2}'))
    with contextlib.closing(Client(server.url)) as client:
        client.request("GET", "/", **LIMITS)
        time.sleep(0.1)  # the server's close reaches the idle connection
        assert client.request("GET", "/", **LIMITS).json() == {"n": 2}
    assert server.accepts == 2
    assert [r.connection for r in server.requests] == [1, 2]  # each request sent once


def test_a_request_that_cannot_be_sent_on_a_reused_connection_goes_on_a_fresh_one(
    serve: Callable[..., Server], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race the idle check cannot see: the server resets the connection just as it is
    taken from the pool. The request never left, so it is sent on a new connection."""

    def reset(conn: socket.socket, request: Request) -> bool:
        ok()(conn, request)
        time.sleep(0.2)  # the client reads the answer first
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        return False

    server = serve(reset, ok(b'{"n":2}'))
    monkeypatch.setattr("localhand.models._http.alive", lambda sock: True)
    with contextlib.closing(Client(server.url)) as client:
        client.request("GET", "/", **LIMITS)
        time.sleep(0.5)
        assert client.request("POST", "/", {"x": 1}, **LIMITS).json() == {"n": 2}
    assert server.accepts == 2
    assert [r.connection for r in server.requests] == [1, 2]


@pytest.mark.parametrize(
    "answer",
    [
        b"",  # the request arrived whole; the server closed without a byte of an answer
        b'HTTP/1.1 200 OK\r\nContent-Length: 40\r\n\r\n{"partial',
        b'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{"a":',
    ],
)
def test_a_request_sent_whole_is_never_sent_again(
    serve: Callable[..., Server], answer: bytes
) -> None:
    server = serve(ok(), raw(answer), ok())
    with contextlib.closing(Client(server.url)) as client:
        client.request("GET", "/", **LIMITS)
        with pytest.raises(ConnectionCut):
            client.request("POST", "/", {"x": 1}, **LIMITS)
        assert client.request("GET", "/", **LIMITS).json() == {"ok": True}
    assert [r.line for r in server.requests] == [
        "GET / HTTP/1.1",
        "POST / HTTP/1.1",
        "GET / HTTP/1.1",
    ]
    assert server.accepts == 2  # the cut connection was not reused


@pytest.mark.parametrize("kind", ["chunked", "content-length", "until-close"])
def test_bodies_stream_in_pieces_and_end_where_they_end(
    serve: Callable[..., Server], kind: str
) -> None:
    pieces = [b'{"a":', b"1}\n", b'{"b":2}\n']
    answers = {
        "chunked": chunked(*pieces),
        "content-length": ok(b"".join(pieces)),
        "until-close": raw(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + b"".join(pieces)),
    }
    server = serve(answers[kind], ok())
    with (
        contextlib.closing(Client(server.url)) as client,
        client.stream("POST", "/", {}, **LIMITS) as response,
    ):
        assert response.status == 200
        assert b"".join(response.iter_bytes()) == b"".join(pieces)
        client.request("GET", "/", **LIMITS)
    assert server.accepts == (2 if kind == "until-close" else 1)


@contextlib.contextmanager
def stalled_after_first(
    serve: Callable[..., Server], timeout: float
) -> Iterator[tuple[Response, Iterator[bytes]]]:
    """A streamed GET, read with ``timeout``, of a chunked body whose first chunk is
    ``b"first"`` and whose next never comes: the response and its chunks."""
    server = serve(chunked(b"first", stall=True))
    with (
        contextlib.closing(Client(server.url)) as client,
        client.stream("GET", "/", timeout=timeout, connect_timeout=5) as response,
    ):
        yield response, response.iter_bytes()


def test_a_read_timeout_is_the_silence_between_bytes(serve: Callable[..., Server]) -> None:
    with stalled_after_first(serve, timeout=0.3) as (_, chunks):
        assert next(chunks) == b"first"
        started = time.monotonic()
        with pytest.raises(Timeout):
            next(chunks)
    assert 0.25 < time.monotonic() - started < 2


def test_a_server_that_never_answers_times_out(serve: Callable[..., Server]) -> None:
    server = serve(lambda conn, request: request.stop.wait(10))
    started = time.monotonic()
    with contextlib.closing(Client(server.url)) as client, pytest.raises(Timeout):
        client.request("GET", "/", timeout=0.3, connect_timeout=5)
    assert time.monotonic() - started < 2


def test_connect_refused_and_connect_timeout() -> None:
    with socket.create_server(("127.0.0.1", 0)) as closed:
        port = closed.getsockname()[1]
    with (
        contextlib.closing(Client(f"http://127.0.0.1:{port}")) as client,
        pytest.raises(ConnectFailed),
    ):
        client.request("GET", "/", **LIMITS)
    # A listener with a full backlog that never accepts: connecting hangs.
    with socket.create_server(("127.0.0.1", 0), backlog=0) as full, socket.socket() as held:
        held.connect(full.getsockname())
        started = time.monotonic()
        with (
            contextlib.closing(Client(f"http://127.0.0.1:{full.getsockname()[1]}")) as client,
            pytest.raises(ConnectFailed, match="timed out"),
        ):
            client.request("GET", "/", timeout=30, connect_timeout=0.3)
        assert time.monotonic() - started < 5


def test_closing_a_stream_early_drops_its_connection(serve: Callable[..., Server]) -> None:
    release = threading.Event()
    server = serve(chunked(b"first", b"second", hold=release), ok())
    with contextlib.closing(Client(server.url)) as client:
        with client.stream("GET", "/", **LIMITS) as response:
            assert next(response.iter_bytes()) == b"first"
        release.set()
        assert client.request("GET", "/", **LIMITS).json() == {"ok": True}
    assert server.accepts == 2  # the unfinished body was not read as the next answer


def test_a_stream_left_at_its_logical_end_keeps_its_connection(
    serve: Callable[..., Server],
) -> None:
    # The reader stops at the last line it needs (Ollama's done line); the chunked body's end
    # marker follows at once and is read on close, so the next request reuses the connection.
    server = serve(chunked(b'{"done":false}\n', b'{"done":true}\n'), ok(b'{"next":1}'))
    with contextlib.closing(Client(server.url)) as client:
        with client.stream("POST", "/api/chat", {}, **LIMITS) as response:
            lines = b""
            for piece in response.iter_bytes():
                lines += piece
                if b'"done":true' in lines:
                    break
        assert client.request("GET", "/", **LIMITS).json() == {"next": 1}
    assert server.accepts == 1


def test_abort_from_another_thread_ends_a_blocked_read(serve: Callable[..., Server]) -> None:
    with stalled_after_first(serve, timeout=30) as (response, chunks):
        assert next(chunks) == b"first"
        threading.Timer(0.2, response.abort).start()
        started = time.monotonic()
        with pytest.raises(ConnectionCut):
            next(chunks)
    assert time.monotonic() - started < 3


def test_a_content_length_body_cut_by_abort_is_not_taken_as_complete(
    serve: Callable[..., Server],
) -> None:
    def slow(conn: socket.socket, request: Request) -> bool:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nfirst")
        request.stop.wait(10)
        return False

    server = serve(slow)
    with (
        contextlib.closing(Client(server.url)) as client,
        client.stream("GET", "/", **LIMITS) as response,
    ):
        chunks = response.iter_bytes()
        assert next(chunks) == b"first"
        threading.Timer(0.1, response.abort).start()
        with pytest.raises(ConnectionCut):
            next(chunks)


def test_redirects_are_followed(serve: Callable[..., Server]) -> None:
    other = serve(ok(b'{"n":1}'), ok(b'{"n":2}'))
    server = serve(
        raw(
            b"HTTP/1.1 307 Temporary Redirect\r\nLocation: /v2/chat\r\nContent-Length: 0\r\n\r\n",
            True,
        ),
        ok(b'{"n":0}'),
        raw(f"HTTP/1.1 303 See Other\r\nLocation: {other.url}/done\r\n\r\n".encode()),
    )
    headers = {"Authorization": "Bearer secret"}
    with contextlib.closing(Client(server.url, headers)) as client:
        assert client.request("POST", "/chat", {"x": 1}, **LIMITS).json() == {"n": 0}
        assert client.request("POST", "/chat", {"x": 2}, **LIMITS).json() == {"n": 1}
    kept, moved, posted = server.requests
    assert posted.line == "POST /chat HTTP/1.1"
    assert (kept.line, moved.line) == ("POST /chat HTTP/1.1", "POST /v2/chat HTTP/1.1")
    assert moved.body == b'{"x":1}' and moved.headers["authorization"] == "Bearer secret"
    (followed,) = other.requests  # a 303 turns the POST into a GET, to another server
    assert followed.line == "GET /done HTTP/1.1" and followed.body == b""
    assert "authorization" not in followed.headers  # the credentials stay with their server


def test_too_many_redirects(serve: Callable[..., Server]) -> None:
    loop = raw(b"HTTP/1.1 302 Found\r\nLocation: /\r\nContent-Length: 0\r\n\r\n", True)
    server = serve(*[loop] * 21)
    with (
        contextlib.closing(Client(server.url)) as client,
        pytest.raises(ProtocolError, match="redirects"),
    ):
        client.request("GET", "/", **LIMITS)
    assert len(server.requests) == 21


def test_http_proxy_from_the_environment(
    serve: Callable[..., Server], monkeypatch: pytest.MonkeyPatch
) -> None:
    proxy = serve(ok(b'{"via":"proxy"}'), ok(b'{"via":"proxy"}'))
    monkeypatch.setenv("HTTP_PROXY", f"http://user:p%40ss@127.0.0.1:{proxy.port}")
    with contextlib.closing(Client("http://ollama.example:11434")) as client:
        assert client.request("POST", "/api/chat", {}, **LIMITS).json() == {"via": "proxy"}
        client.request("GET", "/api/tags", **LIMITS)
    first, second = proxy.requests
    assert first.line == "POST http://ollama.example:11434/api/chat HTTP/1.1"
    assert first.headers["host"] == "ollama.example:11434"
    assert first.headers["proxy-authorization"] == "Basic dXNlcjpwQHNz"  # user:p@ss
    assert second.line == "GET http://ollama.example:11434/api/tags HTTP/1.1"
    assert proxy.accepts == 1


def test_https_goes_through_a_connect_tunnel(
    serve: Callable[..., Server], monkeypatch: pytest.MonkeyPatch
) -> None:
    proxy = serve(raw(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n"))
    monkeypatch.setenv("https_proxy", f"127.0.0.1:{proxy.port}")
    with (
        contextlib.closing(Client("https://ollama.example")) as client,
        pytest.raises(ProtocolError, match="403"),
    ):
        client.request("GET", "/api/tags", **LIMITS)
    assert proxy.requests[0].line == "CONNECT ollama.example:443 HTTP/1.0"


def test_no_proxy_and_loopback_bypass_the_proxy(
    serve: Callable[..., Server], monkeypatch: pytest.MonkeyPatch
) -> None:
    server, proxy = serve(ok(), ok()), serve()
    monkeypatch.setenv("ALL_PROXY", proxy.url)
    monkeypatch.setenv("NO_PROXY", "localhost,.lan,ollama.example")
    dialled = dial_recorder(monkeypatch, to=server.port)
    with contextlib.closing(Client("http://ollama.example:11434")) as client:
        client.request("GET", "/", **LIMITS)
    with contextlib.closing(Client(server.url)) as client:  # loopback
        client.request("GET", "/", **LIMITS)
    assert dialled == [("ollama.example", 11434), ("127.0.0.1", server.port)]
    assert proxy.requests == []
    proxied = proxy_for(Origin("http", "box.example", 80))
    assert proxied is not None and proxied[:2] == ("127.0.0.1", proxy.port)
    assert proxy_for(Origin("https", "gpu.lan", 443)) is None
    monkeypatch.setenv("NO_PROXY", "*")
    assert proxy_for(Origin("http", "box.example", 80)) is None


def test_an_unusable_proxy_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ALL_PROXY", "socks5://127.0.0.1:1080")
    dialled = dial_recorder(monkeypatch, to=9)
    with (
        contextlib.closing(Client("http://box.example")) as client,
        pytest.raises(ProtocolError, match="only http:// proxies"),
    ):
        client.request("GET", "/", **LIMITS)
    assert dialled == []


def dial_recorder(monkeypatch: pytest.MonkeyPatch, to: int) -> list[tuple[str, int]]:
    """Connections are opened to port ``to`` on loopback, whatever the address; the list
    gets the addresses asked for."""
    dialled: list[tuple[str, int]] = []
    real = socket.create_connection

    def dial(address: tuple[str, int], *args: Any) -> socket.socket:
        dialled.append(address)
        return real(("127.0.0.1", to), *args)

    monkeypatch.setattr(socket, "create_connection", dial)
    return dialled

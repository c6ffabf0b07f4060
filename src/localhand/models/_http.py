"""A small keep-alive HTTP/1.1 client on ``http.client``, for the network backends: one
server, JSON bodies, answers read whole or streamed.

Why not httpx: importing it and building a client (httpcore, h11, anyio, idna, certifi) took
~190 ms of the 0.3 s in which ``localhand run`` must send its first request; ``http.client``,
``ssl`` and ``json`` take ~55 ms. What the backends had from httpx, they have here: a connect
timeout and a read timeout (between bytes) per request; connections kept alive for 5 s (one the
server closed while idle is replaced; a request that could not even be sent on it goes on a
fresh one; none is sent twice once it was sent whole); redirects followed (a 301/302 to a POST
and a 303 make it a GET); ``HTTP(S)_PROXY``, ``ALL_PROXY`` and ``NO_PROXY`` as ``urllib`` reads
them (http:// proxies; loopback never through one); https against the system's CAs; a stream
another thread can cut. The errors::

    HTTPError
     ├── ConnectFailed      no connection: refused, unknown host, timed out
     │    └── TLSFailed     the TLS handshake failed (an untrusted certificate...)
     ├── Timeout            connected, then nothing for the read timeout
     ├── ConnectionCut      the connection broke, or the answer was malformed
     └── ProtocolError      anything else: too many redirects, a refusing proxy
"""

from __future__ import annotations

import contextlib
import functools
import http.client
import json
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any
from urllib.parse import urljoin

from localhand.models._http_connect import Conn, Origin, alive, connect, split_url
from localhand.nesting import json_loads
from localhand.types import Closing

__all__ = ["Client", "ConnectFailed", "ConnectionCut", "HTTPError", "ProtocolError", "Response"]
__all__ += ["TLSFailed", "Timeout", "json_or_none"]

MAX_REDIRECTS = 20
KEEPALIVE_S = 5.0
"""An idle connection older than this is closed rather than reused, as httpx did: servers
close theirs after a few seconds (uvicorn after 5), and a request sent just as they do fails."""
DRAIN_S, DRAIN_BYTES = 0.05, 4096
"""What ``Response.close`` reads of an unfinished body to keep its connection."""
_CUT = "the connection closed before the end of the answer"


class HTTPError(Exception):
    """Talking to the server failed."""


class ConnectFailed(HTTPError):
    """No connection: refused, unknown host, or no answer within the connect timeout."""


class TLSFailed(ConnectFailed):
    """The TLS handshake failed, an untrusted certificate for one."""


class Timeout(HTTPError):
    """Connected, but nothing came (or could be sent) within the read timeout."""


class ConnectionCut(HTTPError):
    """The connection broke, or the answer was malformed, before the answer was complete."""


class ProtocolError(HTTPError):
    """Anything else: too many redirects, a redirect to a non-HTTP URL, a refusing proxy."""


class Response(Closing):
    """An answer: ``status`` and ``headers`` at once, the body whole (:meth:`read`, then
    ``body``, ``text``, :meth:`json`) or as it arrives (:meth:`iter_bytes`)."""

    def __init__(
        self, raw: http.client.HTTPResponse, sock: socket.socket, done: Callable[[bool], None]
    ) -> None:
        self.status: int = raw.status
        self.headers: http.client.HTTPMessage = raw.headers
        self.body = b""
        self._raw, self._sock = raw, sock
        self._done: Callable[[bool], None] | None = done
        self._complete = self._aborted = False
        self._lock = threading.Lock()

    @property
    def text(self) -> str:
        try:
            return self.body.decode(self.headers.get_content_charset() or "utf-8", "replace")
        except LookupError:
            return self.body.decode("utf-8", "replace")

    def json(self) -> Any:
        """The body as JSON (cut where it nests too deep); ``ValueError`` when it is not."""
        return json_loads(self.body)

    def read(self) -> bytes:
        try:
            self.body = _mapped(self._raw.read)
            self._check_complete()
        finally:
            self.close()
        return self.body

    def iter_bytes(self) -> Iterator[bytes]:
        """The body in chunks as they arrive (chunked transfer decoded)."""
        while chunk := _mapped(self._raw.read1, 65536):
            yield chunk
        self._check_complete()
        self.close()

    def _check_complete(self) -> None:
        if self._raw.length or self._aborted:  # Content-Length bytes missing, or cut
            raise ConnectionCut(_CUT)
        self._complete = True

    def close(self) -> None:
        """Done with the answer: its connection serves the next request if the body was read
        to its end (or the little left of it comes at once), else it is closed."""
        with self._lock:
            done, self._done = self._done, None
            complete = self._complete and not self._aborted
            drain = done is not None and not complete and not self._aborted
        if drain:
            complete = self._drained()
        if done is not None:
            self._raw.close()
            done(complete)

    def _drained(self) -> bool:
        """Whether the rest of the body, read now, ended within ``DRAIN_BYTES`` and
        ``DRAIN_S``. A stream's reader stops at the answer's logical end (Ollama's ``done``
        line, SSE's ``[DONE]``), before the chunked body's last marker: reading that marker
        keeps the connection for the next request instead of a new connect. A body that goes
        on (the caller gave up early) is not waited for: ``DRAIN_S`` bounds the whole drain,
        not each read, so a reply still trickling in (a stopped loop) is not read on for a
        second or more."""
        deadline = time.monotonic() + DRAIN_S
        read = 0
        try:
            self._sock.settimeout(DRAIN_S)
            while read <= DRAIN_BYTES and not self._raw.isclosed() and self._raw.length != 0:
                if time.monotonic() > deadline:
                    return False
                piece = self._raw.read1(DRAIN_BYTES + 1 - read)
                if not piece:
                    break
                read += len(piece)
            if self._raw.length == 0:
                self._raw.read()  # a Content-Length body read to its end: that closes it
        except (OSError, http.client.HTTPException):
            return False
        return read <= DRAIN_BYTES and self._raw.isclosed() and not self._raw.length

    def abort(self) -> None:
        """Cut the connection, from any thread: a read blocked on it returns at once (and
        raises ``ConnectionCut``), which closing it would not do on Linux."""
        with self._lock, contextlib.suppress(OSError):
            if self._done is not None:
                self._aborted = True  # not SSLSocket.shutdown: it would drop its TLS state
                socket.socket.shutdown(self._sock, socket.SHUT_RDWR)


class Client(Closing):
    """Requests to one server, ``base_url``, whose path prefixes every request's. Thread-safe:
    a request takes an idle kept-alive connection, or opens one."""

    def __init__(self, base_url: str, headers: Mapping[str, str] | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.headers = dict(headers or {})
        self._idle: dict[Origin, list[tuple[Conn, float]]] = {}
        self._lock = threading.Lock()
        self._closed = False

    def request(self, method: str, path: str, body: Any = None, **options: Any) -> Response:
        """``stream`` (which see, for the ``options``), with the whole answer read."""
        response = self.stream(method, path, body, **options)
        response.read()
        return response

    def stream(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        timeout: float,
        connect_timeout: float,
        headers: Mapping[str, str] | None = None,
    ) -> Response:
        """Send ``body`` (as JSON, unless None) and give the answer once its headers are in (to
        use in ``with``, which closes it), following the redirects it meets."""
        sent = {**self.headers, **(headers or {})}
        data: bytes | None = None
        if body is not None:  # the very bytes httpx's json= sent
            text = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
            data, sent["Content-Type"] = text.encode(), "application/json"
        url = f"{self.base_url}/{path.lstrip('/')}"
        for _ in range(MAX_REDIRECTS + 1):
            origin, target = _split(url)
            response = self._exchange(origin, target, method, data, sent, timeout, connect_timeout)
            location = response.headers.get("Location")
            if response.status not in (301, 302, 303, 307, 308) or not location:
                return response
            response.read()
            if (response.status == 303 and method != "HEAD") or (
                response.status in (301, 302) and method == "POST"
            ):
                method, data = "GET", None
            url = urljoin(url, location)
            if not _same_server(origin, _split(url)[0]):  # credentials stay with their server
                sent = {k: v for k, v in sent.items() if k.lower() != "authorization"}
        raise ProtocolError(f"more than {MAX_REDIRECTS} redirects")

    def close(self) -> None:
        with self._lock:
            self._closed, idle, self._idle = True, self._idle, {}
        for conns in idle.values():
            for conn, _ in conns:
                conn.http.close()

    def _exchange(
        self,
        origin: Origin,
        target: str,
        method: str,
        data: bytes | None,
        headers: dict[str, str],
        timeout: float,
        connect_timeout: float,
    ) -> Response:
        for fresh in (False, True):
            conn, reused = self._checkout(origin, connect_timeout, fresh)
            sock = conn.http.sock
            try:
                sock.settimeout(timeout)
                try:
                    conn.http.request(method, conn.prefix + target, data, headers | conn.headers)
                except (BrokenPipeError, ConnectionResetError):
                    if not reused:
                        raise
                    # Closed by the server while idle, and the request could not even be sent:
                    # the server cannot have acted on it, so it goes on a fresh connection.
                    conn.http.close()
                    continue
                raw = conn.http.getresponse()
            except BaseException as exc:
                conn.http.close()
                if isinstance(exc, OSError | http.client.HTTPException):
                    raise _error(exc) from None
                if isinstance(exc, ValueError):  # not shown: the value may be a key
                    raise ProtocolError("a request header is invalid (a line break?)") from None
                raise
            return Response(raw, sock, functools.partial(self._checkin, origin, conn))
        raise AssertionError("unreachable")  # pragma: no cover

    def _checkout(self, origin: Origin, connect_timeout: float, fresh: bool) -> tuple[Conn, bool]:
        with self._lock:
            idle = [] if fresh else self._idle.get(origin, [])
            while idle:
                conn, since = idle.pop()
                if time.monotonic() - since < KEEPALIVE_S and alive(conn.http.sock):
                    return conn, True
                conn.http.close()
        return self._connect(origin, connect_timeout), False

    def _checkin(self, origin: Origin, conn: Conn, complete: bool) -> None:
        with self._lock:
            if complete and conn.http.sock is not None and not self._closed:
                self._idle.setdefault(origin, []).append((conn, time.monotonic()))
                return
        conn.http.close()

    def _connect(self, origin: Origin, connect_timeout: float) -> Conn:
        try:
            return connect(origin, self.base_url.partition(":")[0], connect_timeout)
        except ssl.SSLError as exc:
            raise TLSFailed(str(exc)) from None
        except ValueError as exc:  # a proxy that cannot be used
            raise ProtocolError(str(exc)) from None
        except OSError as exc:
            if str(exc).startswith("Tunnel connection failed"):
                raise ProtocolError(f"the proxy refused: {exc}") from None
            raise ConnectFailed(str(exc) or type(exc).__name__) from None
        except http.client.HTTPException as exc:
            raise ConnectFailed(str(exc) or type(exc).__name__) from None


def _mapped(call: Callable[..., Any], *args: Any) -> Any:
    """``call(*args)``, its socket and ``http.client`` errors raised as this module's."""
    try:
        return call(*args)
    except (OSError, http.client.HTTPException) as exc:
        raise _error(exc) from None


def _error(exc: OSError | http.client.HTTPException) -> HTTPError:
    if isinstance(exc, http.client.InvalidURL):
        return ProtocolError(str(exc))
    if isinstance(exc, TimeoutError):
        return Timeout("timed out")
    if isinstance(exc, http.client.RemoteDisconnected):
        return ConnectionCut("the server closed the connection without answering")
    if isinstance(exc, http.client.IncompleteRead):
        return ConnectionCut(_CUT)
    return ConnectionCut(str(exc) or type(exc).__name__)


def _same_server(old: Origin, new: Origin) -> bool:
    """The same origin, or http://host upgraded to https://host on the default ports."""
    upgrade = (old.scheme, old.port, new.scheme, new.port) == ("http", 80, "https", 443)
    return new == old or (upgrade and new.host == old.host)


def _split(url: str) -> tuple[Origin, str]:
    try:
        return split_url(url)
    except ValueError as exc:
        raise ProtocolError(str(exc)) from None


def json_or_none(
    base_url: str,
    method: str,
    path: str,
    body: Any = None,
    *,
    timeout: float,
    headers: Mapping[str, str] | None = None,
) -> Any:
    """One request on a client of its own, for a probe that may fail quietly: the JSON of a
    200 answer, else None (no answer, another status, not JSON)."""
    with Client(base_url, headers) as client:
        try:
            response = client.request(method, path, body, timeout=timeout, connect_timeout=timeout)
            return response.json() if response.status == 200 else None
        except (HTTPError, OSError, ValueError):
            return None

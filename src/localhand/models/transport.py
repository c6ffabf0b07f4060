"""One transport under the network backends: the HTTP client, timeouts, retries and streaming.

``OllamaModel`` and ``OpenAICompatModel`` are wire adapters over a :class:`Transport`: they
say what to send and how to read what comes back, and give it a :class:`Wire` for the words
of its errors; the transport sends, waits, retries and streams by the same rules for both,
with the settings of the backend's :class:`~localhand.models.connection.Connection`:

- **One client.** An ``_http.Client`` per backend, made at the first request and closed by
  ``close``: connections kept alive, redirects followed, proxies honoured (see ``_http``). An
  http:// address that redirects to https:// fails TLS verification rather than passing
  unverified, and the error says to give the https:// address.
- **Timeouts.** ``first_request_timeout`` (default 900 s) while the model loads, then
  ``request_timeout`` (300 s) once a reply has come; ``metadata_timeout`` (10 s) for
  requests that are not replies; ``connect_timeout`` (10 s) to connect. ``ChatOptions.timeout``
  (the task's wall clock) caps a reply's, and the error names the limit that was hit. They
  are socket timeouts set per request, so a hung server really ends the request. Timeouts
  are not retried.
- **Retries.** ``max_attempts`` (default 3 in all) with exponential backoff (``backoff``,
  doubling), within the deadline, each one warned about: on connection errors, HTTP 429,
  500, 502, 503 and 504, a connection cut mid-reply and a body that is not the server's JSON.
  Never on other 4xx (a missing model, refused tools...): sending them again cannot help.
- **Streaming.** On the same client: NDJSON (Ollama) or server-sent events (OpenAI-compatible
  servers) split into lines (``_lines``), which the adapter reads into chunks. Until the first
  chunk the timeouts above apply; after it ``stream_idle_timeout`` (default 120 s) of silence
  ends the stream (a watchdog, ``_stream``). Retried only before the first delta, so no text
  is ever shown twice; a failure after it is raised at once and the caller keeps the text.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

from localhand.errors import BadResponse, ModelError, ModelNotFound, ModelTimeout
from localhand.models._common import OUT_OF_TIME_HINT, Garbled, Retry, time_limit_hint
from localhand.models._http import (
    Client,
    ConnectFailed,
    ConnectionCut,
    HTTPError,
    Response,
    Timeout,
)
from localhand.models._lines import ndjson_lines, sse_events
from localhand.models._stream import Watchdog, timeout_text
from localhand.models.base import StreamChunk
from localhand.models.connection import Connection

if TYPE_CHECKING:
    from localhand.models._ollama_wire import OllamaWire
    from localhand.models._openai_wire import OpenAIWire

__all__ = ["RETRY_STATUSES", "Garbled", "Retry", "Transport", "Wire"]

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
"""Statuses worth another attempt: a busy queue (429, Ollama's 503), a crashed or restarting
runner (500), a proxy that lost the server (502, 504)."""

Item = TypeVar("Item")
ReadChunks = Callable[[Iterator[Item]], Iterator[StreamChunk]]
"""An adapter's reader: a stream's lines (or events) to text deltas, then one done chunk."""


Wire: TypeAlias = "OllamaWire | OpenAIWire"
"""What the transport asks of an adapter: the words for its errors (``server``, ``model``,
``address_flags``, ``loading``, ``hung_hint``, ``unavailable``), how its server's answers read
(``error_text``, ``refusal``, ``decode``: :class:`Garbled` when not the server's JSON), and
where it lists its models (``models_path``)."""


class Transport:
    """Requests and streams to one server at ``url`` (see the module docstring). Thread-safe
    as its client is; ``connection`` may be replaced, and applies from the next request (its
    ``host`` and ``api_key`` were read when the backend was made, into ``url`` and the
    headers)."""

    def __init__(
        self,
        url: str,
        headers: Mapping[str, str],
        connection: Connection,
        wire: Wire,
        *,
        warn: Callable[[str], None],
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.url = url
        self.connection = connection
        self.wire = wire
        self.loaded = False
        """Whether a reply has come: the model is in memory, so replies get
        ``request_timeout`` from then on instead of ``first_request_timeout``."""
        self._headers = dict(headers)
        self._warn, self._sleep = warn, sleep
        self._client: Client | None = None
        self._lock = threading.Lock()

    # -- requests ------------------------------------------------------------------------------
    def ask(
        self,
        path: str,
        body: Any,
        deadline: float | None,
        read: Callable[[Any], Any] | None = None,
    ) -> Any:
        """POST ``body`` for a reply, with the reply's time limits and retries, by ``deadline``
        (a ``time.monotonic()``) if given; ``read`` checks the JSON within the attempt."""
        base, hint = self.reply_limit()

        def attempt(timeout: float, why: str) -> Any:
            data = self._attempt("POST", path, body, timeout, why)
            return data if read is None else read(data)

        answer = self._retrying(attempt, base, deadline, hint)
        self.loaded = True
        return answer

    def fetch(self, method: str, path: str, body: Any = None) -> Any:
        """A request that is not a reply (listing models...): ``metadata_timeout``, retried."""

        def attempt(timeout: float, why: str) -> Any:
            return self._attempt(method, path, body, timeout, why)

        return self._retrying(attempt, self.connection.metadata_timeout, None, self.wire.hung_hint)

    def probe(self, method: str, path: str, body: Any = None) -> Any:
        """One attempt of :meth:`fetch`, for what may fail quietly: an error another attempt
        may cure comes as :class:`Retry` (so the caller can ask again later), the rest as
        ``ModelError``."""
        return self._attempt(
            method, path, body, self.connection.metadata_timeout, self.wire.hung_hint
        )

    def reply_limit(self) -> tuple[float, str]:
        """How long a reply (or a stream's first chunk) may take now, and the hint that names
        that limit when it is hit."""
        if self.loaded:
            return self.connection.request_timeout, time_limit_hint(True, self.wire.loading)
        return self.connection.first_request_timeout, time_limit_hint(False, self.wire.loading)

    # -- streams -------------------------------------------------------------------------------
    def stream_ndjson(
        self, path: str, body: Any, read: ReadChunks[str], deadline: float | None
    ) -> Generator[StreamChunk, None, None]:
        """POST ``body`` and stream the answer, one JSON object a line; ``read`` turns the
        lines (blank ones left out) into chunks."""
        return self._stream(path, body, "application/x-ndjson", ndjson_lines, read, deadline)

    def stream_sse(
        self, path: str, body: Any, read: ReadChunks[tuple[str, str]], deadline: float | None
    ) -> Iterator[StreamChunk]:
        """POST ``body`` and stream the answer as server-sent events; ``read`` turns the
        events, ``(type, data)``, into chunks."""
        return self._stream(path, body, "text/event-stream", sse_events, read, deadline)

    def close(self) -> None:
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    # -- inside --------------------------------------------------------------------------------
    def _stream(
        self,
        path: str,
        body: Any,
        accept: str,
        split: Callable[[Iterable[bytes]], Iterator[Item]],
        read: ReadChunks[Item],
        deadline: float | None,
    ) -> Generator[StreamChunk, None, None]:
        """The stream, with retries up to its first delta and none after it: opening it and
        reading up to its first chunk is one attempt, so a server that is down, answers 5xx
        or drops the connection before saying anything is tried again; from the first delta
        on, a failure is raised at once, since a retry would show the answer's beginning
        twice."""
        base, hint = self.reply_limit()
        client, idle_s = self._http(), self.connection.stream_idle_timeout

        def attempt(timeout: float, why: str) -> tuple[Any, Watchdog, Iterator[StreamChunk], Any]:
            stack = contextlib.ExitStack()
            watchdog = None
            try:
                connect_s = min(timeout, self.connection.connect_timeout)
                response = stack.enter_context(
                    client.stream(
                        "POST",
                        path,
                        body,
                        timeout=timeout,
                        connect_timeout=connect_s,
                        headers={"Accept": accept},
                    )
                )
                if response.status != 200:
                    response.read()
                    raise self._status_error(response, path)
                watchdog = stack.enter_context(Watchdog(timeout, idle_s, deadline, response.abort))
                chunks = read(_kicking(split(response.iter_bytes()), watchdog))
                return stack, watchdog, chunks, next(chunks)
            except BaseException as exc:
                stack.close()
                if isinstance(exc, Exception):
                    raise self._stream_failure(exc, watchdog, 0, why, timeout) from None
                raise  # Ctrl-C: as it is

        stack, watchdog, chunks, chunk = self._retrying(attempt, base, deadline, hint)
        chars = 0
        with stack:
            while True:
                self.loaded = True  # a chunk came: the model is in memory
                yield chunk
                if chunk.done:
                    return
                chars += len(chunk.content) + len(chunk.thinking) + len(chunk.arguments)
                try:
                    chunk = next(chunks)
                except StopIteration:
                    raise AssertionError("a reader must end with a done chunk") from None
                except Exception as exc:
                    error = self._stream_failure(exc, watchdog, chars, hint, base)
                    raise (error.error if isinstance(error, Retry) else error) from None

    def _retrying(
        self, attempt: Callable[[float, str], Any], base: float, deadline: float | None, hint: str
    ) -> Any:
        """Call ``attempt(timeout, hint)`` until it returns, at most ``max_attempts`` times.

        ``attempt`` raises :class:`Retry` for errors worth another try (the server was down,
        cut the connection, answered 5xx) and plain ``ModelError``s for the rest. The backoff
        doubles from ``backoff``; no attempt, and no backoff, runs past ``deadline``: the
        timeout of the last attempt shrinks to what is left, and its hint says so.
        """
        attempts, backoff = self.connection.max_attempts, self.connection.backoff
        for number in range(1, attempts + 1):
            timeout = base
            if deadline is not None and deadline - time.monotonic() < base:
                timeout = max(deadline - time.monotonic(), 0.001)
                hint = OUT_OF_TIME_HINT
            try:
                return attempt(timeout, hint)
            except Retry as retry:
                delay = backoff * 2 ** (number - 1)
                out_of_time = deadline is not None and time.monotonic() + delay >= deadline
                if number == attempts or out_of_time:
                    raise retry.error from None
                self._warn(
                    f"{str(retry.error).rstrip('.')}. Retrying in {delay:.1f} s "
                    f"(attempt {number + 1} of {attempts})."
                )
                self._sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover

    def _attempt(self, method: str, path: str, body: Any, timeout: float, hint: str) -> Any:
        """One request and its JSON; failures become ``ModelError``s, in :class:`Retry` when
        another attempt may help."""
        connect_s = min(timeout, self.connection.connect_timeout)
        try:
            response = self._http().request(
                method, path, body, timeout=timeout, connect_timeout=connect_s
            )
            if response.status >= 400:
                raise self._status_error(response, path)
            return self.wire.decode(response)
        except ConnectionCut as exc:
            why = f"{self._server} cut the connection mid-reply ({exc})."
            raise Retry(BadResponse(why, retryable=True)) from None
        except (HTTPError, Garbled) as exc:
            raise self._stream_failure(exc, None, 0, hint, timeout) from None

    def _stream_failure(
        self, exc: Exception, watchdog: Watchdog | None, chars: int, hint: str, timeout: float
    ) -> Exception:
        """A stream's failure (or a request's, but for a cut) as the ``ModelError`` to raise,
        in ``Retry`` only when no text was handed out yet (``chars``). The watchdog comes
        first: a stream it cut fails as a cut connection (or one that ended early), and was a
        timeout."""
        if watchdog is not None and watchdog.fired is not None:
            return ModelTimeout(timeout_text(watchdog, self._server, chars, hint))
        if isinstance(exc, ModelError | Retry):
            return exc
        if isinstance(exc, ConnectFailed):
            return self._connect_error(exc)
        if isinstance(exc, Timeout):
            return self._timed_out(timeout, hint)
        if isinstance(exc, Garbled):
            error = BadResponse(str(exc), retryable=not chars)
            return error if chars else Retry(error)
        if isinstance(exc, ConnectionCut):
            if not chars:
                why = f"{self._server} cut the connection before the answer began ({exc})."
                return Retry(BadResponse(why, retryable=True))
            return BadResponse(
                f"{self._server} cut the connection mid-answer, after {chars} characters "
                f"({exc}). Not retried, so that the answer is not shown twice; the partial "
                "answer is kept."
            )
        if isinstance(exc, HTTPError):
            return BadResponse(f"Could not talk to {self.wire.server}: {exc}")
        return exc

    def _status_error(self, response: Response, path: str) -> Exception:
        """An error answer (read whole) as the ``ModelError`` to raise, in ``Retry`` when its
        status is worth another attempt."""
        status = response.status
        text = self.wire.error_text(response)
        refusal = self.wire.refusal(status, text, path)
        if isinstance(refusal, ModelNotFound) and path.endswith(("/chat", "/chat/completions")):
            return self._naming_models(refusal)
        if refusal is not None:
            return refusal
        error = BadResponse(
            f"{self._server} answered HTTP {status}: {text}",
            retryable=status in RETRY_STATUSES,
            status=status,
        )
        return Retry(error) if error.retryable else error

    def _naming_models(self, error: ModelNotFound) -> ModelNotFound:
        """``error`` with the models the server has (``localhand.models.missing``), so that
        the user can pick one; as it was when the listing fails."""
        # off the first request's path
        from localhand.models.missing import has_models, listed_names

        try:
            timeout = min(5.0, self.connection.metadata_timeout)
            data = self._attempt("GET", self.wire.models_path, None, timeout, self.wire.hung_hint)
        except (ModelError, Retry):
            return error
        return ModelNotFound(f"{error} {has_models(listed_names(data))}")

    def _connect_error(self, exc: ConnectFailed) -> Exception:
        # An http:// address gets a TLS context without CAs (_http_connect.tls_context), so a
        # redirect to https:// fails here: say what to give instead of "cannot reach".
        if "CERTIFICATE_VERIFY_FAILED" in str(exc) and self.url.startswith("http:"):
            return BadResponse(
                f"{self._server} redirected to https: give its https:// address with "
                f"{self.wire.address_flags}."
            )
        return Retry(self.wire.unavailable())

    def _timed_out(self, timeout: float, hint: str) -> ModelTimeout:
        return ModelTimeout(
            f"{self._server} did not answer for '{self.wire.model}' within {timeout:.3g} s "
            f"({hint}, or use a smaller model)."
        )

    @property
    def _server(self) -> str:
        """The server's name at the start of a sentence."""
        server = self.wire.server
        return server[:1].upper() + server[1:]

    def _http(self) -> Client:
        """The one client for every request and stream, made at the first (closed by
        ``close``). Timeouts are set per request: the first may wait for the model to load."""
        with self._lock:
            if self._client is None:
                self._client = Client(self.url, self._headers)
            return self._client


def _kicking(items: Iterator[Item], watchdog: Watchdog) -> Iterator[Item]:
    """``items``, each one restarting the watchdog's idle clock as it arrives."""
    for item in items:
        watchdog.kick()
        yield item

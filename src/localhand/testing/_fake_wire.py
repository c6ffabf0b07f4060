"""Ollama's wire protocol for :class:`~localhand.testing.FakeOllama`: the HTTP handler, its
native endpoints and how it writes them. What a script may hold is ``_fake_faults``'s, the
models it serves ``_fake_models``'s, and ``/v1`` is ``_fake_openai``'s. Private: import what
you need from ``localhand.testing``."""

from __future__ import annotations

import contextlib
import hashlib
import json
import socket
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from localhand.testing._fake_faults import BAD_GATEWAY_PAGE, Fault, Refusal
from localhand.testing._fake_generation import generate, pieces, wait_unstreamed
from localhand.testing._fake_models import _Model
from localhand.testing._fake_openai import OpenAIEndpoints

if TYPE_CHECKING:
    from localhand.testing.fake_ollama import FakeOllama

_CREATED_AT = "2025-06-01T12:00:00.000000000Z"


_GO_ESCAPES: tuple[tuple[str, str], ...] = (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"))
_GO_ESCAPES += (("\u2028", "\\u2028"), ("\u2029", "\\u2029"))


def _encode(obj: Any) -> bytes:
    """JSON the way Go's ``json.Marshal`` writes it: compact, UTF-8 as it is (not ``\\u``
    escapes), but ``<``, ``>``, ``&``, U+2028 and U+2029 escaped. Other line-breaking
    characters, such as U+0085, go out raw, so a client must split NDJSON on LF only."""
    text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
    for char, escaped in _GO_ESCAPES:
        text = text.replace(char, escaped)
    return text.encode()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # close() must not wait for a hanging handler
    fake: FakeOllama


class _Handler(OpenAIEndpoints, BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, chunked NDJSON: what Go's net/http does
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def setup(self) -> None:
        super().setup()
        # Go's net/http sets TCP_NODELAY; without it, headers and body in two writes wait
        # ~40 ms for a delayed ACK on every answer.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.server.fake._lock:
            self.server.fake._connections.add(self.connection)

    def finish(self) -> None:
        with self.server.fake._lock:
            self.server.fake._connections.discard(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    # -- routing ------------------------------------------------------------------------
    def do_HEAD(self) -> None:
        self._route("HEAD")

    def do_GET(self) -> None:
        self._route("GET")

    def do_POST(self) -> None:
        self._route("POST")

    def do_DELETE(self) -> None:
        self._route("DELETE")

    def _route(self, method: str) -> None:
        fake = self.server.fake
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        fake._record(method, self.path, body, dict(self.headers))
        routes: dict[str, dict[str, Callable[[Any], None]]] = {
            "/": {"GET": self._root, "HEAD": self._root},
            "/api/version": {"GET": self._version, "HEAD": self._version},
            "/api/tags": {"GET": self._tags, "HEAD": self._tags},
            "/api/show": {"POST": self._show},
            "/api/ps": {"GET": self._ps},
            "/api/chat": {"POST": self._chat},
        }
        path = self.path.split("?", 1)[0]
        routes |= self._v1_routes(path)
        if path not in routes:
            self._send(404, b"404 page not found", "text/plain")
        elif method not in routes[path]:
            self._send(405, b"405 method not allowed", "text/plain")
        else:
            routes[path][method](body)

    # -- endpoints ------------------------------------------------------------------------
    def _root(self, body: Any) -> None:
        self._send(200, b"Ollama is running", "text/plain; charset=utf-8")

    def _version(self, body: Any) -> None:
        self._json(200, {"version": self.server.fake.version})

    def _details(self, m: _Model) -> dict[str, Any]:
        return {
            "parent_model": "",
            "format": "gguf",
            "family": m.family,
            "families": [m.family],
            "parameter_size": m.parameter_size,
            "quantization_level": m.quantization_level,
        }

    def _listed(self, m: _Model, size: int) -> dict[str, Any]:
        """What ``/api/tags`` and ``/api/ps`` say of every model."""
        digest, details = hashlib.sha256(m.name.encode()).hexdigest(), self._details(m)
        return {"name": m.name, "model": m.name, "size": size, "digest": digest, "details": details}

    def _tags(self, body: Any) -> None:
        models = [
            {**self._listed(m, 5_225_387_923), "modified_at": _CREATED_AT}
            for m in self.server.fake._models.values()
        ]
        self._json(200, {"models": models})

    def _ps(self, body: Any) -> None:
        """The loaded models, each with the window it was loaded with (``context_length``)."""
        fake = self.server.fake
        models = [
            {
                **self._listed(m, 6_654_289_920),
                "expires_at": "2030-01-01T00:05:00Z",
                "size_vram": 0,
                "context_length": window,
            }
            for m, window in fake._loaded_models()
        ]
        self._json(200, {"models": models})

    def _show(self, body: Any) -> None:
        if not isinstance(body, dict):
            return self._json(400, {"error": "missing request body"})
        name = body.get("model") or body.get("name")
        if not name:
            return self._json(400, {"error": "model is required"})
        m = self.server.fake._find(name)
        if m is None:
            return self._json(404, {"error": f"model '{name}' not found"})
        params = "temperature                    0.6\ntop_k                          20"
        if m.num_ctx:
            params += f"\nnum_ctx                        {m.num_ctx}"
        self._json(
            200,
            {
                "license": "Apache License 2.0",
                "modelfile": f"# Modelfile\nFROM {m.name}\n",
                "parameters": params,
                "template": "{{ .Prompt }}",
                "details": self._details(m),
                "model_info": {
                    "general.architecture": m.family,
                    "general.parameter_count": 8_190_735_360,
                    "general.quantization_version": 2,
                    f"{m.family}.context_length": m.context_length,
                    f"{m.family}.embedding_length": 4096,
                    f"{m.family}.block_count": 36,
                    f"{m.family}.attention.head_count": 32,
                    f"{m.family}.attention.head_count_kv": 8,
                    f"{m.family}.attention.key_length": 128,
                },
                "capabilities": m.capabilities,
                "modified_at": _CREATED_AT,
            },
        )

    def _chat(self, body: Any) -> None:
        if not isinstance(body, dict):
            return self._json(400, {"error": "missing request body"})
        name = body.get("model")
        if not name:
            return self._json(400, {"error": "model is required"})
        stream = body.get("stream") is not False  # Ollama streams unless told not to
        if not body.get("messages") and self.server.fake._find(name) is not None:
            # an empty chat loads the model (or, with keep_alive 0, unloads it)
            reason = "unload" if body.get("keep_alive") in (0, "0", "0s") else "load"
            return self._json(
                200, self._chunk(name, {"role": "assistant", "content": ""}, done_reason=reason)
            )
        outcome = self._exchange(name, body)
        if outcome is None:
            return self._drop()
        if isinstance(outcome, Refusal):
            return self._json(outcome.code, {"error": outcome.error})
        if isinstance(outcome, Fault):
            return self._fault(outcome, stream, name)
        reply, metrics = outcome
        rate = float(reply.get("token_rate") or 0)
        chunks = self._stream_chunks(name, reply["message"], rate > 0) if stream else []
        final_message = {"role": "assistant", "content": ""} if stream else reply["message"]
        chunks.append(self._chunk(name, final_message, done_reason=reply["done_reason"], **metrics))
        self._finish(stream, chunks, 1 / rate if rate else float(reply.get("chunk_delay") or 0))

    def _exchange(
        self, name: str, body: dict[str, Any]
    ) -> Refusal | Fault | tuple[dict[str, Any], dict[str, Any]] | None:
        """What Ollama's chat handler decides for a native request ``body``, shared by
        ``/api/chat`` and ``/v1/chat/completions``: a refusal (without consuming the script),
        a scripted fault, None to drop the connection, or the reply and its metrics."""
        fake = self.server.fake
        model = fake._find(name)
        if model is None:
            return Refusal(404, f'model "{name}" not found, try pulling it first')
        think = body.get("think")
        if think not in (None, False) and not model.thinking:
            return Refusal(400, f'"{name}" does not support thinking')
        if body.get("tools") and not model.tools:
            return Refusal(400, f"{model.registry_name} does not support tools")
        fmt = body.get("format")
        if fmt not in (None, "", "json") and not isinstance(fmt, dict):  # as Ollama's handler
            return Refusal(400, 'invalid format: expected "json" or a valid JSON schema')
        turn = fake._take_turn()  # waits for a slot and "generates" for the latency
        if turn != "ok":  # a full queue answers 503; a server closed mid-reply says nothing
            busy = "server busy, please try again.  maximum pending requests exceeded"
            return Refusal(503, busy) if turn == "busy" else None
        found, item = fake._next_item(body)
        if not found:
            n = sum(1 for r in fake.requests if r.path == self.path)
            return Refusal(
                500,
                f"FakeOllama: the script ran out at {self.path} request {n} "
                f"({fake._consumed} items given)",
            )
        while isinstance(item, Fault) and item.kind == "hang":
            fake._closing.wait(item.seconds)
            if item.then is None or fake._closing.is_set():
                return None
            item = item.then
            while callable(item):
                item = item(body)
        if isinstance(item, Fault):
            return item
        if hasattr(item, "to_message"):  # a localhand Reply
            item = item.to_message()
        if not isinstance(item, str | dict):
            why = f"FakeOllama: a script item must be a dict, str, Fault or callable, not {item!r}"
            return Refusal(500, why)
        reply = fake._reply_message(item, think)
        scripted_wrong = not reply["message"].get("tool_calls") and not _is_json(reply)
        if fmt and fake.strict_format and scripted_wrong:
            # Ollama constrains the reply to the format: a script cannot have it say otherwise
            why = "FakeOllama: the request has a format, so its scripted reply must be JSON"
            return Refusal(500, f"{why}, not {reply['message']['content'][:80]!r}")
        generate(reply, body, model, fake)  # the request's ceiling, the item's loop
        metrics = fake._account(model, body, reply)
        if body.get("stream") is False and not wait_unstreamed(reply, fake):
            return None  # closed while "generating"
        return reply, metrics

    # -- chat helpers -----------------------------------------------------------------------
    @staticmethod
    def _chunk(model: str, message: dict[str, Any], **final: Any) -> dict[str, Any]:
        chunk = {"model": model, "created_at": _CREATED_AT, "message": message}
        if final:
            return {**chunk, "done_reason": final.pop("done_reason"), "done": True, **final}
        return {**chunk, "done": False}

    def _stream_chunks(
        self, model: str, message: dict[str, Any], by_token: bool = False
    ) -> list[dict[str, Any]]:
        # Thinking first, then the content a word (or a token) at a time, then the calls in
        # one chunk.
        thinking = pieces(message.get("thinking", ""), by_token)
        said = [{"content": "", "thinking": piece} for piece in thinking]
        said += [{"content": piece} for piece in pieces(message["content"], by_token)]
        if message.get("tool_calls"):
            said.append({"content": "", "tool_calls": message["tool_calls"]})
        return [self._chunk(model, {"role": "assistant", **delta}) for delta in said]

    def _finish(self, stream: bool, chunks: list[dict[str, Any]], delay: float = 0.0) -> None:
        if not stream:
            return self._json(200, chunks[-1])
        self._start_chunked(200, "application/x-ndjson")
        try:
            for index, chunk in enumerate(chunks):
                if index and delay:  # a slow model: one piece every ``delay`` seconds
                    self.server.fake._closing.wait(delay)
                self._write_chunk(_encode(chunk) + b"\n")
            self._write_chunk(b"")
        except OSError:  # the client gave up mid-stream (a timeout, Ctrl-C)
            self.close_connection = True

    def _start_partial_stream(self, model: str) -> None:
        self._start_chunked(200, "application/x-ndjson")
        for piece in ("Let me ", "look"):
            chunk = self._chunk(model, {"role": "assistant", "content": piece})
            self._write_chunk(_encode(chunk) + b"\n")

    def _fault(self, fault: Fault, stream: bool, model: str) -> None:
        if fault.kind == "status":
            self._json(fault.code, {"error": fault.error})
        elif fault.kind == "non_json":
            self._send(200, BAD_GATEWAY_PAGE, "text/html")
        elif fault.kind == "reset" and stream:
            self._start_partial_stream(model)
            self._drop()
        elif fault.kind == "reset":
            data = json.dumps(
                self._chunk(model, {"role": "assistant", "content": "x" * 200}, done_reason="stop")
            ).encode()
            self._send(200, data, "application/json; charset=utf-8", half=True)
        elif not stream:  # stream_error without streaming: Ollama answers 500
            self._json(500, {"error": fault.error})
        else:
            self._start_partial_stream(model)
            self._write_chunk(_encode({"error": fault.error}) + b"\n")
            self._write_chunk(b"")

    # -- low-level writing --------------------------------------------------------------------
    def _send(self, status: int, data: bytes, content_type: str, *, half: bool = False) -> None:
        """Answer ``data``; with ``half``, announce it whole but send half of it and cut the
        connection: ``Fault.reset`` of an unstreamed reply."""
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if half:
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self._drop()
        elif self.command != "HEAD":
            self.wfile.write(data)

    def _json(self, status: int, obj: Any) -> None:
        self._send(status, _encode(obj), "application/json; charset=utf-8")

    def _start_chunked(self, status: int, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _drop(self) -> None:
        """Cut the connection without (the rest of) an answer."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)


def _is_json(reply: dict[str, Any]) -> bool:
    try:
        json.loads(reply["message"]["content"])
    except ValueError:
        return False
    return True

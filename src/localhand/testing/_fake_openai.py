"""Ollama's OpenAI-compatible endpoints for :class:`~localhand.testing.FakeOllama`.

Ollama serves ``/v1`` by translating each request to its native handler and each answer
back, so the fake does the same: it validates the request the way Ollama's Go structs bind it
(arguments must be JSON *strings*, content may be null only next to tool calls), converts it
to a native body, lets the shared chat logic (model lookup, capabilities, the script, faults,
accounting) decide, and writes OpenAI's shapes: ``chat.completion`` with ``tool_calls`` carrying
``id``/``index``/``type`` and string arguments, ``finish_reason`` ``tool_calls``/``length``/
``stop``, ``usage``, thinking as ``reasoning``, and errors as ``{"error": {"message", "type",
"param", "code"}}``. Private: import what you need from ``localhand.testing``.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from localhand.testing._fake_faults import BAD_GATEWAY_PAGE, Fault, Refusal
from localhand.testing._fake_generation import pieces

if TYPE_CHECKING:
    from localhand.testing._fake_wire import _Server

_EPOCH = int(datetime.fromisoformat("2025-06-01T12:00:00+00:00").timestamp())
_EFFORTS = ("high", "medium", "low", "none")


def _line(obj: Any) -> bytes:
    """What Go's ``json.NewEncoder(w).Encode`` writes: compact JSON and a newline."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


class OpenAIEndpoints:
    """Mixed into the fake's request handler: ``/v1/chat/completions`` and ``/v1/models``."""

    server: _Server
    path: str
    close_connection: bool
    _send: Callable[..., None]
    _start_chunked: Callable[[int, str], None]
    _write_chunk: Callable[[bytes], None]
    _drop: Callable[[], None]
    _exchange: Callable[..., Any]

    def _v1_routes(self, path: str) -> dict[str, dict[str, Callable[[Any], None]]]:
        routes: dict[str, dict[str, Callable[[Any], None]]] = {
            "/v1/chat/completions": {"POST": self._v1_chat},
            "/v1/models": {"GET": self._v1_models},
        }
        if path.startswith("/v1/models/"):
            routes[path] = {"GET": self._v1_model}
        if self.server.fake.props:
            routes["/props"] = {"GET": self._props}
            if path.startswith("/slots/"):
                routes[path] = {"POST": self._slot_action}
        if self.server.fake.template_renders_tools is not None:
            routes["/apply-template"] = {"POST": self._apply_template}
        return routes

    def _apply_template(self, body: Any) -> None:
        """llama-server's ``POST /apply-template``: the prompt its chat template renders for
        ``body``'s messages, with the tools' names in it only if the template renders tools
        (``template_renders_tools``), as Qwen's does and Gemma 3's does not."""
        body = body if isinstance(body, dict) else {}
        turns = [f"<{m.get('role')}>{m.get('content')}" for m in body.get("messages") or []]
        if self.server.fake.template_renders_tools:
            for tool in body.get("tools") or []:
                turns.insert(0, f"<tool>{(tool.get('function') or {}).get('name')}")
        self._send(200, _line({"prompt": "\n".join(turns) + "\n<assistant>"}), "application/json")

    def _props(self, body: Any) -> None:
        """llama-server's ``GET /props`` (at the root, not under ``/v1``): its global
        properties, ``total_slots`` (its ``--parallel``) among them. The fields llama-server
        has answered since 2024; newer builds add more (``modalities``, ``build_info``)."""
        fake = self.server.fake
        model = next(iter(fake._models.values()), None)
        props = {
            "default_generation_settings": {
                "n_ctx": fake.default_num_ctx,
                "params": {"speculative.types": "none"},
            },
            "total_slots": fake.slots or 1,
            "model_path": f"/models/{model.name if model else 'model'}.gguf",
            "chat_template": "",
            "modalities": {"vision": False, "audio": False},
            "build_info": "b6000-fake",
        }
        self._send(200, _line(props), "application/json")

    def _slot_action(self, body: Any) -> None:
        """llama-server's ``POST /slots/{id}?action=...``, with ``slot_save`` (its
        ``--slot-save-path``) or without; a slot holds about a token per four characters."""
        fake, parts = self.server.fake, urlsplit(self.path)
        slot = int(parts.path.rsplit("/", 1)[-1])
        action = parse_qs(parts.query).get("action", [""])[0]
        name, files = body.get("filename") if isinstance(body, dict) else None, fake.saved_slots
        error = (
            (501, UNSUPPORTED) if not fake.slot_save
            else (400, "Invalid action") if action not in ("save", "restore")
            else (400, "[json.exception.out_of_range.403] key 'filename' not found")
            if not isinstance(name, str)
            else (400, "Invalid filename") if not name or "/" in name or name in (".", "..")
            else (400, NOT_RESTORED) if action == "restore" and name not in files
            else None
        )  # fmt: skip
        if error is not None:
            kind = "not_supported_error" if error[0] == 501 else "invalid_request_error"
            refused = {"error": {"code": error[0], "message": error[1], "type": kind}}
            return self._send(error[0], _line(refused), "application/json")
        held = len(json.dumps(fake._last_messages)) // 4 if action == "save" else files[str(name)]
        files[str(name)] = held
        done = ("n_saved", "n_written") if action == "save" else ("n_restored", "n_read")
        answer = {"id_slot": slot, "filename": name, done[0]: held, done[1]: held * 18_000}
        self._send(200, _line({**answer, "timings": {f"{action}_ms": 0.4}}), "application/json")

    def _v1_error(self, code: int, message: str) -> None:
        kind = {400: "invalid_request_error", 404: "not_found_error"}.get(code, "api_error")
        error = {"message": message, "type": kind, "param": None, "code": None}
        self._send(code, _line({"error": error}), "application/json")

    # -- models ------------------------------------------------------------------------------
    def _v1_models(self, body: Any) -> None:
        data = [_model_item(m.name) for m in self.server.fake._models.values()]
        # A Go nil slice: an Ollama without models says "data": null, not [].
        self._send(200, _line({"object": "list", "data": data or None}), "application/json")

    def _v1_model(self, body: Any) -> None:
        name = self.path.split("?", 1)[0][len("/v1/models/") :]
        model = self.server.fake._find(name)
        if model is None:
            return self._v1_error(404, f"model '{name}' not found")
        self._send(200, _line(_model_item(name)), "application/json")

    # -- chat ---------------------------------------------------------------------------------
    def _v1_chat(self, body: Any) -> None:
        if not isinstance(body, dict):
            why = "EOF" if body is None else "invalid character looking for beginning of value"
            return self._v1_error(400, why)
        problem = _bind_problem(body)
        if problem is None and not body.get("messages"):
            problem = "[] is too short - 'messages'"
        native = None if problem else _to_native(body)
        if isinstance(native, str):
            problem = native
        if problem or not isinstance(native, dict):
            return self._v1_error(400, problem or "invalid request")
        name = str(body.get("model") or "")
        if not name:
            return self._v1_error(400, "model is required")
        outcome = self._exchange(name, native)
        if outcome is None:
            return self._drop()
        if isinstance(outcome, Refusal):
            return self._v1_error(outcome.code, outcome.error)
        if isinstance(outcome, Fault):
            return self._v1_fault(outcome, bool(body.get("stream")))
        reply, metrics = outcome
        completion = self._completion(name, reply, metrics)
        if body.get("stream"):
            usage = (body.get("stream_options") or {}).get("include_usage")
            return self._v1_stream(completion, bool(usage), float(reply.get("token_rate") or 0))
        self._send(200, _line(completion), "application/json")

    def _completion(self, name: str, reply: dict, metrics: dict) -> dict[str, Any]:
        native = reply["message"]
        message: dict[str, Any] = {"role": "assistant", "content": native["content"]}
        if native.get("thinking"):
            message[self.server.fake.openai_reasoning_field] = native["thinking"]
        calls = []
        for call in native.get("tool_calls") or []:
            function, args = call["function"], call["function"]["arguments"]
            # a string in the script passes through as is: a server relaying what the model wrote
            text = args if isinstance(args, str) else json.dumps(args, separators=(",", ":"))
            sent = {"name": function["name"], "arguments": text}
            calls.append(
                {"id": call["id"], "index": function["index"], "type": "function", "function": sent}
            )
        if calls:
            message["tool_calls"] = calls
        prompt, said = metrics["prompt_eval_count"], metrics["eval_count"]
        usage = {"prompt_tokens": prompt, "completion_tokens": said, "total_tokens": prompt + said}
        # Ollama's /v1 says its cache hits as OpenAI does, when there were some
        if cached := metrics.get("prompt_eval_cached_count"):
            usage["prompt_tokens_details"] = {"cached_tokens": cached}
        return {
            "id": f"chatcmpl-{random.randrange(999)}",
            "object": "chat.completion",
            "created": _EPOCH,
            "model": name,
            "system_fingerprint": "fp_ollama",
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if calls else reply["done_reason"],
                }
            ],
            "usage": usage,
        }

    def _v1_stream(
        self, completion: dict[str, Any], include_usage: bool, rate: float = 0.0
    ) -> None:
        """Server-sent events: reasoning and content a word at a time (a token at a time, at
        ``rate`` tokens a second, when given), the calls in one chunk, a chunk with the
        finish reason, the usage if asked for, then ``[DONE]``."""
        choice = completion["choices"][0]
        message = choice["message"]
        field = self.server.fake.openai_reasoning_field
        deltas = [{field: p} for p in pieces(message.get(field, ""), rate > 0)]
        deltas += [{"content": p} for p in pieces(message["content"], rate > 0)]
        if message.get("tool_calls"):
            deltas.append({"content": "", "tool_calls": message["tool_calls"]})
        head = {k: completion[k] for k in ("id", "object", "created", "model")}
        head |= {"object": "chat.completion.chunk", "system_fingerprint": "fp_ollama"}

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            delta = {"role": "assistant", **delta}
            return {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

        events = [chunk(d) for d in deltas]
        events.append(chunk({"content": ""}, choice["finish_reason"]))
        if include_usage:
            events.append({**head, "choices": [], "usage": completion["usage"]})
        self._start_chunked(200, "text/event-stream")
        closing = self.server.fake._closing
        try:
            for event in events:
                if rate and closing.wait(1 / rate):  # a model of that speed
                    break
                self._write_chunk(b"data: " + _line(event).rstrip(b"\n") + b"\n\n")
            self._write_chunk(b"data: [DONE]\n\n")
            self._write_chunk(b"")
        except OSError:  # the client stopped reading (cancelled, timed out)
            self.close_connection = True

    def _v1_fault(self, fault: Fault, stream: bool) -> None:
        if fault.kind == "status":
            self._v1_error(fault.code, fault.error)
        elif fault.kind == "non_json":
            self._send(200, BAD_GATEWAY_PAGE, "text/html")
        elif fault.kind == "reset":
            reply = _line({"id": "chatcmpl-1", "choices": [{"message": "x" * 200}]})
            self._send(200, reply, "application/json", half=True)
        elif not stream:  # a failure while generating, unstreamed: 500
            self._v1_error(500, fault.error)
        else:
            self._start_chunked(200, "text/event-stream")
            delta = {"role": "assistant", "content": "Let me "}
            chunk = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta}]}
            self._write_chunk(b"data: " + _line(chunk) + b"\n")
            error = {"message": fault.error, "type": "api_error", "param": None, "code": None}
            self._write_chunk(b"data: " + _line({"error": error}) + b"\n")
            self._write_chunk(b"")


def _model_item(name: str) -> dict[str, Any]:
    owner = name.split("/")[0] if "/" in name else "library"
    return {"id": name, "object": "model", "created": _EPOCH, "owned_by": owner}


def _bind_problem(body: dict[str, Any]) -> str | None:
    """What Go's JSON binding of ``ChatCompletionRequest`` rejects (types only)."""
    messages = body.get("messages")
    if messages is not None and not isinstance(messages, list):
        return "json: cannot unmarshal into Go struct field ChatCompletionRequest.messages"
    for message in messages or []:
        for call in (message.get("tool_calls") or []) if isinstance(message, dict) else []:
            args = (call.get("function") or {}).get("arguments")
            if args is not None and not isinstance(args, str):
                kind = "object" if isinstance(args, dict) else type(args).__name__
                return (
                    f"json: cannot unmarshal {kind} into Go struct field "
                    "ToolCall.messages.tool_calls.function.arguments of type string"
                )
    return None


def _to_native(body: dict[str, Any]) -> dict[str, Any] | str:
    """Ollama's ``FromChatRequest``: the native request, or the 400 message it fails with."""
    messages: list[dict[str, Any]] = []
    names = {
        call.get("id"): (call.get("function") or {}).get("name")
        for m in body["messages"]
        if isinstance(m, dict)
        for call in m.get("tool_calls") or []
    }
    for m in body["messages"]:
        content, calls = m.get("content"), []
        for call in m.get("tool_calls") or []:
            try:
                args = json.loads((call.get("function") or {}).get("arguments") or "")
            except ValueError:
                return "invalid tool call arguments"
            calls.append({"function": {"name": call["function"].get("name"), "arguments": args}})
        if isinstance(content, list):
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        elif content is None and not calls:
            return "invalid message content type: <nil>"
        native: dict[str, Any] = {"role": m.get("role"), "content": content or ""}
        if m.get("reasoning"):
            native["thinking"] = m["reasoning"]
        if calls:
            native["tool_calls"] = calls
        if str(m.get("role")).lower() == "tool":
            name = m.get("name") or names.get(m.get("tool_call_id"))
            if name:
                native["tool_name"] = name
        messages.append(native)
    options: dict[str, Any] = {
        "temperature": body.get("temperature", 1.0),
        "top_p": body.get("top_p", 1.0),
    }
    if body.get("max_tokens") is not None:
        options["num_predict"] = body["max_tokens"]
    native_body: dict[str, Any] = {
        "model": body.get("model"),
        "messages": messages,
        "options": options,
        "stream": bool(body.get("stream")),
    }
    if body.get("tools"):
        native_body["tools"] = body["tools"]
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_object":
        native_body["format"] = "json"
    elif fmt.get("type") == "json_schema" and fmt.get("json_schema"):
        native_body["format"] = fmt["json_schema"].get("schema")
    effort = (body.get("reasoning") or {}).get("effort") or body.get("reasoning_effort")
    if effort:
        if effort not in _EFFORTS:
            return (
                f"invalid reasoning value: '{effort}' "
                '(must be "high", "medium", "low", or "none")'
            )
        native_body["think"] = False if effort == "none" else effort
    return native_body


UNSUPPORTED = "This server does not support slots action. Start it with `--slot-save-path`"
NOT_RESTORED = "Unable to restore slot: No available space in KV cache or invalid slot save file"

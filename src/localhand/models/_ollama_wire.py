"""Ollama's native API (``/api/chat``...) on the wire: the adapter the transport reads errors
and answers through (:class:`OllamaWire`), and converting between localhand's messages and
Ollama's shapes, for the Ollama backend."""

from __future__ import annotations

import json
import os
import platform
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from localhand.errors import (
    ConfigError,
    ModelError,
    ModelNotFound,
    ServerUnavailable,
    ToolsUnsupported,
)
from localhand.models._common import Garbled, positive
from localhand.models._served_figures import ollama_usage
from localhand.types import Message, Reply, ToolCall

if TYPE_CHECKING:
    from localhand.models._http import Response

DEFAULT_PORT = 11434
TOOL_MODELS = "qwen3, llama3.1, mistral-nemo or qwen2.5-coder"
USER_AGENT = (
    f"localhand ({platform.machine()} {platform.system().lower()}) "
    f"Python/{platform.python_version()}"
)
"""What both network backends send as ``User-Agent``, as the official clients do."""


def parse_host(host: str | None) -> str:
    """``OLLAMA_HOST`` (or ``--host``) as a base URL, read as the ``ollama`` client reads it:
    the scheme defaults to http and the port to 11434 (to 80/443 when only a scheme is given),
    IPv6 literals keep their brackets, a path is kept without its slashes."""
    host = host or ""
    scheme, _, rest = host.partition("://")
    port = DEFAULT_PORT
    if not rest:
        scheme, rest = "http", host
    else:
        port = {"http": 80, "https": 443}.get(scheme, DEFAULT_PORT)
    split = urllib.parse.urlsplit(f"{scheme}://{rest}")
    try:
        port = split.port or port
    except ValueError:
        raise ConfigError(
            f"{host!r} is not a valid Ollama address: use host:port or http://host:port "
            "(check --host and the OLLAMA_HOST variable)."
        ) from None
    name = split.hostname or "127.0.0.1"
    if ":" in name:  # an IPv6 literal: urlsplit drops its brackets
        name = f"[{name}]"
    path = split.path.strip("/")
    return f"{scheme}://{name}:{port}/{path}" if path else f"{scheme}://{name}:{port}"


@dataclass(frozen=True, slots=True)
class OllamaWire:
    """Ollama as the transport needs to know it: how errors name it and what to do, which
    error answers mean something (404: no such model; 400: no tools), and its answers: always
    a JSON object (anything else comes from a proxy or another server on the port)."""

    host: str
    model: str
    host_given: bool
    """Whether the address was given (``--host``), rather than read from ``OLLAMA_HOST``."""
    address_flags = "--host or OLLAMA_HOST"
    loading = "loads"
    models_path = "/api/tags"  # what the transport lists when a request names a missing model
    hung_hint = "the server seems hung; restart `ollama serve`"

    @property
    def server(self) -> str:
        return f"Ollama at {self.host}"

    def unavailable(self) -> ServerUnavailable:
        """No Ollama at ``host``: where that address came from, and what to do."""
        where = "given as host" if self.host_given else "from OLLAMA_HOST"
        if not self.host_given and not os.getenv("OLLAMA_HOST"):
            where = "the default; OLLAMA_HOST is not set"
        return ServerUnavailable(
            f"Cannot reach Ollama at {self.host} ({where}). Start it with `ollama serve`, or "
            "point localhand at the right server with --host or the OLLAMA_HOST variable."
        )

    def error_text(self, response: Response) -> str:
        """The message of an error answer: its ``{"error": ...}``, else the start of its
        text."""
        try:
            data = response.json()
        except ValueError:
            return response.text.strip()[:500]
        if isinstance(data, dict) and data.get("error"):
            return str(data["error"])
        return response.text.strip()[:500]

    def refusal(self, status: int, text: str, path: str) -> ModelError | None:
        if status == 404:
            return ModelNotFound(
                f"Ollama at {self.host} does not have the model '{self.model}' ({text}). "
                f"Download it with `ollama pull {self.model}`, or pick one from `ollama list`."
            )
        if status == 400 and "does not support tools" in text:
            return ToolsUnsupported(
                f"The model '{self.model}' cannot take tools (Ollama said: {text}). Pick a "
                f"tool-capable model, e.g. {TOOL_MODELS} (`ollama pull qwen3:8b`)."
            )
        return None

    def decode(self, response: Response) -> dict[str, Any]:
        try:
            data = response.json()
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise self.garbled(".")
        return data

    def garbled(self, end: str) -> Garbled:
        """An answer that is not Ollama's JSON; ``end`` closes the sentence."""
        return Garbled(
            f"Ollama at {self.host} answered with something that is not Ollama's JSON (a "
            f"proxy or another server on that port?){end}"
        )


def request_headers(api_key: str | None) -> dict[str, str]:
    """The headers the official client sends, with the API key (``OLLAMA_API_KEY`` unless
    given) as its bearer token, for ollama.com or a proxy that wants one."""
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json",
        "User-Agent": USER_AGENT,
    }
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    return headers


def truncation(estimate: int, num_ctx: int, evaluated: int) -> str | None:
    """Why the prompt was probably cut to the window, or None. A count of evaluated tokens
    below the estimate is usually a prompt-cache hit, not truncation."""
    if estimate > num_ctx:
        return f"the conversation is about {estimate} tokens"
    if evaluated >= num_ctx * 0.99:
        return f"Ollama evaluated {evaluated} prompt tokens, the whole window"
    return None


def canonical(name: str) -> str:
    name = name.strip().lower()
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"


def trained_context(info: Any) -> int | None:
    """The trained context length in ``/api/show``'s ``model_info``, or None if it is unknown."""
    if not isinstance(info, dict):
        return None
    value = info.get(f"{info.get('general.architecture')}.context_length")
    if value is None:
        value = next((v for k, v in info.items() if str(k).endswith(".context_length")), None)
    return positive(value)


def arguments(value: Any) -> dict[str, Any]:
    """Tool-call arguments as a dict: objects as given, JSON text parsed, else ``__raw__``."""
    if isinstance(value, Mapping):
        return dict(value)
    if value is None or value == "":
        return {}
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = None
        return parsed if isinstance(parsed, dict) else {"__raw__": value}
    return {"__raw__": json.dumps(value, default=str)}


def wire_message(message: Message) -> dict[str, Any]:
    """A history message in the shape Ollama reads."""
    out: dict[str, Any] = {
        "role": message.get("role") or "user",
        "content": str(message.get("content") or ""),
    }
    for key in ("thinking", "tool_name", "images"):
        if message.get(key):
            out[key] = message[key]
    calls = []
    for raw in message.get("tool_calls") or []:
        function = raw.get("function", raw) if isinstance(raw, Mapping) else {}
        calls.append(
            {
                "function": {
                    "name": str(function.get("name") or ""),
                    "arguments": arguments(function.get("arguments")),
                }
            }
        )
    if calls:
        out["tool_calls"] = calls
    return out


def chat_body(
    model: str,
    wire: list[dict[str, Any]],
    *,
    num_ctx: int,
    stream: bool,
    options: Mapping[str, Any],
    num_predict: int | None,
    think: bool | str | None,
    keep_alive: float | str | None,
) -> dict[str, Any]:
    """The ``/api/chat`` body. ``options.num_predict`` is the reply ceiling: Ollama counts the
    thinking and the answer against it together (it has no separate budget for thinking, so a
    model that thinks to the ceiling answers nothing) and stops there with ``done_reason:
    length``. A ``num_predict`` in the user's ``options`` wins; ``num_ctx`` is always ours."""
    ceiling = {} if num_predict is None else {"num_predict": num_predict}
    body: dict[str, Any] = {
        "model": model,
        "messages": wire,
        "stream": stream,
        "options": {**ceiling, **options, "num_ctx": num_ctx},
    }
    if think is not None:
        body["think"] = think
    if keep_alive is not None:
        body["keep_alive"] = keep_alive
    return body


def to_reply(data: Mapping[str, Any], model: str) -> Reply:
    message = data.get("message") or {}
    calls = []
    for raw in message.get("tool_calls") or []:
        function = (raw.get("function") or {}) if isinstance(raw, Mapping) else {}
        name = str(function.get("name") or "")
        call_id = raw.get("id") if isinstance(raw, Mapping) else None
        calls.append(ToolCall(name, arguments(function.get("arguments")), call_id))
    return Reply(
        content=str(message.get("content") or ""),
        thinking=str(message.get("thinking") or ""),
        tool_calls=tuple(calls),
        usage=ollama_usage(data),
        done_reason=data.get("done_reason"),
        model=str(data.get("model") or model),
    )

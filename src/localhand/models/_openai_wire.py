"""OpenAI-compatible servers (``/v1/chat/completions``) on the wire: the adapter the transport
reads errors and answers through (:class:`OpenAIWire`), and converting between localhand's
Ollama-shaped messages and theirs, for the OpenAI-compatible backend.

The differences from Ollama's native API that matter here: tool-call arguments travel as a
JSON *string*; every call has an ``id`` and its result is keyed by ``tool_call_id``; thinking
comes back as ``reasoning_content`` (llama-server, older vLLM) or ``reasoning`` (Ollama, newer
vLLM, LM Studio); ``finish_reason`` says ``tool_calls`` or ``length``; usage is in ``usage``
(with llama-server's ``timings``, read by ``_served_figures``).

Error answers become localhand's ``ModelError``s, each saying what went wrong in the server's
own words and what to do. The servers word the same refusal differently (llama-server, vLLM, LM
Studio, ``llama_cpp.server``, Ollama's ``/v1``), so the cases are recognised by status and by
phrases they share; anything else is the transport's plain ``BadResponse``, retried on 429 and
5xx.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from localhand.errors import (
    BadResponse,
    ConfigError,
    ModelNotFound,
    ServerUnavailable,
    ToolsUnsupported,
)
from localhand.models._common import Garbled
from localhand.models._ollama_wire import USER_AGENT, arguments
from localhand.models._served_figures import openai_usage
from localhand.models.base import ChatOptions
from localhand.types import Message, Reply, ToolCall

if TYPE_CHECKING:
    from localhand.errors import ModelError  # only named in an annotation
    from localhand.models._http import Response

THINK_FIELDS = ("reasoning_content", "reasoning", "thinking")
_CONTEXT_FULL = ("context length", "context size", "context window", "exceeds the available")
_TOOLS_REFUSED = ("does not support tools", "tool choice requires", "tools are not supported")


def base_url(host: str) -> str:
    """``--host`` as the base URL the endpoints hang off: a scheme is added if missing, and
    ``/v1`` when the URL has no path at all (``http://127.0.0.1:8080`` →
    ``http://127.0.0.1:8080/v1``)."""
    text = host.strip()
    if "://" not in text:
        text = "http://" + text
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - raises for a port that is not a number in range
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"{host!r} is not a valid server address: use http://host:port, optionally with "
            "its /v1 path (check --host and the OPENAI_BASE_URL variable)."
        )
    path = parts.path.rstrip("/")
    if not path:
        path = "/v1"
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


class FormatRefused(BadResponse):
    """The server does not take this shape of ``response_format`` (the caller tries the
    other one)."""


@dataclass(frozen=True, slots=True)
class OpenAIWire:
    """An OpenAI-compatible server at ``base_url`` serving ``model``, for the transport."""

    base_url: str
    model: str
    address_flags = "--host"
    loading = "may load"
    models_path = "/models"  # what the transport lists when a request names a missing model
    hung_hint = "the server seems hung"

    @property
    def server(self) -> str:
        return f"the server at {self.base_url}"

    def unavailable(self) -> ServerUnavailable:
        return ServerUnavailable(
            f"Cannot reach an OpenAI-compatible server at {self.base_url}. Start it (for "
            "example `llama-server -m model.gguf --jinja`, `vllm serve`, or LM Studio's server), "
            "or point localhand at it with --host."
        )

    def error_text(self, response: Response) -> str:
        try:
            return error_text(response.json(), response.text)
        except ValueError:
            return error_text(None, response.text)

    def refusal(self, status: int, text: str, path: str) -> ModelError | None:
        """The error for an answer with HTTP ``status`` and message ``text`` to a request for
        ``path`` that says what to do, or None."""
        lowered = text.lower()
        where = f"The server at {self.base_url}"
        if status == 404 and "model" in lowered and path == "/chat/completions":
            return ModelNotFound(
                f"{where} does not have the model '{self.model}' ({text}). Pass a name it "
                f"serves with --model ({self.base_url}/models lists them; for Ollama, "
                f"`ollama pull {self.model}` first)."
            )
        if status == 404:
            return BadResponse(
                f"{where} has no {path} (HTTP 404: {text}). --host must be the "
                "OpenAI-compatible base URL, such as http://127.0.0.1:8080/v1.",
                status=status,
            )
        if status in (400, 422) and any(s in lowered for s in _TOOLS_REFUSED):
            return ToolsUnsupported(
                f"{where} refused tools for '{self.model}' ({text}). Pick a tool-capable "
                "model or server setup (llama-server --jinja, vLLM --enable-auto-tool-choice)."
            )
        # llama_cpp.server reports its request validation errors as HTTP 500
        if status in (400, 422, 500) and ("response_format" in lowered or "json_schema" in lowered):
            return FormatRefused(f"{where} refused the response_format ({text}).")
        if status == 400 and context_full(text):
            return self.too_long(text, status)
        if status in (401, 403):
            return BadResponse(
                f"{where} refused the request (HTTP {status}: {text}); it wants an API key: "
                "set OPENAI_API_KEY.",
                status=status,
            )
        return None

    def decode(self, response: Response) -> Any:
        try:
            return response.json()
        except ValueError:
            raise Garbled(
                f"The server at {self.base_url} answered with something that is not JSON (a "
                "proxy, or another kind of server on that port?)."
            ) from None

    def too_long(self, text: str, status: int | None = None) -> BadResponse:
        """The prompt no longer fits the server's context window: what to change."""
        return BadResponse(
            f"The conversation no longer fits the context window of '{self.model}' at "
            f"{self.base_url} ({text}). Start the server with a larger context "
            "(llama-server -c, vLLM --max-model-len), or keep the task smaller.",
            status=status,
        )


def request_headers(api_key: str) -> dict[str, str]:
    """What every request carries, as the ``openai`` SDK sent it: the key as a bearer token
    (local servers ignore it unless started with one: ``llama-server --api-key``, ``vllm
    serve --api-key``) and JSON as the answer wanted. ``Content-Type`` comes with each body."""
    return {
        "Authorization": f"Bearer {api_key}",
        "Accept": "application/json",
        "User-Agent": USER_AGENT,
    }


def to_openai_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The history as OpenAI messages.

    Calls without an id (a call the parser found in the text, not one the server returned)
    get one; reasoning left in the history (``localhand.profiles.wire_history`` decides which)
    goes as ``reasoning_content``, the field llama-server and vLLM read; each tool result is
    matched to its call: by ``tool_call_id`` when it has one,
    else the oldest unanswered call of that tool. A result with no call to answer becomes a
    user message, since servers reject a ``tool`` message that answers nothing.
    """
    out: list[dict[str, Any]] = []
    pending: list[tuple[str, str]] = []  # (id, name) of calls not answered yet
    for index, message in enumerate(messages):
        role = str(message.get("role") or "user")
        content = str(message.get("content") or "")
        if role == "assistant":
            pending = []
            calls = []
            for number, raw in enumerate(message.get("tool_calls") or []):
                if not isinstance(raw, Mapping):
                    continue
                function = raw.get("function", raw)
                name = str(function.get("name") or "")
                call_id = str(raw.get("id") or f"call_{index}_{number}")
                pending.append((call_id, name))
                args = arguments(function.get("arguments"))
                calls.append(
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(args)},
                    }
                )
            if calls:  # content may be null with calls; some templates choke on ""
                out.append({"role": "assistant", "content": content or None, "tool_calls": calls})
            else:
                out.append({"role": "assistant", "content": content})
            if message.get("thinking"):  # kept only where the profile sends it back
                out[-1]["reasoning_content"] = str(message["thinking"])
        elif role == "tool":
            answered = _answer(pending, message.get("tool_call_id"), message.get("tool_name"))
            if answered is None:
                name = message.get("tool_name") or "a tool"
                out.append({"role": "user", "content": f"Result of {name}:\n{content}"})
            else:
                out.append({"role": "tool", "tool_call_id": answered, "content": content})
        else:
            out.append({"role": role, "content": content})
    return out


def _answer(pending: list[tuple[str, str]], call_id: Any, name: Any) -> str | None:
    """The id of the call a tool result answers, taken off ``pending``; None if none is left."""
    match = next((c for c in pending if c[0] == call_id), None) if call_id else None
    match = match or next((c for c in pending if c[1] == name), None)
    match = match or (pending[0] if pending else None)
    if match is None:
        return None
    pending.remove(match)
    return match[0]


def to_reply(data: Mapping[str, Any], model: str) -> Reply:
    """A ``chat.completion`` body as a Reply."""
    choice = (data.get("choices") or [{}])[0] or {}
    message = choice.get("message") or {}
    calls = []
    for raw in message.get("tool_calls") or []:
        if not isinstance(raw, Mapping):
            continue
        function = raw.get("function") or {}
        name, args = str(function.get("name") or ""), arguments(function.get("arguments"))
        calls.append(ToolCall(name, args, raw.get("id")))
    legacy = message.get("function_call")  # the pre-tools shape some servers still send
    if not calls and isinstance(legacy, Mapping) and legacy.get("name"):
        calls.append(ToolCall(str(legacy["name"]), arguments(legacy.get("arguments"))))
    thinking = next((message[k] for k in THINK_FIELDS if message.get(k)), "")
    return Reply(
        content=content_text(message.get("content")),
        thinking=content_text(thinking),
        tool_calls=tuple(calls),
        usage=openai_usage(data),
        done_reason=choice.get("finish_reason"),
        model=str(data.get("model") or model),
    )


def content_text(value: Any) -> str:
    """A message's content as text: a string, or the text of its content parts."""
    if isinstance(value, list):  # content parts
        return "".join(p.get("text", "") for p in value if isinstance(p, Mapping))
    return "" if value is None else str(value)


def error_text(body: Any, fallback: str) -> str:
    """The message in an error body: OpenAI's ``{"error": {"message"}}``, a bare
    ``{"error": "..."}``, or FastAPI's ``{"detail": ...}``."""
    if isinstance(body, str) and body.strip():
        return body.strip()[:500]
    if isinstance(body, Mapping):
        error = body.get("error", body)
        if isinstance(error, Mapping) and error.get("message"):
            return str(error["message"])
        if isinstance(error, str):
            return error
        if "detail" in body:
            return json.dumps(body["detail"])[:500]
    return re.sub(r"\s+", " ", fallback)[:500]


def context_full(text: str) -> bool:
    """Whether an error message says the prompt does not fit the context window
    (llama-server, vLLM, LM Studio and Ollama word it differently)."""
    lowered = text.lower()
    return any(s in lowered for s in _CONTEXT_FULL)


def response_format(schema: dict[str, Any], style: str) -> dict[str, Any]:
    """``response_format`` for ``schema``: the standard ``json_schema`` form, or llama.cpp's
    older ``json_object`` with a ``schema`` (``style``) once the server refused the standard."""
    if style == "json_object":
        return {"type": "json_object", "schema": schema}
    return {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema}}


def think_of(options: ChatOptions | None) -> bool | str | None:
    """This request's own thinking, if it has one (the think-budget retry's)."""
    return options.think if options is not None else None

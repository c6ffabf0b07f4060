"""OpenAI-compatible servers as the transport needs to know them (:class:`OpenAIWire`): how
errors name the server, and their error answers as localhand's ``ModelError``s, each saying
what went wrong in the server's own words and what to do.

The servers word the same refusal differently (llama-server, vLLM, LM Studio,
``llama_cpp.server``, Ollama's ``/v1``), so the cases are recognised by status and by phrases
they share; anything else is the transport's plain ``BadResponse``, retried on 429 and 5xx.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from localhand.errors import (
    BadResponse,
    ModelError,
    ModelNotFound,
    ServerUnavailable,
    ToolsUnsupported,
)
from localhand.models._common import Garbled
from localhand.models._openai_wire import context_full, error_text

if TYPE_CHECKING:
    from localhand.models._http import Response

_TOOLS_REFUSED = ("does not support tools", "tool choice requires", "tools are not supported")


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

"""Error answers of OpenAI-compatible servers as localhand's ``ModelError``s, for
``OpenAICompatModel``: each says what went wrong in the server's own words and what to do.

The servers word the same refusal differently (llama-server, vLLM, LM Studio,
``llama_cpp.server``, Ollama's ``/v1``), so the cases are recognised by status and by phrases
they share; anything else is a plain ``BadResponse``, retried on 429 and 5xx.
"""

from __future__ import annotations

from localhand.errors import BadResponse, ModelNotFound, ToolsUnsupported
from localhand.models._common import Retry
from localhand.models._openai_wire import context_full

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
_TOOLS_REFUSED = ("does not support tools", "tool choice requires", "tools are not supported")


class FormatRefused(BadResponse):
    """The server does not take this shape of ``response_format`` (the caller tries the
    other one)."""


def too_long(base_url: str, model: str, text: str, status: int | None = None) -> BadResponse:
    """The prompt no longer fits the server's context window: what to change."""
    return BadResponse(
        f"The conversation no longer fits the context window of '{model}' at "
        f"{base_url} ({text}). Start the server with a larger context "
        "(llama-server -c, vLLM --max-model-len), or keep the task smaller.",
        status=status,
    )


def status_error(base_url: str, model: str, status: int, text: str, path: str) -> Exception:
    """The error for an answer with HTTP ``status`` and message ``text`` to a request for
    ``path``, in ``Retry`` when another try may help."""
    lowered = text.lower()
    where = f"The server at {base_url}"
    if status == 404 and "model" in lowered and path == "/chat/completions":
        return ModelNotFound(
            f"{where} does not have the model '{model}' ({text}). Pass a name it "
            f"serves with --model ({base_url}/models lists them; for Ollama, "
            f"`ollama pull {model}` first)."
        )
    if status == 404:
        return BadResponse(
            f"{where} has no {path} (HTTP 404: {text}). --host must be the "
            "OpenAI-compatible base URL, such as http://127.0.0.1:8080/v1.",
            status=status,
        )
    if status in (400, 422) and any(s in lowered for s in _TOOLS_REFUSED):
        return ToolsUnsupported(
            f"{where} refused tools for '{model}' ({text}). Pick a tool-capable "
            "model or server setup (llama-server --jinja, vLLM --enable-auto-tool-choice)."
        )
    # llama_cpp.server reports its request validation errors as HTTP 500
    if status in (400, 422, 500) and ("response_format" in lowered or "json_schema" in lowered):
        return FormatRefused(f"{where} refused the response_format ({text}).")
    if status == 400 and context_full(text):
        return too_long(base_url, model, text, status)
    if status in (401, 403):
        return BadResponse(
            f"{where} refused the request (HTTP {status}: {text}); it wants an API key: "
            "set OPENAI_API_KEY.",
            status=status,
        )
    error = BadResponse(
        f"{where} answered HTTP {status}: {text}",
        retryable=status in RETRY_STATUSES,
        status=status,
    )
    return Retry(error) if error.retryable else error

"""The context window an OpenAI-compatible server gives a request, asked before the first one.

The loop compacts the history before the window is full and warns when a prompt will not
fit; both need the window the server really has, not a guess:

- llama-server publishes it at ``GET /props`` (at the server's root, not under ``/v1``):
  ``default_generation_settings.n_ctx``, the window of one slot (its ``-c`` divided among
  ``--parallel`` slots), which is what one request gets.
- vLLM lists ``max_model_len`` for each model at ``GET /v1/models``.
- LM Studio and Ollama's ``/v1`` say nothing here (Ollama's is read by its own backend from
  ``/api/show``); the window then stays unknown unless given (``context_length``).

Never raises: a server that does not answer just leaves the window unknown. ``/props`` is
read once per backend (``server_props``) and serves the slot count too (``_slots``).
"""

from __future__ import annotations

from typing import Any

from localhand.models._common import positive
from localhand.models._http import json_or_none


def root_of(base_url: str) -> str:
    """The server's root (``/props`` lives there, not under ``/v1``)."""
    return base_url.rstrip("/").removesuffix("/v1")


def server_props(base_url: str, timeout: float = 5.0) -> dict[str, Any] | None:
    """llama-server's ``GET /props`` of the server at ``base_url`` (``.../v1``); None when it
    does not answer with an object (vLLM, LM Studio, Ollama's ``/v1``)."""
    props = json_or_none(root_of(base_url), "GET", "/props", timeout=timeout)
    return props if isinstance(props, dict) else None


def served_context(
    base_url: str, model: str, props: dict[str, Any] | None, timeout: float = 5.0
) -> int | None:
    """The window, in tokens, the server at ``base_url`` (``.../v1``) gives ``model``, from its
    ``props`` (``server_props``) or else its model list."""
    settings = props.get("default_generation_settings") if props else None
    n_ctx = positive(settings.get("n_ctx")) if isinstance(settings, dict) else None
    if n_ctx:
        return n_ctx
    root = root_of(base_url)
    path = base_url.rstrip("/")[len(root) :] + "/models"
    listed = json_or_none(root, "GET", path, timeout=timeout)
    for entry in (listed.get("data") if isinstance(listed, dict) else None) or []:
        if isinstance(entry, dict) and entry.get("id") in (model, model.split("/")[-1]):
            return positive(entry.get("max_model_len"))
    return None

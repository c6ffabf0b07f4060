"""Whether the server's chat template shows the model the tools it is sent (llama-server).

Some templates render no tool schema at all (Gemma 3's): a server given ``tools`` with one
(llama-server ``--jinja``) shows the model nothing, so it is never told which tools exist. A
family profile can say so (``native_tools_llama_server = false``); for any other template
llama-server can be asked. ``POST /apply-template`` (at the server's root) renders a
conversation with the template the server really uses and answers ``{"prompt": ...}``
without running the model: one conversation of one user message and one tool whose name
appears nowhere else tells whether the template renders tools.

Asked once per backend, before its first request with tools. A server without the endpoint
(vLLM, LM Studio, Ollama's ``/v1``: a 404), or one that does not answer, leaves it unknown
(``None``): the profile decides then, as before. Never raises: the answer is a hint.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from localhand.models._http import json_or_none
from localhand.models._served_context import root_of

PROBE_TOOL = "localhand_probe_tool_q7z"
"""A tool name no template or message contains: seen in the prompt only if tools are rendered."""

PROBE_BODY: dict[str, Any] = {
    "messages": [{"role": "user", "content": "Hello."}],
    "tools": [
        {
            "type": "function",
            "function": {
                "name": PROBE_TOOL,
                "description": "Checks that the tools are shown.",
                "parameters": {"type": "object", "properties": {}},
            },
        }
    ],
}


def template_renders_tools(
    base_url: str, headers: Mapping[str, str] | None = None, timeout: float = 5.0
) -> bool | None:
    """Whether the template of the server at ``base_url`` (``.../v1``) renders the tools it
    is sent: True, False, or None when the server cannot say (no ``/apply-template``).
    ``headers``: the backend's own (its API key, for a server started with one)."""
    root = root_of(base_url)
    data = json_or_none(
        root, "POST", "/apply-template", PROBE_BODY, timeout=timeout, headers=headers
    )
    prompt = data.get("prompt") if isinstance(data, dict) else None
    if not isinstance(prompt, str) or not prompt:
        return None
    return PROBE_TOOL in prompt

"""The tools described in localhand's own system prompt, for a template that drops them.

Gemma 3's chat template renders no tool schema: a server sent ``tools`` with it (llama-server
``--jinja``) shows the model nothing, so the model is never told which tools exist (measured
here: 441 prompt tokens under Gemma 3's template against 1,199 under Qwen3's for the same
request). A family profile says so (``native_tools_llama_server=False``), or llama-server's
``/apply-template`` shows it (``ChatModel.template_renders_tools``); then the tools are
written into the system prompt once, in the family's own text-call format
(``Profile.call_example``), before the first request. The system turn never changes after
that, so the text sits in the cached prefix of every later request.

Backends that already describe the tools themselves (the embedded model and ``schema`` mode,
through ``models._json_calls.plain_messages``) are left alone: the tools are said once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from localhand.models._json_calls import TOOL_TEXT_MARK, signature
from localhand.models.base import ChatModel
from localhand.profiles import Profile
from localhand.types import Message

SHORT_WINDOW = 8192
"""At or below this many tokens of context, each tool gets its first sentence only."""


def template_hides_tools(profile: Profile, model: ChatModel) -> bool:
    """Whether ``model`` sends tools natively to a server whose template will not show them.

    Only the OpenAI-compatible backend (llama-server, vLLM...) sends tools that way; in its
    ``schema`` mode it describes them itself. What the server says of its template
    (``template_renders_tools``: llama-server's ``/apply-template``) wins; where it cannot
    say, the family's profile does.
    """
    if model.server_kind != "openai" or model.call_transport != "native":
        return False
    if model.template_renders_tools is not None:
        return not model.template_renders_tools
    return not profile.native_tools_llama_server


def describe_tools(definitions: Sequence[Mapping[str, Any]], profile: Profile) -> str:
    """The tools in a few lines, with one call written as the family writes it. A small
    window's definitions come already short (``sized_definitions``)."""
    lines = [
        f"{TOOL_TEXT_MARK} To call one, write the call as in this example, and nothing "
        f"after it:\n{profile.call_example}"
    ]
    for tool in definitions:
        function = tool.get("function", tool)
        about = " ".join(str(function.get("description") or "").split())
        lines.append(f"- {signature(function)}: {about}".rstrip(": "))
    return "\n".join(lines)


def with_tool_text(
    messages: list[Message],
    profile: Profile,
    definitions: Sequence[Mapping[str, Any]],
    model: ChatModel,
) -> list[Message]:
    """``messages`` with the tools described at the end of the system turn, when the server's
    template would hide them; ``messages`` unchanged otherwise."""
    if not definitions or not template_hides_tools(profile, model):
        return messages
    if not messages or messages[0].get("role") != "system":
        return messages
    text = describe_tools(definitions, profile)
    system = {**messages[0], "content": f"{messages[0].get('content') or ''}\n\n{text}"}
    return [system, *messages[1:]]


def sized_definitions(
    definitions: list[dict[str, Any]], window: int | None
) -> list[dict[str, Any]]:
    """``definitions`` as sent: whole, or for a window of ``SHORT_WINDOW`` tokens or less (a
    small model's), each tool's first sentence and no argument descriptions."""
    if window is None or window > SHORT_WINDOW:
        return definitions
    return [_short(definition) for definition in definitions]


def _short(definition: dict[str, Any]) -> dict[str, Any]:
    function = dict(definition.get("function", definition))
    about = " ".join(str(function.get("description") or "").split())
    function["description"] = about.split(". ")[0]
    params = dict(function.get("parameters") or {})
    properties = params.get("properties")
    if isinstance(properties, dict):
        params["properties"] = {
            name: {k: v for k, v in spec.items() if k != "description"}
            if isinstance(spec, dict)
            else spec
            for name, spec in properties.items()
        }
        function["parameters"] = params
    return {**definition, "function": function} if "function" in definition else function


def known_window(model: ChatModel) -> int | None:
    """The model's context window if it can be told now; None when not (a server that is not
    up yet answers the first request with the error that says so, not this)."""
    try:
        window = model.context_limit
    except Exception:  # only a sizing hint: never fail the run for it
        return None
    return window if isinstance(window, int) and window > 0 else None

"""What to say when a server answers but lacks the model: the same words for Ollama and the
OpenAI-compatible servers, whether it is found out before the run (``--backend auto``) or by
the first request (an explicit backend): the models the server has, one that takes tools
when known, and how to get the one asked for.
"""

from __future__ import annotations

from collections.abc import Sequence

from localhand.models._network import listed_names
from localhand.profiles import GENERIC, profile_for

__all__ = ["has_models", "listed_names", "pick_tool_model"]

_SHOWN = 20
"""Models named in a message at most: a server with a hundred would bury the point."""


def has_models(names: Sequence[str], tool_model: str | None = None) -> str:
    """The sentence that lists ``names`` and, when given, suggests ``tool_model``."""
    if not names:
        return "It has no models yet."
    shown = sorted(names)[:_SHOWN]
    more = f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else ""
    text = f"The models it has: {', '.join(shown)}{more}."
    if tool_model:
        text += f" {tool_model} takes tools: --model {tool_model}."
    return text


def pick_tool_model(candidates: Sequence[tuple[str, bool | None]]) -> str | None:
    """The model to suggest among ``(name, takes tools)``: one that says it takes tools and
    whose family localhand has a profile for, else any that takes tools, else None."""
    capable = sorted(name for name, tools in candidates if tools)
    known = [name for name in capable if profile_for(name) is not GENERIC]
    chosen = known or capable
    return chosen[0] if chosen else None

"""A profile as request fields, per backend: the thinking switch and the sampling options.

The same intent ("think", "do not think", "sample as the makers recommend") is spelled
differently on each wire:

- **Ollama** (``/api/chat``): a top-level ``think`` (``true``/``false``, or gpt-oss's effort
  level) and the sampling in ``options`` under Ollama's names.
- **llama-server and vLLM** (``/v1/chat/completions``): the template's own switch in
  ``chat_template_kwargs`` (``enable_thinking``, Granite's ``thinking``, gpt-oss's
  ``reasoning_effort``), and the sampling as top-level fields. The repetition penalty is
  ``repeat_penalty`` to llama-server and ``repetition_penalty`` to vLLM; both are sent, each
  server ignoring the other's.
- **Embedded** (llama-cpp-python, our own template rendering): the same kwargs go into the
  template, and the sampling into ``create_completion``'s arguments.

A soft switch (``/no_think``) is never written into the history: localhand appends it only to
a user turn it adds itself (the think-budget retry), so no earlier message is rewritten and the
server's cached prefix stays valid.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from localhand.profiles.model import Profile

Backend = Literal["ollama", "openai", "embedded"]

_OPENAI_NAMES = {"repeat_penalty": ("repeat_penalty", "repetition_penalty")}


@dataclass(frozen=True, slots=True)
class ThinkingSwitch:
    """How one request asks for thinking on or off."""

    thinks: bool
    """Whether the request thinks (``always`` families do even when asked not to)."""
    ollama_think: bool | str | None = None
    """Ollama's ``think`` field; ``None`` leaves it out (the model's default)."""
    template_kwargs: dict[str, Any] = field(default_factory=dict)
    """``chat_template_kwargs`` for llama-server and vLLM; the embedded backend's template
    variables."""
    soft_switch: str = ""
    """Text for the end of a user turn localhand adds, when thinking is asked off."""


def thinking_switch(profile: Profile, on: bool | str | None = None) -> ThinkingSwitch:
    """How to ask ``profile``'s family to think (``on``: ``True``, ``False``, an effort level
    ``low``/``medium``/``high``, or ``None`` for the profile's own choice)."""
    level = on if isinstance(on, str) else None
    wanted = profile.thinks(None if on is None else bool(on))
    if profile.thinking == "none":
        return ThinkingSwitch(thinks=False)
    if profile.ollama_think == "level" or profile.template_switch == "reasoning_effort":
        # gpt-oss: never off; "low" is as little as it goes, "medium" its own default.
        effort = level or ("low" if on is False else "medium")
        return ThinkingSwitch(
            thinks=True,
            ollama_think=effort if profile.ollama_think == "level" else None,
            template_kwargs={"reasoning_effort": effort},
        )
    if profile.thinking == "always" and on is None:
        return ThinkingSwitch(thinks=True)  # leave the default: it thinks anyway
    # A level asked for goes as given: Ollama reads any level as "on" for a model without levels.
    ollama = (level or wanted) if profile.ollama_think == "bool" else None
    kwargs = {profile.template_switch: wanted} if profile.template_switch else {}
    soft = "" if wanted else profile.soft_switch
    return ThinkingSwitch(
        thinks=wanted, ollama_think=ollama, template_kwargs=kwargs, soft_switch=soft
    )


def sampling_options(profile: Profile, thinks: bool, backend: Backend) -> dict[str, float | int]:
    """The sampling for a request, under the names ``backend`` reads: Ollama's ``options`` and
    llama-cpp-python take localhand's names; OpenAI-compatible servers get both spellings of
    the repeat penalty."""
    values = profile.sampling_for(thinks).values()
    if backend != "openai":
        return values
    out: dict[str, float | int] = {}
    for name, value in values.items():
        for spelled in _OPENAI_NAMES.get(name, (name,)):
            out[spelled] = value
    return out

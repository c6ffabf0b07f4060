"""What one model family needs from localhand, as a value: the fields of a profile.

A profile is data, not behaviour: ``localhand.profiles.request`` turns it into what goes on
each backend's wire, ``localhand.profiles.history`` into the shape of the conversation, and the
loop reads its thinking budget. Every field has a neutral value (``GENERIC``), so a model that
matches no family is treated as localhand always treated every model.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Thinking = Literal["none", "always", "hybrid"]
"""``none``: the family does not reason before answering; ``always``: it cannot be told not to
(DeepSeek-R1, gpt-oss, Magistral); ``hybrid``: a switch turns it on and off (Qwen3, GLM-4.5)."""

OllamaThink = Literal["bool", "level", "none"]
"""How Ollama's ``think`` field speaks to the family: ``true``/``false``, an effort level
(gpt-oss: ``low``/``medium``/``high``, never off), or not at all."""

ReasoningReturn = Literal["never", "current_turn", "tool_chain"]
"""Which assistant turns carry their reasoning back in the history. ``current_turn``: those
after the last user message, the chain of tool calls the model is still in (the turns its
template renders reasoning for: Qwen3, GLM-4.5, Gemma 4's thought channel before a call);
``tool_chain``: every turn with calls since the last answer without one (harmony's rule for
gpt-oss's analysis channel, which a nudge does not end); ``never``: none (the template drops
it anyway, or renders it nowhere)."""

TextCallHistory = Literal["keep_text", "native", "as_text"]
"""How a call the model wrote as text is stored: ``keep_text``, the reply byte for byte, its
result sent as the template's plain user turn; ``native``, as ``tool_calls`` that the template
renders in the family's own call syntax, its result as a ``tool`` message answering it;
``as_text``, every call as text, a native one too, written in the family's format, for a
template that renders no ``tool_calls`` at all (Granite 3.x, Gemma 3)."""

ToolResultRole = Literal["tool", "user"]
"""``user`` for a template that knows no tool role (Gemma 3): each round's results go back as
one user turn, so that user and assistant turns still alternate."""

CallIds = Literal["any", "mistral9"]
"""``mistral9``: Mistral's templates take only ids of 9 letters and digits."""

SAMPLING_FIELDS = ("temperature", "top_p", "top_k", "min_p", "repeat_penalty", "presence_penalty")


@dataclass(frozen=True, slots=True)
class Sampling:
    """Sampling a family's makers recommend; ``None`` leaves the server's own value."""

    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    min_p: float | None = None
    repeat_penalty: float | None = None
    presence_penalty: float | None = None

    def values(self) -> dict[str, float | int]:
        """The options that are set, by localhand's (and Ollama's) names."""
        return {name: value for name, value in asdict(self).items() if value is not None}


@dataclass(frozen=True, slots=True)
class Profile:
    """What one model family needs. See ``localhand.profiles.table`` for the families."""

    name: str
    """The profile's key (``qwen3``), as ``[profiles.NAME]`` in ``localhand.toml`` names it."""
    patterns: tuple[str, ...] = ()
    """Regular expressions searched in the normalised model name (``localhand.profiles.match``)."""
    thinking: Thinking = "none"
    think: bool = False
    """Whether localhand asks a ``hybrid`` family to think. An ``always`` family thinks anyway."""
    ollama_think: OllamaThink = "none"
    template_switch: str = ""
    """The ``chat_template_kwargs`` key that switches thinking on llama-server and vLLM
    (``enable_thinking``, Granite's ``thinking``, gpt-oss's ``reasoning_effort``); empty: none."""
    soft_switch: str = ""
    """Text that turns thinking off when written at the end of a user turn (Qwen3's
    ``/no_think``, GLM's ``/nothink``), for a server that passes no template switch."""
    reasoning_return: ReasoningReturn = "never"
    sampling: Sampling = field(default_factory=Sampling)
    """As the family's makers recommend it, while thinking (or always, for one that cannot)."""
    sampling_no_think: Sampling | None = None
    """A hybrid family's sampling with thinking off, where its makers recommend another."""
    text_format: str = "json"
    """The text call format the family writes when it writes one (the parser's name for it)."""
    call_example: str = '{"name": "read_file", "arguments": {"path": "calc.py"}}'
    """One call in that format, for a prompt that shows the model how to call a tool."""
    native_tools_ollama: bool = True
    """Whether tools sent through Ollama's ``tools`` come back as ``tool_calls``."""
    native_tools_llama_server: bool = True
    """Whether llama-server (``--jinja``) renders the tools and parses the calls."""
    text_call_history: TextCallHistory = "keep_text"
    tool_result_role: ToolResultRole = "tool"
    call_ids: CallIds = "any"
    think_budget: int | None = None
    """Tokens of thinking after which a reply is cut and asked again with thinking off."""
    family: str = ""
    """Who makes it and which models, in words, for people."""

    def sampling_for(self, thinking: bool) -> Sampling:
        """The sampling for a request with thinking on or off."""
        if not thinking and self.sampling_no_think is not None:
            return self.sampling_no_think
        return self.sampling

    def thinks(self, requested: bool | None = None) -> bool:
        """Whether a request thinks: ``requested`` (the user's ``--think``) over the profile."""
        if self.thinking == "always":
            return True
        if self.thinking == "none":
            return False
        return self.think if requested is None else requested

    def describe(self, think_budget: int | None) -> str:
        """One line for the ``model_status`` event: the profile and what it changes, with the
        think budget in force (``None`` or 0: none)."""
        budget = think_budget
        parts = [f"profile {self.name}"]
        if self.thinking != "none":
            parts.append(f"thinking {'on' if self.thinks() else 'off'} ({self.thinking})")
            parts.append(f"think budget {budget} tokens" if budget else "no think budget")
        sampling = ", ".join(f"{k} {v}" for k, v in self.sampling.values().items())
        parts.append(f"sampling {sampling}" if sampling else "the server's sampling")
        if self.reasoning_return != "never":
            parts.append(f"reasoning sent back ({self.reasoning_return.replace('_', ' ')})")
        return "; ".join(parts)

    def summary(self) -> dict[str, Any]:
        """What the Result and the ``model_status`` event say about the profile that applied."""
        return {
            "profile": self.name,
            "thinking": self.thinking,
            "sampling": self.sampling.values(),
            "text_call_history": self.text_call_history,
            "reasoning_return": self.reasoning_return,
            "think_budget": self.think_budget,
        }


GENERIC = Profile(name="generic", family="any other model: localhand's defaults")
"""For a model of no known family: nothing sent that the server would not choose itself."""

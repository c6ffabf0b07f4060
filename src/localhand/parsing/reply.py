"""What the parser hands to the loop: one frozen ``ParsedReply`` per assistant message."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from localhand.types import ToolCall

ReplyType = Literal["tool_calls", "final_answer", "empty"]


@dataclass(frozen=True, slots=True)
class ParsedReply:
    """One assistant message, classified.

    ``type`` is ``tool_calls`` when ``calls`` is non-empty, else ``final_answer`` when text is
    left once thinking and call markup are removed and nothing tried to be a call, else
    ``empty``. A reply whose call was cut off or unusable (``malformed``) is never a
    ``final_answer``, whatever else it says or flags: it is ``empty``, its prose in ``content``,
    and ``needs_constrained_retry`` is true. Before accepting a final answer the loop should
    still check ``truncated`` (the answer was cut off).
    """

    type: ReplyType
    calls: tuple[ToolCall, ...] = ()
    content: str = ""
    """Text outside thinking and outside any call markup (the final answer, or prose
    written next to the calls)."""
    thinking: str = ""
    """Everything the model wrote as deliberation: the ``thinking`` field and think blocks."""
    source: str | None = None
    """Which format the calls came from (``native``, ``hermes``, ``json``, ...), joined by
    ``+`` when one reply mixed formats; ``final_answer_json`` for ``{"final_answer": ...}``."""
    thinking_calls: tuple[ToolCall, ...] = ()
    """Calls written inside thinking. They are never executed: when they are all the reply
    holds (``only_thinking_calls``), the loop should tell the model to actually make the call."""
    truncated: bool = False
    """The server stopped at the token limit (``done_reason == "length"``). A call cut off by
    the limit is never in ``calls``."""
    malformed: tuple[str, ...] = ()
    """Snippets that clearly tried to be a call but could not be parsed (broken JSON in
    ``<tool_call>``, a value that was never written or that the end of the text cut, unusable
    arguments, call markup the length limit cut). With no ``calls`` the reply is ``empty`` and
    the loop should re-ask with ``format=call_schema(tools)``."""
    rejected_calls: tuple[ToolCall, ...] = ()
    """Call-shaped JSON in the text naming a tool that was not offered. By rule this is text,
    not a call (prose often shows JSON examples). When such JSON is the whole reply it is an
    attempt, not an example, and it is also listed in ``malformed``."""
    repaired: bool = False
    """At least one call needed lenient parsing (Python literals, ``json-repair``)."""

    @property
    def only_thinking_calls(self) -> bool:
        """True when the only calls in the reply were written inside thinking."""
        return not self.calls and bool(self.thinking_calls)

    @property
    def needs_constrained_retry(self) -> bool:
        """True when the reply tried to call a tool and failed (``malformed`` and no
        ``calls``): re-ask with ``format=call_schema(tools)`` before accepting any answer."""
        return not self.calls and bool(self.malformed)

"""What the loop tells a model whose reply it could not use, in words a small model can act on.

One nudge per kind of unusable reply: a cut-off reply, a call made only in the thinking,
an unknown tool, broken call syntax, an answer before any action, an empty reply. The loop
decides *whether* to nudge (and stops the run after ``Limits.max_nudges`` in a row); this
module only says *what*.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from localhand.events import summarize
from localhand.models.base import ChatModel
from localhand.models.watch import Loop
from localhand.parsing import ParsedReply
from localhand.prompt.system import (
    NUDGE_EMPTY,
    NUDGE_MALFORMED,
    NUDGE_NO_ACTION,
    NUDGE_THINKING_ONLY,
    NUDGE_TRUNCATED,
    NUDGE_UNKNOWN_TOOL,
)
from localhand.types import ToolCall, ToolResult

CUT_OFF = (
    "Your last reply was cut off after {tokens} tokens, the most one reply may have, so "
    "nothing in it was run. Reply shorter: make one tool call, with no long explanation "
    "before it{think}. For a large file, write a first part with write_file and add the rest "
    "with edit_file, or change only what needs changing with edit_file."
)

LOOPED = (
    "Your last reply kept repeating the same text, {span}, over and over, so it was stopped "
    "after {tokens} tokens and nothing in it was run. Do not repeat yourself: make one tool "
    "call, with no long explanation before it{think}, or give your final answer if the task "
    "is done."
)


def nudge_text(parsed: ParsedReply, tool_names: Sequence[str], cut_off: CutOff) -> str:
    """The nudge for the unusable reply ``parsed``; ``tool_names`` are the offered tools."""
    if parsed.truncated:
        return cut_off.text(parsed)
    if parsed.only_thinking_calls:
        return NUDGE_THINKING_ONLY
    if parsed.rejected_calls:
        unknown = ", ".join(sorted({call.name for call in parsed.rejected_calls}))
        return NUDGE_UNKNOWN_TOOL.format(unknown=unknown, tools=", ".join(tool_names))
    if parsed.malformed:
        return NUDGE_MALFORMED
    if parsed.type == "final_answer":
        return NUDGE_NO_ACTION
    return NUDGE_EMPTY


class CutOff:
    """What is known about a reply that was cut off: how many tokens it had, and the loop the
    reply watcher stopped, if it was the watcher that cut it."""

    def __init__(self, model: ChatModel, reply_tokens: int = 0, loop: Loop | None = None):
        self.model = model
        self.reply_tokens = reply_tokens
        self.loop = loop

    def text(self, parsed: ParsedReply) -> str:
        """At how many tokens the reply was cut, and what to do instead. Falls back to the
        general words when neither the server nor the backend says how many tokens a reply
        may have."""
        tokens = self.reply_tokens or reply_ceiling(self.model)
        if self.loop is not None:  # stopped by the watcher: say what it kept writing
            span = summarize(json.dumps(self.loop.span, ensure_ascii=False), 80)
            think = ", and keep your thinking short" if parsed.thinking else ""
            return LOOPED.format(span=span, tokens=tokens, think=think)
        if not tokens:
            return NUDGE_TRUNCATED
        think = ", and think briefly: your thinking counts toward the limit"
        return CUT_OFF.format(tokens=tokens, think=think if parsed.thinking else "")


def reply_ceiling(model: ChatModel) -> int | None:
    """The most tokens ``model`` lets one reply have, when it says (``max_reply_tokens`` on
    the Ollama backend, ``max_tokens`` on the others)."""
    value = model.reply_ceiling
    return value if isinstance(value, int) and value > 0 else None


REPEAT_NOTE = (
    "\n[You made this exact call in your previous turn. Repeating it gives no new information: "
    "act on the result above, or do something different.]"
)


def repeat_noted(call: ToolCall, result: ToolResult, previous: set[str]) -> ToolResult:
    """``result``, saying so where ``call`` is one of the ``previous`` round's (canonical)
    calls and brought nothing new: small models loop on one call, and saying so often breaks
    the loop before the repetition guardrail has to end the run."""
    if call.canonical() not in previous or result.progress:  # a wait that got output: news
        return result
    return ToolResult(result.content + REPEAT_NOTE, result.ok)

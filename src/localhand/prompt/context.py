"""Keeping the conversation inside the model's context window.

The history is append-only so the server's prompt cache stays warm. When the prompt nears the
window, older tool results are replaced by short stubs all at once, in one block: the cache
is lost once, and the history is append-only again until the window fills up next time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from localhand.models.tokens import estimate_prompt_tokens, estimate_text_tokens
from localhand.types import Message

COMPACT_AT = 0.75
"""Compact when the estimated prompt reaches this share of the window..."""
COMPACT_TO = 0.5
"""...down to this share, so that the next compaction is many turns away."""
KEEP_RECENT = 2
"""The most recent tool results are always kept whole: the model is working with them."""
STUB_HEAD = 200
GROWTH_PER_ITERATION = 400
"""Tokens a conversation grows by per iteration, for choosing the window before the first
request: a tool call and its (capped) result. The 30-step benchmark task grows by ~270."""
DEFAULT_ITERATIONS = 20


@dataclass(frozen=True, slots=True)
class Compaction:
    messages: list[Message]
    compacted: int
    chars_saved: int
    tokens_saved: int = 0
    """Estimated (``localhand.models.tokens``)."""


def compact_tool_results(messages: Sequence[Message], tokens_to_save: int) -> Compaction:
    """Stub out the oldest tool results, oldest first, until about ``tokens_to_save`` are
    saved (as ``localhand.models.tokens`` estimates them).

    The last ``KEEP_RECENT`` results are never touched."""
    tool_indexes = [i for i, m in enumerate(messages) if m.get("role") == "tool"]
    candidates = tool_indexes[:-KEEP_RECENT]
    result = list(messages)
    compacted = chars_saved = tokens_saved = 0
    for index in candidates:
        if tokens_saved >= tokens_to_save:
            break
        content = str(result[index].get("content") or "")
        if len(content) <= STUB_HEAD * 2 or _is_stub(content):
            continue
        stub = (
            f"{content[:STUB_HEAD]}\n{_STUB_NOTE} {len(content) - STUB_HEAD} characters cut. "
            "Run the tool again if you need it.]"
        )
        result[index] = {**result[index], "content": stub}
        compacted += 1
        chars_saved += len(content) - len(stub)
        tokens_saved += estimate_text_tokens(content) - estimate_text_tokens(stub)
    return Compaction(result, compacted, chars_saved, tokens_saved)


_STUB_NOTE = "[... older output compacted to save context:"


def _is_stub(content: str) -> bool:
    return _STUB_NOTE in content[STUB_HEAD : STUB_HEAD + len(_STUB_NOTE) + 2]


def expected_tokens(first_prompt: int, max_iterations: int | None, budget: int | None) -> int:
    """How long a run's conversation may get: its first prompt and what each iteration it may
    take adds, never more than its token budget (every prompt counts against it)."""
    expected = first_prompt + (max_iterations or DEFAULT_ITERATIONS) * GROWTH_PER_ITERATION
    return min(expected, budget) if budget else expected


class ContextWindow:
    """Keeps one run's conversation inside the model's window: compacts when the prompt
    reaches ``COMPACT_AT`` of it, and warns (once) when there is nothing left to compact."""

    def __init__(self, warn: Callable[[str], None]) -> None:
        self.warn = warn
        self._warned_full = False

    def keep(
        self,
        messages: list[Message],
        definitions: Sequence[dict[str, Any]] | None,
        limit: int | None,
    ) -> tuple[list[Message], int]:
        """``messages``, compacted if they near ``limit`` tokens, and their estimated tokens."""
        used = estimate_prompt_tokens(messages, definitions)
        if not limit or used < COMPACT_AT * limit:
            return messages, used
        compaction = compact_tool_results(messages, used - int(COMPACT_TO * limit))
        if compaction.compacted:
            self.warn(
                f"the conversation reached about {used} of {limit} tokens: compacted "
                f"{compaction.compacted} older tool results ({compaction.chars_saved} characters)"
            )
            return compaction.messages, estimate_prompt_tokens(compaction.messages, definitions)
        if not self._warned_full:
            self._warned_full = True
            self.warn(
                f"the conversation is about {used} of {limit} tokens with nothing left to "
                "compact; the server may drop its start (raise num_ctx_max if memory allows)"
            )
        return messages, used

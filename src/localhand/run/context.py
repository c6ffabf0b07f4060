"""Keeping the conversation inside the model's context window.

The history is append-only so the server's prompt cache stays warm. When the prompt nears the
window, older tool results are replaced by short stubs all at once, in one block: the cache
is lost once, and the history is append-only again until the window fills up next time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from localhand.run.tokens import estimate_text_tokens
from localhand.types import Message

COMPACT_AT = 0.75
"""Compact when the estimated prompt reaches this share of the window..."""
COMPACT_TO = 0.5
"""...down to this share, so that the next compaction is many turns away."""
KEEP_RECENT = 2
"""The most recent tool results are always kept whole: the model is working with them."""
STUB_HEAD = 200


@dataclass(frozen=True, slots=True)
class Compaction:
    messages: list[Message]
    compacted: int
    chars_saved: int
    tokens_saved: int = 0
    """Estimated (``localhand.run.tokens``)."""


def compact_tool_results(
    messages: Sequence[Message], tokens_to_save: int, keep_recent: int = KEEP_RECENT
) -> Compaction:
    """Stub out the oldest tool results, oldest first, until about ``tokens_to_save`` are
    saved (as ``localhand.run.tokens`` estimates them).

    The last ``keep_recent`` results are never touched."""
    tool_indexes = [i for i, m in enumerate(messages) if m.get("role") == "tool"]
    candidates = tool_indexes[:-keep_recent] if keep_recent else tool_indexes
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

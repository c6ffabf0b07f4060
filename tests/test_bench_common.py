"""The benchmarks' request analysis (benchmarks/_common.py): a request reuses the server's
prompt cache only when it extends the previous one and keeps its num_ctx."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCH))

from _common import economy  # noqa: E402


class CharTokenizer:
    name = "chars"

    def count(self, text: str) -> int:
        return len(text)


def request(messages: list[dict[str, Any]], num_ctx: int) -> dict[str, Any]:
    body = {"messages": messages, "tools": [], "options": {"num_ctx": num_ctx}}
    return {"path": "/api/chat", "body": body}


def test_a_num_ctx_change_is_a_reload_not_a_reuse() -> None:
    one = [{"role": "user", "content": "task"}]
    two = [*one, {"role": "assistant", "content": "a"}, {"role": "tool", "content": "b"}]
    three = [*two, {"role": "assistant", "content": "c"}, {"role": "tool", "content": "d"}]
    stats = economy(
        [request(one, 8192), request(two, 8192), request(three, 16384)], CharTokenizer()
    )
    assert stats["cache_extends_fraction"] == 1.0  # byte for byte, both extend
    assert stats["cache_reuse_requests"] == 1  # but the third reloads the model
    assert stats["num_ctx_changes_at"] == [3]
    assert (
        stats["prefill_tokens_with_warm_cache_and_reloads"]
        > stats["prefill_tokens_with_warm_cache"]
    )
    assert stats["prefill_tokens_with_warm_cache_and_reloads"] == (
        stats["per_request"][0]
        + (stats["per_request"][1] - stats["per_request"][0])
        + stats["per_request"][2]
    )


def test_a_changed_message_breaks_the_cache() -> None:
    one = [{"role": "user", "content": "task"}, {"role": "tool", "content": "long output"}]
    two = [{"role": "user", "content": "task"}, {"role": "tool", "content": "[compacted]"}]
    stats = economy([request(one, 4096), request(two, 4096)], CharTokenizer())
    assert stats["cache_reuse_requests"] == 0
    assert stats["cache_breaks"] == [{"request": 2, "why": "message 1 (tool) changed"}]

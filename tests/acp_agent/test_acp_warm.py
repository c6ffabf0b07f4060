"""An editor's new session warms the prefix of its first run (``kept_cache.warm_prefix``):
while the user types, the system prompt and tools go to the llama-server slot the session's
runs hold, for one token; the first prompt's request then opens with exactly those."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import optional_deps

optional_deps.module("acp", "the ACP SDK", "pip install -e '.[acp]'")

from acp_helpers import Editor, prompt, talk  # noqa: E402
from localhand.testing import FakeOllama  # noqa: E402


def answer(body: dict[str, Any]) -> str:
    return "ok" if body.get("max_tokens") == 1 else "Hello there."


def test_a_new_session_warms_the_slot_its_first_run_holds(tmp_path: Path) -> None:
    async def typing_then_asking(conn: Any, session_id: str) -> Any:
        deadline = time.monotonic() + 30
        while not server.openai_requests and time.monotonic() < deadline:
            await asyncio.sleep(0.05)  # the user is still typing
        return await prompt("Fix the bug in calc.py")(conn, session_id)

    with FakeOllama([answer] * 8, models={"qwen3:8b": {}}, props=True) as server:
        url = server.url + "/v1"
        _, done = talk(Editor(), tmp_path, typing_then_asking, "--backend", "openai", "--host", url)
        warm, first, *_ = server.openai_requests
    assert done.stop_reason in ("end_turn", "max_turn_requests")
    assert (warm.body["max_tokens"], warm.body["id_slot"]) == (1, first.body["id_slot"])
    assert warm.body["messages"][0] == first.body["messages"][0]
    assert warm.body["tools"] == first.body["tools"]

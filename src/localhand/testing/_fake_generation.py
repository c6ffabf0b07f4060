"""How :class:`~localhand.testing.FakeOllama` generates a reply: where it stops and how fast.

A real server stops a reply at the request's ceiling (``options.num_predict``; on ``/v1``,
``max_tokens``, which Ollama translates to it) or, without one, when the context window is
full, and reports ``done_reason``/``finish_reason`` ``length``; it produces tokens at the
model's speed. The fake does the same, counting four characters a token as it does
everywhere (``FakeOllama._account``):

- the ceiling cuts the thinking first (the model thinks before it answers), then the content;
  a tool call that does not fit whole is not sent (the server's parser never hands out half a
  call); ``eval_count`` is then the ceiling;
- a script item's ``"loop": "span"`` makes a reply that repeats ``span`` without end after its
  ``content``, as a small model caught in a loop does: it stops only at the ceiling or at the
  end of the window;
- a script item's ``"token_rate": N`` makes the model generate N tokens a second: an unstreamed
  reply comes after its tokens / N seconds, a streamed one comes a token a chunk at that pace.
Private: import what you need from ``localhand.testing``.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from localhand.testing._fake_models import _Model
    from localhand.testing.fake_ollama import FakeOllama

CHARS_PER_TOKEN = 4
"""The fake's token: what ``FakeOllama._account`` counts as one."""


def generate(reply: dict[str, Any], body: dict[str, Any], model: _Model, fake: FakeOllama) -> None:
    """Apply the request's ceiling (or the window) and the item's ``loop`` to ``reply``, as
    made by ``FakeOllama._reply_message``, in place."""
    message = reply["message"]
    ceiling = _ceiling(body)
    loop = str(reply.pop("loop", "") or "")
    limit = ceiling or (_window_left(body, model, fake) if loop else None)
    if loop and limit:
        written = len(message["content"]) + len(message.get("thinking", ""))
        wanted = limit * CHARS_PER_TOKEN - written
        if wanted > 0:
            message["content"] += loop * (wanted // len(loop) + 2)
    if limit and _cut(message, limit):
        reply["done_reason"] = "length"
        reply.setdefault("eval_count", limit)


def reply_tokens(message: dict[str, Any]) -> int:
    """The tokens a reply message took to generate, counted as ``FakeOllama._account`` does."""
    size = len(message["content"]) + len(message.get("thinking", ""))
    size += len(json.dumps(message["tool_calls"])) if message.get("tool_calls") else 0
    return max(1, size // CHARS_PER_TOKEN)


def pieces(text: str, by_token: bool) -> list[str]:
    """How ``text`` is streamed: a word a chunk, or (at a token rate) a token a chunk."""
    if by_token:
        return [text[i : i + CHARS_PER_TOKEN] for i in range(0, len(text), CHARS_PER_TOKEN)]
    return re.findall(r"\S+\s*|\s+", text)


def wait_unstreamed(reply: dict[str, Any], fake: FakeOllama) -> bool:
    """Hold an unstreamed reply for as long as generating it takes at the item's
    ``token_rate``; False when the server closes meanwhile."""
    rate = float(reply.get("token_rate") or 0)
    if rate <= 0:
        return True
    tokens = int(reply.get("eval_count") or reply_tokens(reply["message"]))
    return not fake._closing.wait(tokens / rate)


def _ceiling(body: dict[str, Any]) -> int | None:
    """``options.num_predict`` when it limits anything (Ollama: -1 or none is unlimited)."""
    value = (body.get("options") or {}).get("num_predict")
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        return None
    return int(value)


def _window_left(body: dict[str, Any], model: _Model, fake: FakeOllama) -> int:
    """The tokens the context window has left after the prompt, where a reply with no ceiling
    ends (llama-server stops there; Ollama may shift the window and go on)."""
    options = body.get("options") or {}
    window = int(options.get("num_ctx") or model.num_ctx or fake.default_num_ctx)
    window = min(window, model.context_length)
    prompt = fake._prompt_tokens(body.get("messages") or [], body.get("tools"))
    return max(1, window - prompt)


def _cut(message: dict[str, Any], tokens: int) -> bool:
    """Cut ``message`` to ``tokens`` tokens, thinking first; whether it was longer."""
    budget = tokens * CHARS_PER_TOKEN
    thinking = message.get("thinking", "")
    calls = message.get("tool_calls")
    size = len(thinking) + len(message["content"]) + (len(json.dumps(calls)) if calls else 0)
    if size <= budget:
        return False
    message.pop("tool_calls", None)
    if thinking:
        message["thinking"] = thinking[:budget]
    message["content"] = message["content"][: max(0, budget - len(thinking))]
    return True

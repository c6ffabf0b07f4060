"""One request to the model: read whole, or read as a stream and watched (``--watch-replies``).

Watched, the reply's progress becomes ``model_progress`` events and a reply that loops is
stopped within seconds, with a warning (``localhand.models.watch``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from localhand.events import Event, ModelProgress
from localhand.models.base import ChatModel, ChatOptions
from localhand.models.watch import Loop, Progress, watch_reply
from localhand.types import Message, Reply


@dataclass(frozen=True, slots=True)
class Asked:
    reply: Reply
    loop: Loop | None = None
    """What the reply kept repeating, when the watcher stopped it."""


def ask_model(
    model: ChatModel,
    messages: list[Message],
    tools: list[dict[str, Any]] | None,
    options: ChatOptions,
    *,
    watch: bool,
    task_id: str,
    iteration: int,
    emit: Callable[[Event], None],
    warn: Callable[[str], None],
) -> Asked:
    """Ask ``model`` once. With ``watch`` (and a backend that has ``stream_reply``), read the
    reply as a stream, announce its progress and stop it as soon as it loops."""
    stream_reply = getattr(model, "stream_reply", None)
    if not watch or stream_reply is None:
        return Asked(model.chat(messages, tools, options))

    def progress(now: Progress) -> None:
        rate = None if now.tokens_per_s is None else round(now.tokens_per_s, 1)
        emit(
            ModelProgress(
                task_id=task_id,
                iteration=iteration,
                elapsed_s=round(now.elapsed_s, 1),
                tokens=now.tokens,
                tokens_per_s=rate,
            )
        )

    watched = watch_reply(
        stream_reply, messages, tools, options, model_name=model.name, on_progress=progress
    )
    if watched.loop is not None:
        warn(watched.stopped())
    return Asked(watched.reply, watched.loop)

"""One request to the model: read whole, or read as a stream and watched (``--watch-replies``,
or a think budget).

Watched, the reply's progress becomes ``model_progress`` events and a reply that loops is
stopped within seconds, with a warning (``localhand.models.watch``). With a think budget
(``--think-budget``, else the model's profile), a reply whose thinking passes it is stopped
there: the loop keeps what it reasoned in a user turn (``rethink_note``) and asks again with
thinking off. The budget needs the stream (a whole reply shows its thinking only once it is
spent), so a backend that can stream a reply is read as a stream while a budget applies.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from localhand.events import Event, ModelProgress
from localhand.models.base import ChatModel, ChatOptions
from localhand.models.watch import Loop, Progress, watch_reply
from localhand.profiles import Profile, thinking_switch
from localhand.types import Message, Reply


@dataclass(frozen=True, slots=True)
class Asked:
    reply: Reply
    loop: Loop | None = None
    """What the reply kept repeating, when the watcher stopped it."""
    thought: int | None = None
    """Thinking tokens, when the reply was stopped for passing the think budget."""


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
    check: Callable[[], None],
    think_budget: int | None = None,
) -> Asked:
    """Ask ``model`` once. With ``watch`` (and a backend that ``streams_replies``), read the
    reply as a stream, announce its progress and stop it as soon as it loops; with
    ``think_budget`` (and thinking not asked off), stop it when its thinking passes that.
    ``check`` (a cancellation's) is called as the stream goes and may raise to close it."""
    budget = think_budget if options.think is not False else None
    if not model.streams_replies or not (watch or budget):
        return Asked(model.chat(messages, tools, options))

    def progress(now: Progress) -> None:
        check()
        if not watch:
            return
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
        model.stream_reply,
        messages,
        tools,
        options,
        model_name=model.name,
        on_progress=progress,
        think_budget=budget,
    )
    if watched.loop is not None:
        warn(watched.stopped())
    return Asked(watched.reply, watched.loop, watched.thought)


def rethink_note(cut: Reply, thought: int, budget: int, profile: Profile) -> Message:
    """The user turn after a reply stopped at the think budget: what it reasoned, kept, and
    the request to act on it now. The family's soft switch (``/no_think``) ends it, for a
    server that passes no template switch; earlier turns are never rewritten."""
    reasoned = cut.thinking.strip() or "(nothing yet)"
    return {
        "role": "user",
        "content": (
            f"You thought for {thought} tokens without acting (the budget is {budget}), so "
            f"your reply was stopped. What you had reasoned so far:\n\n{reasoned}\n\n"
            "Act on it now, without thinking further: make one tool call, or reply with a "
            f"short summary if the task is done.{thinking_switch(profile, False).soft_switch}"
        ),
    }


def budget_warning(thought: int, budget: int) -> str:
    return (
        f"the model thought for {thought} tokens, past its think budget of {budget}: stopped "
        "the reply and asked again with thinking off (what it had reasoned is kept)"
    )

"""The conversation as a family's template needs it: assistant turns, reasoning, tool results.

Two steps, both pure:

- ``assistant_turn`` stores a reply in localhand's history (Ollama's message shape). A call
  the model wrote as text is kept as the text it wrote (``keep_text``) or stored as native
  ``tool_calls`` (``native``), with ids the family's template accepts. Its thinking is kept
  in the history when the family's template may render it; which turns' is sent is decided
  by the next step.
- ``wire_history`` is the history as one request sends it: reasoning only on the turns the
  family's template renders it for, and tool results as the roles the template knows.

Both are deterministic functions of the messages, so the same turn is sent the same way on
every later request, which is what keeps each prompt an extension of the previous one (and
the server's cache of it valid).
"""

from __future__ import annotations

import hashlib
import string
from collections.abc import Sequence

from localhand.profiles.formats import write_call
from localhand.profiles.model import Profile
from localhand.types import Message, Reply, ToolCall

_ALNUM = string.ascii_letters + string.digits


def assistant_turn(
    reply: Reply,
    calls: Sequence[ToolCall],
    profile: Profile,
    *,
    prose: str = "",
    turn: int = 0,
) -> Message:
    """The assistant message for ``reply`` as it goes into the history.

    ``calls`` are the calls parsed from the reply (native or written as text); ``prose`` the
    text outside them and outside thinking (``ParsedReply.content``); ``turn`` the reply's
    number in the run, from which ids are made when the calls have none.
    """
    message = reply.to_message()
    if profile.reasoning_return == "never":
        message.pop("thinking", None)  # never sent: kept out of the history and its estimates
    native = bool(reply.tool_calls)
    if profile.text_call_history == "as_text":
        # The template renders no tool_calls: a call must be text, or it vanishes from the
        # prompt (and the model sees itself answer nothing).
        if native:
            written = "\n".join(write_call(profile.text_format, c.name, c.arguments) for c in calls)
            message["content"] = f"{prose}\n{written}" if prose else written
        message.pop("tool_calls", None)
        return message
    if not native and calls and profile.text_call_history == "native":
        # Stored as the template's own call syntax: the template renders the call, so a model
        # that wrote it canonically finds its own words in the next prompt.
        message["content"] = prose
        message["tool_calls"] = [call.to_wire() for call in calls]
    if message.get("tool_calls") and profile.call_ids != "any":
        message["tool_calls"] = [
            _with_id(raw, call_id(turn, number, profile))
            for number, raw in enumerate(message["tool_calls"])
        ]
    return message


def call_id(turn: int, number: int, profile: Profile) -> str:
    """A call id the family's template accepts, the same for the same turn and call: Mistral's
    9 letters and digits; elsewhere ``call_TURN_NUMBER``."""
    if profile.call_ids == "mistral9":
        digest = hashlib.sha256(f"{turn}:{number}".encode()).digest()
        return "".join(_ALNUM[b % len(_ALNUM)] for b in digest[:9])
    return f"call_{turn}_{number}"


def _with_id(raw: dict, wanted: str) -> dict:
    current = raw.get("id")
    if isinstance(current, str) and len(current) == 9 and current.isalnum():
        return raw  # the server's own id, already of the right form
    return {**raw, "id": wanted}


def wire_history(messages: Sequence[Message], profile: Profile) -> list[Message]:
    """``messages`` as one request sends them under ``profile``: ``thinking`` kept only where
    ``reasoning_return`` says, and tool results as user turns for a template without a tool
    role (one user turn per round of results, so that the roles still alternate)."""
    keep = _reasoning_kept(messages, profile)
    out: list[Message] = []
    for index, message in enumerate(messages):
        if profile.reasoning_return == "tool_chain" and _empty_turn(message):
            # Harmony takes an assistant turn without calls for a final answer and drops the
            # reasoning of every call before it; an empty reply (nudged) is no answer.
            continue
        if message.get("role") == "assistant" and "thinking" in message and index not in keep:
            message = {k: v for k, v in message.items() if k != "thinking"}
        if message.get("role") == "tool" and profile.tool_result_role == "user":
            name = message.get("tool_name") or "the tool"
            text = f"Result of {name}:\n{message.get('content', '')}"
            if out and out[-1].get("role") == "user" and out[-1].get("_results"):
                out[-1] = {**out[-1], "content": out[-1]["content"] + "\n\n" + text}
            else:
                out.append({"role": "user", "content": text, "_results": True})
            continue
        out.append(message)
    return [{k: v for k, v in m.items() if k != "_results"} for m in out]


def _empty_turn(message: Message) -> bool:
    return (
        message.get("role") == "assistant"
        and not message.get("tool_calls")
        and not str(message.get("content") or "").strip()
    )


def _reasoning_kept(messages: Sequence[Message], profile: Profile) -> set[int]:
    """The indexes of the assistant turns whose reasoning goes back to the model."""
    if profile.reasoning_return == "never":
        return set()
    if profile.reasoning_return == "tool_chain":
        # Harmony's rule: the analysis before each call stays until a final answer follows.
        answers = [
            i
            for i, m in enumerate(messages)
            if m.get("role") == "assistant" and not m.get("tool_calls") and not _empty_turn(m)
        ]
        last_final = max(answers, default=-1)
        return {
            i
            for i, m in enumerate(messages)
            if i > last_final and m.get("role") == "assistant" and m.get("tool_calls")
        }
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    return {i for i, m in enumerate(messages) if i > last_user and m.get("role") == "assistant"}

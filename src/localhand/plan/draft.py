"""The model drafts a plan from a goal.

The reply is asked for with constrained decoding (``DRAFT_SCHEMA``) and read leniently, then
validated exactly like a plan file, so a drafted step gets the same checks and the same risk
classification. A draft that does not validate is sent back once with the problem.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localhand.errors import ConfigError, LocalhandError
from localhand.models.base import ChatModel, ChatOptions
from localhand.parsing.thinking import split_thinking
from localhand.plan.brain import json_object, steps_schema
from localhand.plan.model import Plan, plan_from_data
from localhand.types import Message, Prefill, Usage

MAX_DRAFT_STEPS = 12
LISTING_ENTRIES = 40
DRAFT_TRIES = 2

DRAFT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "goal": {"type": "string"},
        "steps": {**steps_schema(MAX_DRAFT_STEPS, "explanation"), "minItems": 1},
    },
    "required": ["goal", "steps"],
}

DRAFT_PROMPT = f"""\
You plan work on a developer's machine as a short list of shell commands. Each step is one \
bash command run in the workspace directory with no one at the keyboard (no editors, no \
prompts). Use at most {MAX_DRAFT_STEPS} steps; end with a step that checks the goal is met. \
Never use sudo, never touch files outside the workspace. Answer with ONE JSON object:
{{"goal": "...", "steps": [{{"description": "...", "command": "...", \
"explanation": "why this step"}}]}}"""


class DraftError(LocalhandError):
    """The model did not produce a usable plan; the message says what was wrong."""


@dataclass(frozen=True, slots=True)
class Draft:
    plan: Plan
    usage: Usage
    """Tokens the drafting spent, to count against the task's budget."""
    prefill: Prefill = field(default_factory=Prefill)
    """What the server said of its prefill and cache over the drafting's requests."""


def draft_plan(model: ChatModel, goal: str, workspace: Path) -> Draft:
    """Ask ``model`` for a plan towards ``goal``. ``ModelError`` passes through (the server
    failed); ``DraftError`` means it answered, but not with a plan."""
    messages: list[Message] = [
        {"role": "system", "content": DRAFT_PROMPT},
        {"role": "user", "content": f"Goal: {goal}\n\nWorkspace contents:\n{listing(workspace)}"},
    ]
    usage, prefill = Usage(), Prefill()
    problem = ""
    for _ in range(DRAFT_TRIES):
        reply = model.chat(messages, options=ChatOptions(format=DRAFT_SCHEMA))
        usage = usage + reply.usage
        prefill.add(reply.usage)
        data = _plan_data(reply.content)
        if data is None:
            problem = "the reply is not a JSON object with 'steps'"
        else:
            if not str(data.get("goal") or "").strip():
                data["goal"] = goal
            try:
                return Draft(plan_from_data(data, workspace), usage, prefill)
            except ConfigError as exc:
                problem = str(exc).strip()
        messages += [
            reply.to_message(),
            {"role": "user", "content": f"That plan is not usable: {problem}. Answer again."},
        ]
    raise DraftError(f"the model did not draft a usable plan: {problem}")


def listing(workspace: Path) -> str:
    """The workspace's top-level entries, so the draft names real files."""
    try:
        names = sorted(
            p.name + ("/" if p.is_dir() else "")
            for p in workspace.iterdir()
            if not p.name.startswith(".")
        )
    except OSError:
        return "(unreadable)"
    if not names:
        return "(empty)"
    more = len(names) - LISTING_ENTRIES
    shown = "\n".join(names[:LISTING_ENTRIES])
    return shown + (f"\n... and {more} more" if more > 0 else "")


def _plan_data(text: str) -> dict[str, Any] | None:
    visible, _ = split_thinking(text or "")
    return json_object(visible, lambda value: "steps" in value)

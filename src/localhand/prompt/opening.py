"""The first request's messages: localhand's prompt, the project's instructions, the tools in
text where the server's template hides them. Built once per run and never changed after, so
every later request extends it (the server's prompt cache)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from localhand.models.base import ChatModel
from localhand.profiles import Profile
from localhand.prompt.instructions import with_block, with_instructions
from localhand.prompt.system import build_messages, call_format, system_prompt
from localhand.prompt.tool_text import with_tool_text
from localhand.types import Message


class Opening(Protocol):
    """What the first request is built from, of the loop's set-up (``run.agent_config``'s
    ``AgentConfig``, a floor up)."""

    @property
    def history(self) -> Sequence[Message]: ...
    @property
    def system_prompt(self) -> str | None: ...
    @property
    def context_files(self) -> Sequence[str]: ...
    @property
    def instruction_files(self) -> Sequence[str]: ...
    @property
    def skill_list(self) -> str: ...


def opening_messages(
    task: str,
    workspace: Path,
    config: Opening,
    profile: Profile,
    definitions: Sequence[Mapping[str, Any]],
    model: ChatModel,
    warn: Callable[[str], None],
) -> list[Message]:
    """System prompt and first user message (task, workspace, context files, then the
    trusted ``AGENTS.md`` and the skills' list), with the tools described where the template
    hides them; the worked patterns' calls written as this model is to write them
    (``call_format``). A continued run (``config.history``) sends the earlier conversation
    unchanged, then the new ask, so the server's cached prefix is reused."""
    if config.history:
        return [*config.history, {"role": "user", "content": task}]
    prompt = config.system_prompt or system_prompt(call_format(model, profile))
    messages = build_messages(task, workspace, prompt, config.context_files)
    files, names = config.context_files, config.instruction_files
    messages = with_instructions(messages, workspace, warn, files=files, names=names)
    if not model.tiny:  # the tiny policy offers no read_skill
        messages = with_block(messages, config.skill_list)
    return with_tool_text(messages, profile, definitions, model)

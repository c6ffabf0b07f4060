"""The tiny policy: the prompt, tools and per-turn reply schema of a model too small for the
general ones (``ChatModel.tiny``: under a billion parameters, such as the 270M default).

Why: a 270M model cannot follow localhand's general prompt (a page of rules and an example)
nor choose well among six tools with optional arguments. Offered them, it repeats a call it
made up (a search for a pattern that occurs nowhere, a read of a file that does not exist)
until the repetition guardrail stops the run. What it can do is pick among a few concrete
choices. So the agent, holding this policy:

- replaces the system prompt with a few lines and the tools' description (``TINY_PROMPT``);
- offers only ``TINY_TOOLS``, each with its required arguments only;
- sends each turn a reply schema of the calls that can work (``schema.reply_schema``, from
  ``Knowledge``): a read of a file known to exist and not yet seen, an edit of a line that
  occurs once, a new file (the one the task names, if it names one), a check or a script;
- after each change asks for a check, and once one passes, for the final answer: a tiny
  model does not know by itself when it is done. The checks are the commands the task
  quotes, the run's ``--verify`` commands, else the project's own check (as
  ``--verify auto`` finds it); once a check fails, the model may edit and rewrite what it
  wrote itself, to repair it.

The backend only decodes under the schema it is given (``ChatOptions.reply_schema``): the
history the store keeps is the conversation the model saw.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from localhand.evidence.project_checks import detect_check
from localhand.evidence.verify import CommandCheck
from localhand.run.tiny.knowledge import Knowledge, task_words
from localhand.run.tiny.schema import reply_schema, tiny_doc, tiny_tools
from localhand.types import Message, ToolCall, ToolResult

TINY_PROMPT = """\
You are a coding agent. You do the task in the user's message by calling tools, one call \
per reply, and you read each result before the next call. Read a file before you change it. \
Change files with edit_file or write_file. When the task is done, give a final answer that \
says what you did."""


class TinyPolicy:
    """What a tiny model is shown and allowed, turn by turn, for one run."""

    def __init__(
        self,
        workspace: Path,
        task: str,
        definitions: Sequence[Mapping[str, Any]],
        checks: Sequence[str] = (),
    ) -> None:
        self.definitions = tiny_tools(definitions)
        self.names = [str(t["function"]["name"]) for t in self.definitions]
        self.prompt = f"{TINY_PROMPT}\n\n{tiny_doc(self.names)}"
        self.known = Knowledge.start(workspace, task, checks)

    def messages(self, messages: Sequence[Message]) -> list[Message]:
        """The run's opening messages with the tiny prompt as the system turn."""
        rest = [m for m in messages if m.get("role") != "system"]
        return [{"role": "system", "content": self.prompt}, *rest]

    def schema(self) -> dict[str, Any]:
        """This turn's reply schema."""
        return reply_schema(self.known, self.names)

    def observe(self, call: ToolCall, result: ToolResult) -> None:
        """A call the model made and its result."""
        self.known.observe(call, result)

    def summary(self) -> str:
        """For the run's events: what the model is shown."""
        checks = ", ".join(self.known.checks) or "none"
        return (
            f"tiny model: tiny policy (tools {', '.join(self.names)}; checks: {checks}); "
            f"system prompt: {self.prompt}"
        )


def checked_policy(
    workspace: Path,
    task: str,
    definitions: Sequence[Mapping[str, Any]],
    checks: Sequence[object],
) -> TinyPolicy:
    """The policy for a tiny model (``localhand.run.tiny.tiny_policy``). Its checks: the
    commands the task quotes, the run's command checks (``--verify``), else the project's
    own (as ``--verify auto`` finds it)."""
    commands = [check.command for check in checks if isinstance(check, CommandCheck)]
    if not commands and not task_words(task)[0]:
        found = detect_check(workspace, task)
        commands = [found.command] if found else []
    return TinyPolicy(workspace, task, definitions, commands)

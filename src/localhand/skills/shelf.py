"""One run's skills: their listing in the first message, ``read_skill``, and the restriction
a loaded skill's ``allowed-tools`` puts on the calls that follow."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from localhand.errors import ToolError
from localhand.events import Event, EventBus, SkillLoaded
from localhand.models.tokens import estimate_text_tokens
from localhand.prompt.instructions import capped
from localhand.skills.found import Skill, discover
from localhand.tools.registry import Tool, ToolRegistry, WrappedRegistry
from localhand.types import ToolCall, ToolResult

LIST_TOKENS = 400
"""Tokens of the first message's list of skills, at most: every request carries it."""
BODY_TOKENS = 5000
"""Tokens of a skill's body that ``read_skill`` returns, at most."""
HEAD = "Skills (instructions for a kind of task; before one, call read_skill with its name):"


class Skills:
    """The skills one run may load, those left out (``left_out``: each one's warning, which
    names it, why, and what would take it in), and those it loaded."""

    def __init__(self, workspace: Path, found: Sequence[Skill], left_out: Sequence[str] = ()):
        self.workspace, self.left_out = workspace.resolve(), list(left_out)
        self.found = {skill.name: skill for skill in found}
        self.loaded: list[Skill] = []
        self.emit: Callable[[Event], None] = lambda event: None
        self.task_id = ""

    def listing(self, budget: int = LIST_TOKENS) -> str:
        """Each skill by name and description, within ``budget`` tokens: the longest
        descriptions are cut first, as far as needed (names alone at worst)."""
        skills = list(self.found.values())
        if not skills:
            return ""

        def block(cap: int) -> str:
            lines = [
                f"- {s.name}: {_cut(s.description, cap)}" if cap else f"- {s.name}" for s in skills
            ]
            return "\n".join([HEAD, *lines])

        low, high = 0, max(len(skill.description) for skill in skills)
        while low < high:  # the longest cap that fits
            middle = (low + high + 1) // 2
            if estimate_text_tokens(block(middle)) <= budget:
                low = middle
            else:
                high = middle - 1
        return block(low)

    def tools(self) -> list[Tool]:
        """``read_skill``, offered only when a skill exists."""
        return [Tool.from_function(self.read_skill)] if self.found else []

    def read_skill(self, name: str) -> str:
        """Load a skill's instructions (the skills are listed in the task's message).

        Args:
            name: The skill's name.
        """
        skill = self.found.get(name)
        if skill is None:
            raise ToolError(f"No skill is named {name!r}. The skills: {', '.join(self.found)}")
        if skill not in self.loaded:
            self.loaded.append(skill)
        path, allowed = str(skill.path), skill.allowed_tools
        self.emit(SkillLoaded(task_id=self.task_id, name=name, path=path, allowed_tools=allowed))
        folder = skill.path.parent
        where = os.path.relpath(folder, self.workspace) if skill.in_workspace else str(folder)
        said = [f"Skill {name} ({where}/SKILL.md):", capped(skill.body, BODY_TOKENS)]
        if skill.files:  # a workspace's: the user's own lie outside read_file's reach
            said.append(f"Files beside it (read_file {where}/NAME): {', '.join(skill.files)}")
        return "\n\n".join(said)

    def refusal(self, call: ToolCall) -> ToolResult | None:
        """Why a loaded skill's allowed-tools refuse ``call`` (never read_skill: another skill
        can only narrow them further), else None."""
        for skill in self.loaded:
            limits = skill.allowed_tools
            if limits is not None and call.name not in (*limits, "read_skill"):
                allowed = ", ".join(limits) or "none"
                return ToolResult(
                    f"Not run: skill {skill.name} is loaded, and it allows only these tools "
                    f"(its allowed-tools): {allowed}. Use those, or give your answer.",
                    ok=False,
                )
        return None

    def guarding(self, tools: ToolRegistry) -> ToolRegistry:
        """``tools`` refusing what the loaded skills do not allow (put on last, around any
        door's wrapper, so that no call goes round it)."""
        return _Guarded(tools, self) if self.found else tools


class _Guarded(WrappedRegistry):
    def __init__(self, inner: ToolRegistry, skills: Skills) -> None:
        super().__init__(inner)
        self.skills = skills

    def execute(self, call: ToolCall) -> ToolResult:
        return self.skills.refusal(call) or self.inner.execute(call)


def find_skills(
    workspace: Path, warn: Callable[[str], None], *, bus: EventBus | None = None, task_id: str = ""
) -> Skills:
    """The skills a run in ``workspace`` may load (each left out is said to ``warn``), their
    loading emitted on ``bus``."""
    skills = Skills(workspace, *discover(workspace, warn))
    if bus is not None:
        skills.emit, skills.task_id = bus.emit, task_id
    return skills


def _cut(text: str, cap: int) -> str:
    return text if len(text) <= cap else text[: cap - 1].rstrip() + "…"

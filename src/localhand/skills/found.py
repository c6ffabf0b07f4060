"""Finding skills: where they lie (the user's own ``skills/`` beside their ``config.toml``,
then the workspace's ``.agents/skills/`` and ``.claude/skills/``; the first of a name wins),
their front matter, and the trust a workspace's needs: the model can write it, so it is used
only as the user trusted it, as ``AGENTS.md`` is (``use_discovered``: the bytes trusted are
the bytes kept, never read again)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localhand.errors import ConfigError
from localhand.paths import user_config_path
from localhand.safety.trust.store import use_discovered

WORKSPACE_DIRS = (".agents/skills", ".claude/skills")
NAME_CHARS, DESCRIPTION_CHARS, FILES_LISTED = 64, 1024, 30
CLAUDE_NAMES = dict(
    pair.split("=")
    for pair in "read=read_file write=write_file edit=edit_file multiedit=edit_file "
    "bash=run_command grep=search_files glob=list_directory ls=list_directory".split()
)
"""Claude Code's tool names, as skills written for it give them in ``allowed-tools``."""
_FRONT = re.compile(r"\A---[ \t]*\r?\n(.*?)^---[ \t]*$\r?\n?", re.S | re.M)
_ENTRY = re.compile(r"[^\s,(]+(?:\([^)]*\))?")


@dataclass(frozen=True, slots=True)
class Skill:
    name: str
    description: str
    body: str
    path: Path
    """Its ``SKILL.md``."""
    allowed_tools: tuple[str, ...] | None
    """The tools it allows (localhand's names, sorted), ``None`` when it does not say."""
    in_workspace: bool
    files: tuple[str, ...] = ()
    """A workspace skill's files beside it, for read_file (the user's own lie beyond it)."""


def discover(workspace: Path, warn: Callable[[str], None]) -> tuple[list[Skill], list[str]]:
    """The skills a run in ``workspace`` may load, by name, and a warning for each one left
    out (also said to ``warn``) that names it, why, and what would take it in."""
    root, config = workspace.resolve(), user_config_path()
    mine = None if config is None else config.parent / "skills"
    found: dict[str, Skill] = {}
    left: list[str] = []
    for place in [*([mine] if mine else []), *(root / where for where in WORKSPACE_DIRS)]:
        for path in sorted(place.glob("*/SKILL.md")) if place.is_dir() else ():
            in_workspace = place != mine or path.resolve().is_relative_to(root)
            said: list[str] = []
            try:
                if in_workspace:  # the model can write it: used only as the user trusted it
                    seen = use_discovered(path, "skill", said.append)
                    text = None if seen is None else seen.text
                else:  # the user's own, as their config.toml is
                    text = path.read_text("utf-8", errors="replace")
            except (ConfigError, OSError) as exc:
                text, said = None, [f"skill {path} cannot be read: {exc}"]
            if text is None:
                why = said[0]
            elif isinstance(skill := parsed(path, text, in_workspace), str):
                why = f"skill {path} is left out: {skill}"
            elif skill.name in found:
                why = f"skill {path} is left out: {found[skill.name].path} has its name"
            else:
                found[skill.name] = skill
                continue
            left.append(why)
            warn(why)
    return sorted(found.values(), key=lambda skill: skill.name), left


def parsed(path: Path, text: str, in_workspace: bool) -> Skill | str:
    """The skill ``path`` holds, or what is wrong with it."""
    front = _FRONT.match(text)
    if front is None:
        return "it does not start with front matter (a '---' line, name and description, '---')"
    import yaml  # only when a skill exists (~30 ms to import)

    try:
        data: Any = yaml.safe_load(front[1])
    except yaml.YAMLError as exc:
        return f"its front matter is not valid YAML: {exc}"
    data = data if isinstance(data, dict) else {}
    name, description = data.get("name"), data.get("description")
    if not isinstance(name, str) or not 0 < len(name.strip()) <= NAME_CHARS or "\n" in name:
        return f"its front matter needs a name of one line, at most {NAME_CHARS} characters"
    if not isinstance(description, str) or not 0 < len(description) <= DESCRIPTION_CHARS:
        return f"its front matter needs a description of at most {DESCRIPTION_CHARS} characters"
    folder = path.parent
    beside = (p for p in folder.rglob("*") if p.is_file() and not p.is_symlink() and p != path)
    files = sorted(str(p.relative_to(folder)) for p in beside) if in_workspace else []
    return Skill(
        name.strip(),
        " ".join(description.split()),
        text[front.end() :].strip(),
        path,
        allowed(data.get("allowed-tools")),
        in_workspace,
        tuple(files[:FILES_LISTED]),
    )


def allowed(given: object) -> tuple[str, ...] | None:
    """``allowed-tools`` as localhand's tool names: a list, or one string of names (spaces or
    commas between). A name with a pattern (``Bash(git:*)``) allows nothing: localhand cannot
    hold a tool to a pattern, and a restriction must never widen."""
    if given is None:
        return None
    entries = given if isinstance(given, list) else _ENTRY.findall(str(given))
    names = {str(entry).strip() for entry in entries if "(" not in str(entry)}
    return tuple(sorted({CLAUDE_NAMES.get(name.lower(), name) for name in names if name}))

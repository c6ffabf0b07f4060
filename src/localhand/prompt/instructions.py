"""The project's ``AGENTS.md``, read as its convention says, behind the user's trust.

The convention (agents.md): a repository may hold several ``AGENTS.md`` files; the one nearest
to the work wins. Here the work starts where the run points: the directory of the files named
with ``--file``/context files when they share one, else the directory localhand was started in
when it lies in the workspace, else the workspace root; from there up to the root, the first
directory that holds one of the names wins. ``CLAUDE.md``/``GEMINI.md`` join only when a
setting names them (``AgentConfig.instruction_files``).

An instruction file lies where the model's commands write, so it steers the agent only when
the user trusted that exact content (``safety.trust.use_discovered``: unknown or changed, it is
left out with a warning naming ``localhand trust FILE``), as ``localhand.toml`` is. The text is
capped in tokens and goes into the first user message, after the task: the system prompt stays
the same for every project (so a server's cache of it serves every run), and the first message
never changes afterwards (so every later request extends it).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from localhand.models.tokens import estimate_text_tokens
from localhand.safety.trust.store import use_discovered
from localhand.types import Message

DEFAULT_NAMES = ("AGENTS.md",)
CAP_TOKENS = 1000
"""Tokens of instructions at most: the first prompt is paid by every request."""


def nearest(workspace: Path, start: Path, names: Sequence[str]) -> Path | None:
    """The first of ``names`` found from ``start`` up to ``workspace`` (inclusive)."""
    root = workspace.resolve()
    here = start.resolve()
    if here != root and root not in here.parents:
        here = root
    while True:
        for name in names:
            candidate = here / name
            if candidate.is_file() and not candidate.is_symlink():
                return candidate
        if here == root:
            return None
        here = here.parent


def work_start(workspace: Path, files: Sequence[str], cwd: Path | None = None) -> Path:
    """Where the work is: the named files' common directory, else ``cwd`` inside the
    workspace, else the workspace."""
    root = workspace.resolve()
    if files:
        dirs = [os.path.dirname(os.path.normpath(root / name)) for name in files]
        try:
            return Path(os.path.commonpath(dirs))
        except ValueError:
            return root
    here = (cwd or Path.cwd()).resolve()
    return here if here == root or root in here.parents else root


def capped(text: str, cap: int = CAP_TOKENS) -> str:
    """``text`` cut at a line so that it takes about ``cap`` tokens at most, saying so."""
    if estimate_text_tokens(text) <= cap:
        return text
    keep = len(text) * cap // max(1, estimate_text_tokens(text))
    cut = text[:keep]
    cut = cut[: cut.rfind("\n")] if "\n" in cut else cut
    return f"{cut}\n[... cut at about {cap} tokens]"


def project_instructions(
    workspace: Path,
    warn: Callable[[str], None],
    *,
    files: Sequence[str] = (),
    names: Sequence[str] = DEFAULT_NAMES,
    cwd: Path | None = None,
) -> str:
    """The block for the first message, or "" when there is no trusted instruction file."""
    if not names:
        return ""
    found = nearest(workspace, work_start(workspace, files, cwd), names)
    if found is None:
        return ""
    seen = use_discovered(found, "instructions for agents", warn)
    if seen is None:
        return ""
    where = os.path.relpath(found, workspace.resolve())
    return f"Project instructions ({where}):\n{capped(seen.text.strip())}"


def with_instructions(
    messages: list[Message],
    workspace: Path,
    warn: Callable[[str], None],
    *,
    files: Sequence[str] = (),
    names: Sequence[str] = DEFAULT_NAMES,
) -> list[Message]:
    """``messages`` with the trusted instruction file's block after the first user message's
    text (the agentic and simple paths alike); unchanged when there is none."""
    return with_block(messages, project_instructions(workspace, warn, files=files, names=names))


def with_block(messages: list[Message], block: str) -> list[Message]:
    """``messages`` with ``block`` after the first user message's text (the instructions, the
    skills' list); unchanged when it is empty."""
    if not block or not messages or messages[-1].get("role") != "user":
        return messages
    return [*messages[:-1], {**messages[-1], "content": f"{messages[-1]['content']}\n\n{block}"}]

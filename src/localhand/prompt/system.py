"""The system prompt, the first user message and the loop's nudges.

Small models follow a concrete pattern better than abstract rules (seed 000), so the system
prompt shows two worked patterns: read → understand → modify → verify, and search first when
the place is unknown. A model whose calls travel as text (its family's template or server
carries no native calls, or the reply is constrained to JSON) sees the same patterns with each
call written in the format it is to write (``call_format``, ``localhand.profiles.formats``);
one with native tool calling sees them as named calls. It is kept short: every token here is
paid again on every request until the server caches it (``benchmarks/prompt_bench.py``
measures it per family against a 1,200-token target).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from localhand.paths import IGNORED_DIRS
from localhand.profiles.formats import write_call
from localhand.profiles.model import Profile
from localhand.prompt.tool_text import template_hides_tools
from localhand.safety.box.git import git
from localhand.types import Message

if TYPE_CHECKING:
    from localhand.models.base import ChatModel

_HEAD = """\
You are localhand, a careful coding agent working inside a workspace on the user's machine.
You complete the task by calling tools, one step at a time, and you see each tool's result.

How to work:
1. Look before you change: list directories, read the relevant files, search for names.
2. Make the smallest change that completes the task: edit_file for small edits, write_file \
for new files or full rewrites.
3. Verify: run the tests or the check command with run_command and read the output.
4. When the task is done and verified, reply with a short summary of what you changed and \
no tool call. That reply ends the task.

Rules:
- {how_to_call} Paths are relative to the workspace root.
- Never invent file contents: read a file before editing it.
- If a tool returns an error, read it and correct the call instead of repeating it.
"""

_HOW_NATIVE = "Call tools through the tool-calling interface."
_HOW_TEXT = "Write tool calls as the examples do, then stop."

# The worked patterns as data, so that every family sees the same steps in its own call format:
# (tool, arguments, the note after a named call, the purpose before a call written as text).
_Step = tuple[str, dict[str, str], str, str]
_TEST = {"command": "python -m pytest -q test_math.py"}
_EDIT = {"path": "mathlib.py", "old_text": "return a - b", "new_text": "return a + b"}
_FIX_STEPS: tuple[_Step, ...] = (
    ("run_command", _TEST, "see which test fails and why", "see what fails"),
    ("read_file", {"path": "mathlib.py"}, "find the faulty function", "read the code"),
    ("edit_file", _EDIT, "", "fix it"),
    ("run_command", _TEST, "all pass", "all pass"),
)
_FIX_ANSWER = "Fixed add() in mathlib.py: it subtracted instead of adding. Tests pass."
_SEARCH_STEP: _Step = ("search_files", {"pattern": "max_retry"}, "every use", "every use")
_SEARCH_REST = "edit_file at each use, then run the tests"

SCHEMA_CALLS = "json_object"
"""The calls' format when the reply is constrained to one JSON object (the embedded backend,
an OpenAI-compatible server in schema mode): ``{"name": ..., "arguments": ...}``, and
``{"final_answer": ...}`` for the answer (``localhand.models._json_calls``)."""


def _native_step(name: str, args: dict[str, str], why: str, _purpose: str, /) -> str:
    note = f"   ({why})" if why else ""
    return f"→ {name} {json.dumps(args)}{note}"


class _TextSteps:
    """Steps written as ``fmt`` text: each call alone on its lines, as the model's reply would
    be, what it is for before it. A call already shown (the tests run again) is named, not
    written twice: a family's markup costs several times the named call's tokens, and every
    family's first prompt is held to the same budget (``benchmarks/prompt_bench.py``)."""

    def __init__(self, fmt: str) -> None:
        self.fmt, self.shown = fmt, set[str]()

    def __call__(self, name: str, args: dict[str, str], _why: str, purpose: str, /) -> str:
        key = name + json.dumps(args)
        if key in self.shown:
            return f"→ the first call again ({purpose})"
        self.shown.add(key)
        return f"→ {purpose}:\n{write_call(self.fmt, name, args)}"


def system_prompt(call_format: str | None = None) -> str:
    """The system prompt with its two worked patterns; ``call_format`` (a
    ``localhand.profiles.formats`` name, or ``SCHEMA_CALLS``) writes their calls as that text,
    for a model whose calls travel as text; ``None``: as named calls, for native tool calling."""
    if call_format is None:
        step = _native_step
        answer = f'→ final reply: "{_FIX_ANSWER}"'
    else:
        step = _TextSteps(call_format)
        final = (
            json.dumps({"final_answer": _FIX_ANSWER})
            if call_format == SCHEMA_CALLS
            else (f'"{_FIX_ANSWER}"')
        )
        answer = f"→ final reply: {final}"
    how = _HOW_NATIVE if call_format is None else _HOW_TEXT
    return "\n".join(
        [
            _HEAD.format(how_to_call=how),
            "Example 1 (read, understand, modify, verify):",
            'Task: "Fix the failing test in test_math.py"',
            *(step(*s) for s in _FIX_STEPS),
            answer,
            "",
            "Example 2 (search first when you do not know where):",
            'Task: "Rename max_retry to max_retries"',
            step(*_SEARCH_STEP),
            f"→ {_SEARCH_REST}",
            "",
        ]
    )


SYSTEM_PROMPT = system_prompt()


def call_format(model: ChatModel, profile: Profile) -> str | None:
    """The text format ``model``'s calls travel in, or ``None`` when the server carries them
    natively: so that the worked patterns show calls as this model is to write them.

    Text when the reply is constrained to a JSON object (``SCHEMA_CALLS``); in the family's
    format when its template renders no calls (``text_call_history = "as_text"``) or its
    profile says the backend cannot carry them (``native_tools_ollama``,
    ``native_tools_llama_server``) or the server shows its template does not
    (``template_renders_tools``), as the model declares them (``call_transport``,
    ``server_kind``)."""
    if model.call_transport == "schema":
        return SCHEMA_CALLS
    if profile.text_call_history == "as_text":
        return profile.text_format
    if model.server_kind == "ollama":
        native = profile.native_tools_ollama
    else:
        native = profile.native_tools_llama_server
        if model.server_kind == "openai":
            native = not template_hides_tools(profile, model)
    return None if native else profile.text_format


SIMPLE_SYSTEM_PROMPT = """\
You are localhand, a helpful assistant for a developer. Answer the request directly and \
concisely, using the workspace context given. You cannot run tools in this mode.
"""

NUDGE_EMPTY = (
    "Your last reply had neither a tool call nor an answer. Continue the task: call one of "
    "the tools, or if the task is complete, reply with a short summary of what you did."
)
NUDGE_THINKING_ONLY = (
    "You planned a tool call in your thinking but did not make it. Make the call now "
    "through the tool-calling interface."
)
NUDGE_TRUNCATED = (
    "Your last reply was cut off before it was complete, so nothing was run. Make one "
    "smaller tool call (for a large file, write it in parts or use edit_file)."
)
NUDGE_MALFORMED = (
    "Your last reply tried to call a tool but the call could not be read, so nothing was run. "
    "Make the call again through the tool-calling interface, with valid JSON arguments."
)
NUDGE_UNKNOWN_TOOL = (
    "There is no tool named {unknown}, so nothing was run. The tools are: {tools}. "
    "Call one of them, or reply with a summary if the task is complete."
)
NUDGE_NO_ACTION = (
    "You answered without using any tool, so nothing in the workspace has changed or been "
    "checked. Use the tools to do the task, then reply with a summary."
)

_CONTEXT_FILE_LIMIT = 40
CONTEXT_FILES_CHARS = 48_000
"""Characters of context files put in the first message (about 12k tokens)."""


def build_messages(
    task: str,
    workspace: Path,
    system_prompt: str | None = None,
    context_files: Sequence[str] = (),
    context_chars: int = CONTEXT_FILES_CHARS,
) -> list[Message]:
    """The conversation's opening: system prompt, then the task, then workspace context and
    the contents of the named context files (within ``context_chars`` in all)."""
    user = f"Task: {task.strip()}\n\n{workspace_context(workspace)}"
    if context_files:
        from localhand.prompt.attached_files import attach_files as attached  # capped in tokens

        user += "\n\n" + attached(workspace, context_files, context_chars)
    return [
        {"role": "system", "content": system_prompt or SYSTEM_PROMPT},
        {"role": "user", "content": user},
    ]


def workspace_context(workspace: Path) -> str:
    """Repo name, git branch and top-level files: enough to orient without a first tool call."""
    lines = [f"Workspace: {workspace.name}/"]
    branch = _git_branch(workspace)
    if branch:
        lines.append(f"Git branch: {branch}")
    entries = _top_level_entries(workspace)
    if entries:
        shown = entries[:_CONTEXT_FILE_LIMIT]
        more = len(entries) - len(shown)
        lines.append("Top-level files: " + ", ".join(shown) + (f" (+{more} more)" if more else ""))
    else:
        lines.append("The workspace is empty.")
    return "\n".join(lines)


def _top_level_entries(workspace: Path) -> list[str]:
    try:
        children = sorted(workspace.iterdir(), key=lambda p: p.name)
    except OSError:
        return []
    return [p.name + ("/" if p.is_dir() else "") for p in children if p.name not in IGNORED_DIRS]


def _git_branch(workspace: Path) -> str | None:
    if not (workspace / ".git").exists():
        return None
    # Through localhand.safety.box.git: the workspace's config runs no program of its choosing.
    branch = git(workspace, "rev-parse", "--abbrev-ref", "HEAD", timeout=5)
    return (branch or "").strip() or None

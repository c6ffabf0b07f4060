"""A tiny model's view of the tool loop: a short prompt, a few tools, and a grammar that allows
only calls that can work. The embedded backend uses it for models under a billion parameters
(the 270M default).

Why: a 270M model cannot follow localhand's general prompt (a page of rules and an example)
nor choose well among six tools with optional arguments. Offered them, it repeats a call it
made up (a search for a pattern that occurs nowhere, a read of a file that does not exist)
until the repetition guardrail stops the run. What it can do is pick among a few concrete
choices. So, for such a model:

- the system prompt is replaced by a few lines (``TINY_PROMPT``);
- only ``TINY_TOOLS`` are offered, each with its required arguments only;
- each reply's schema is made from what the conversation has shown about the workspace
  (``Knowledge``): ``read_file`` may name only a file known to exist whose current text is
  not already in the conversation (a second read tells it nothing: that is the loop it fell
  into); ``list_directory`` only a directory known and not yet listed; ``edit_file`` only a
  file whose text it has read, with ``old_text`` one of that text's lines that occurs exactly
  once (so the edit applies), not a line it wrote itself, into a different text;
  ``write_file`` only a new file, the one the task names if it names one; ``run_command``
  only a command the task quotes in backticks or a script of the workspace, not one whose
  output since the last change is already there; a final answer only once a tool has run;
- the task's quoted check runs after each change, and once it passes the reply must be the
  final answer: the model does not know by itself when it is done.

The backend is not told the workspace, so what is known comes from the conversation: the
"Top-level files" line of the task message (``localhand.run.prompt.workspace_context``) and
the results of list_directory, read_file, write_file and edit_file.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from localhand.models._grammar_json import PATH_PATTERN
from localhand.models._ollama_wire import arguments
from localhand.types import Message

TINY_PARAMS = 1_000_000_000
"""Models with fewer parameters than this get the tiny view."""

TINY_TOOLS = ("read_file", "edit_file", "write_file", "run_command", "list_directory")
"""In the order the prompt lists them; the rest (search_files, MCP tools) are not offered:
a tiny model searches for patterns it made up."""

TINY_MAX_TOKENS = 768
"""A tiny model's reply ceiling: enough for a small file; a free string it cannot end (it
happens) then costs seconds, not minutes."""

TINY_REPEAT_PENALTY = 1.0
"""None: the tiny view's choices are mostly copies (a path, a line of the file, words of the
task), and the default penalty (1.1) steers the model away from the very words just read."""

TINY_PROMPT = """\
You are a coding agent. You do the task in the user's message by calling tools, one call \
per reply, and you read each result before the next call. Read a file before you change it. \
Change files with edit_file or write_file. When the task is done, give a final answer that \
says what you did."""

_USES = {
    "read_file": ('"path"', "shows a file, with line numbers"),
    "edit_file": (
        '"path", "old_text", "new_text"',
        "replaces old_text, one line of the file, with new_text",
    ),
    "write_file": ('"path", "content"', "creates a new file with that content"),
    "run_command": ('"command"', "runs a shell command, such as a check, and shows its output"),
    "list_directory": ('"path"', "lists a directory"),
}
"""What each tool takes and does, in a few words: the tools' own descriptions are written
for larger models, and list arguments the tiny view leaves out."""

_QUOTED = re.compile(r"`([^`\n]+)`")
_RUNNERS = {".py": "python3", ".sh": "bash"}
"""How a script of the workspace is run: the commands a tiny model may choose besides those
the task quotes (left free, it runs a file's name, or a tool's)."""
_NAMED = re.compile(r"(?<![\w./>=<-])((?:[\w-]+/)*[\w-]+\.[A-Za-z][A-Za-z0-9]{0,7})(?![\w/-])")
"""A file name in the task's words (``hello.txt``, ``src/app.py``; not a version, ``>=2.31``)."""
_ABBREV = re.compile(r"^[A-Za-z]\.[A-Za-z]$")  # "e.g", "i.e": words, not files
_EXIT_0 = "[Exit code 0.]"
_EXCEPT_MAX = 300
"""The longest old_text whose new_text the grammar holds to be different: the grammar of "any
text but this one" grows with the line, and llama.cpp refuses one of a line past ~1,000."""
_TOP_LEVEL = re.compile(r"^Top-level files: (.*?)(?: \(\+\d+ more\))?$", re.MULTILINE)
_NUMBERED = re.compile(r"^ *\d+\| ?(.*)$")
_FINAL = {
    "type": "object",
    "properties": {"final_answer": {"type": "string"}},
    "required": ["final_answer"],
    "additionalProperties": False,
}


def is_tiny(n_params: int) -> bool:
    return 0 < n_params < TINY_PARAMS


def clean_path(path: Any) -> str:
    """A workspace path as one spelling (``./a//b.py`` is ``a/b.py``), so that two spellings
    of one file are one file."""
    text = posixpath.normpath(str(path or ".").strip())
    return "." if text in ("", ".") else text.removeprefix("./")


@dataclass(slots=True)
class Knowledge:
    """What the conversation has shown about the workspace."""

    texts: dict[str, str | None] = field(default_factory=dict)
    """Every file known to exist: its text as last seen in full, or ``None`` (not read)."""
    fresh: set[str] = field(default_factory=set)
    """Files whose current text is in the conversation: reading them again adds nothing."""
    dirs: set[str] = field(default_factory=set)
    listed: set[str] = field(default_factory=set)
    acted: bool = False
    """Whether any tool has run."""
    task: bool = False
    """Whether the task's message has been read (the first user turn)."""
    quoted: list[str] = field(default_factory=list)
    """Commands the task quotes in backticks: how it says to check the work."""
    targets: list[str] = field(default_factory=list)
    """The files the task names (outside backticks: not a script it says to run)."""
    ran: dict[str, bool] = field(default_factory=dict)
    """Commands whose output is in the conversation, unchanged since (no file has changed),
    and whether they exited 0."""
    written: set[tuple[str, str]] = field(default_factory=set)
    """(path, line) of each line the model wrote itself: not offered for editing, since a tiny
    model otherwise edits its own edit again and again (A to B and back, "x 2" to "x 3")."""
    unchecked: bool = False
    """Whether a file has changed since a command the task quotes last ran."""

    @classmethod
    def of(cls, messages: Sequence[Message]) -> Knowledge:
        known = cls()
        pending: list[tuple[str, dict[str, Any]]] = []
        for message in messages:
            role, content = message.get("role"), str(message.get("content") or "")
            if role == "user" and not known.task:
                known._task(content)
            elif role == "assistant":
                calls = [
                    raw.get("function", raw)
                    for raw in message.get("tool_calls") or []
                    if isinstance(raw, Mapping)
                ]
                pending = [(str(c.get("name")), arguments(c.get("arguments"))) for c in calls]
            elif role == "tool":
                known.acted = True
                name, args = pending.pop(0) if pending else (str(message.get("tool_name")), {})
                known._result(name, args, content)
        return known

    def _task(self, content: str) -> None:
        self.task = True
        words = content.split("\nWorkspace: ")[0]  # the task, not the context after it
        self.quoted = list(dict.fromkeys(c.strip() for c in _QUOTED.findall(words) if c.strip()))
        named = _NAMED.findall(_QUOTED.sub(" ", words))
        self.targets = list(dict.fromkeys(clean_path(p) for p in named if not _ABBREV.match(p)))
        for match in _TOP_LEVEL.finditer(content):
            for entry in match.group(1).split(", "):
                if entry.endswith("/"):
                    self.dirs.add(clean_path(entry))
                elif entry:
                    self.texts.setdefault(clean_path(entry), None)

    def _result(self, name: str, args: dict[str, Any], content: str) -> None:
        path = clean_path(args.get("path"))
        if name == "read_file":
            self._read(path, args, content)
        elif name == "write_file" and content.startswith(("Created '", "Overwrote '")):
            self.texts[path] = str(args.get("content", ""))
            self.fresh.add(path)
            self._wrote(path, self.texts[path] or "")
        elif name == "edit_file" and content.startswith("Edited '"):
            self._edited(path, str(args.get("old_text", "")), str(args.get("new_text", "")))
        elif name == "list_directory":
            self._listing(path, content)
        elif name == "run_command":
            self.ran[str(args.get("command", "")).strip()] = _EXIT_0 in content
        if name in ("write_file", "edit_file") and path in self.fresh:  # it changed a file:
            self.ran.clear()  # outputs from before the change are stale
            self.unchecked = True
        elif name == "run_command" and str(args.get("command", "")).strip() in self.quoted:
            self.unchecked = False

    def _read(self, path: str, args: dict[str, Any], content: str) -> None:
        if content.endswith("is empty."):
            self.texts[path] = ""
            self.fresh.add(path)
            return
        lines = [m.group(1) for line in content.splitlines() if (m := _NUMBERED.match(line))]
        if not lines:  # an error: the file may not exist
            return
        whole = not args.get("start_line") and not args.get("end_line")
        self.texts[path] = "\n".join(lines) if whole else self.texts.get(path)
        self.fresh.add(path)

    def _edited(self, path: str, old: str, new: str) -> None:
        text = self.texts.get(path)
        if text is not None and text.count(old) == 1:
            self.texts[path] = text.replace(old, new)
            self._wrote(path, new)
        else:  # the tool matched it some other way: the text we had is no longer right
            self.texts[path] = None
            self.fresh.discard(path)

    def _wrote(self, path: str, text: str) -> None:
        self.written.update((path, line.strip()) for line in text.splitlines())

    def _listing(self, path: str, content: str) -> None:
        if "does not exist" in content or "not a directory" in content:
            return
        self.listed.add(path)
        for entry in content.splitlines():
            entry = entry.strip()
            if not entry or entry.startswith("["):  # a note such as "[... more]"
                continue
            full = clean_path(posixpath.join(path, entry))
            if entry.endswith("/"):
                self.dirs.add(full)
            else:
                self.texts.setdefault(full, None)

    def unread(self) -> list[str]:
        return sorted(p for p in self.texts if p not in self.fresh)

    def unlisted(self) -> list[str]:
        return sorted(self.dirs - self.listed)

    def commands(self) -> list[str]:
        """The commands worth running now: the task's own, and each script's run, but not
        one whose output since the last change is in the conversation already."""
        scripts = [
            f"{_RUNNERS[suffix]} {path}"
            for path in sorted(self.texts)
            if (suffix := posixpath.splitext(path)[1]) in _RUNNERS
        ]
        return [c for c in [*self.quoted, *scripts] if c not in self.ran]

    def checked(self) -> bool:
        """Whether a command the task quotes has passed since the last change: the work is
        done by the task's own measure, and what is left is to say so."""
        return any(self.ran.get(command) for command in self.quoted)

    def new_files(self) -> list[str] | None:
        """The files the task names that do not exist, or ``None`` when it names none (any new
        file then; an empty list: it named some and they exist, there is nothing to create).
        A file in a directory not listed yet may exist: it is not offered until it is."""
        if not self.targets:
            return None
        return [
            p
            for p in self.targets
            if p not in self.texts and (posixpath.dirname(p) or ".") not in self.dirs - self.listed
        ]

    def editable(self) -> dict[str, list[str]]:
        """Each file whose text is known, with the lines that can be ``old_text``: not blank,
        and found once in the file (stripped of their indentation, so that ``new_text`` need
        not repeat it)."""
        out: dict[str, list[str]] = {}
        for path, text in sorted(self.texts.items()):
            if text is None or path not in self.fresh:
                continue
            if self.targets and path not in self.targets:  # the task says which files change
                continue
            lines = []
            for line in text.splitlines():
                stripped = line.strip()
                mine = (path, stripped) in self.written
                if stripped and text.count(stripped) == 1 and stripped not in lines and not mine:
                    lines.append(stripped)
            if lines:
                out[path] = lines
        return out


def tiny_tools(tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The offered tools a tiny model gets, in ``TINY_TOOLS`` order, with only their required
    arguments (an optional one is one more thing for it to get wrong)."""
    by_name = {str(t.get("function", t).get("name")): t for t in tools}
    out = []
    for name in TINY_TOOLS:
        if name not in by_name:
            continue
        function = dict(by_name[name].get("function", by_name[name]))
        params = dict(function.get("parameters") or {})
        required = list(params.get("required") or [])
        props = params.get("properties") or {}
        if name == "list_directory":  # its one argument is optional; the tiny view names it
            required = ["path"]
        params["properties"] = {k: v for k, v in props.items() if k in required}
        params["required"] = required
        function["parameters"] = params
        out.append({"type": "function", "function": function})
    return out


def tiny_doc(names: Sequence[str]) -> str:
    """The tools, and the two shapes of a reply, for the end of the system turn."""
    lines = ["Reply with one JSON object: one tool call, or your final answer. The tools:"]
    lines += [f"- {name} ({_USES[name][0]}): {_USES[name][1]}." for name in names]
    lines.append('A tool call: {"name": "read_file", "arguments": {"path": "main.py"}}')
    lines.append('When the task is done: {"final_answer": "..."}, saying what you did.')
    return "\n".join(lines)


def _call(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "name": {"type": "string", "enum": [name]},
            "arguments": {
                "type": "object",
                "properties": args,
                "required": list(args),
                "additionalProperties": False,
            },
        },
        "required": ["name", "arguments"],
        "additionalProperties": False,
    }


def _edit_call(editable: dict[str, list[str]]) -> dict[str, Any]:
    """edit_file of a line of a file read, into anything but that line: an edit that changes
    nothing is refused by the tool, and a tiny model would make it again and again."""
    call = _call("edit_file", {})
    call["properties"]["arguments"] = {
        "anyOf": [
            _call(
                "edit_file",
                {
                    "path": {"type": "string", "enum": [path]},
                    "old_text": {"type": "string", "enum": [line]},
                    "new_text": {"type": "string", "not": {"enum": [line]}}
                    if len(line) <= _EXCEPT_MAX
                    else {"type": "string"},
                },
            )["properties"]["arguments"]
            for path, lines in editable.items()
            for line in lines
        ]
    }
    return call


def tiny_schema(known: Knowledge, offered: Sequence[str]) -> dict[str, Any]:
    """The schema of this turn's reply: the calls that can work now, or a final answer."""
    text: dict[str, Any] = {"type": "string"}
    branches: list[dict[str, Any]] = []
    if known.checked():
        return _FINAL
    if known.unchecked and known.quoted and "run_command" in offered:
        # After a change, the task's own check: a tiny model otherwise goes on changing
        # what it has just written, and would not know whether it is done.
        return _call("run_command", {"command": {"type": "string", "enum": known.quoted}})
    for name in offered:
        if name == "read_file" and (unread := known.unread()):
            branches.append(_call(name, {"path": {"type": "string", "enum": unread}}))
        elif name == "list_directory" and (dirs := known.unlisted()):
            branches.append(_call(name, {"path": {"type": "string", "enum": dirs}}))
        elif name == "edit_file" and (editable := known.editable()):
            branches.append(_edit_call(editable))
        elif name == "write_file":
            # A new file only: overwriting a file it has read is how a tiny model loses it.
            # A file the task names, when it names new ones: a tiny model otherwise takes the
            # name of the file it read last.
            new = known.new_files()
            path = {"type": "string", "pattern": PATH_PATTERN, "not": {"enum": list(known.texts)}}
            if new is None or new:
                path = path if new is None else {"type": "string", "enum": new}
                branches.append(_call(name, {"path": path, "content": text}))
        elif name == "run_command" and (commands := known.commands()):
            branches.append(_call(name, {"command": {"type": "string", "enum": commands}}))
    if known.acted or not branches:
        branches.append(_FINAL)
    return branches[0] if len(branches) == 1 else {"anyOf": branches}


def tiny_turn(
    messages: Sequence[Message], tools: Sequence[Mapping[str, Any]]
) -> tuple[list[Message], list[dict[str, Any]], dict[str, Any], str]:
    """The conversation, tools, reply schema and tools' description a tiny model gets for this
    turn: the short prompt in place of the system turn, the tiny tools, and the schema of
    calls that can work. Prompt and tools are the same every turn: the prompt cache keeps
    them."""
    rest = [m for m in messages if m.get("role") != "system"]
    short: list[Message] = [{"role": "system", "content": TINY_PROMPT}, *rest]
    offered = tiny_tools(tools)
    names = [str(t["function"]["name"]) for t in offered]
    return short, offered, tiny_schema(Knowledge.of(messages), names), tiny_doc(names)

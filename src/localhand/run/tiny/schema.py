"""The tiny policy's tools, their description, and each turn's reply schema: the calls that can
work now, from ``Knowledge``, or a final answer."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from localhand.models._grammar_json import PATH_PATTERN
from localhand.parsing.schema import call_branch
from localhand.run.tiny.knowledge import Knowledge

TINY_TOOLS = ("read_file", "edit_file", "write_file", "run_command", "list_directory")
"""In the order the prompt lists them; the rest (search_files, MCP tools) are not offered:
a tiny model searches for patterns it made up."""

_USES = {
    "read_file": ('"path"', "shows a file, with line numbers"),
    "edit_file": (
        '"path", "old_text", "new_text"',
        "replaces old_text, one line of the file, with new_text",
    ),
    "write_file": ('"path", "content"', "creates a file with that content"),
    "run_command": ('"command"', "runs a shell command, such as a check, and shows its output"),
    "list_directory": ('"path"', "lists a directory"),
}
"""What each tool takes and does, in a few words: the tools' own descriptions are written
for larger models, and list arguments the tiny view leaves out."""

FINAL = {
    "type": "object",
    "properties": {"final_answer": {"type": "string"}},
    "required": ["final_answer"],
    "additionalProperties": False,
}


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


def same_text(text: str) -> list[str]:
    """``text`` and its spellings that differ only by white space at an end: a tiny model
    "changes" a line or a file into one of those and the check fails again, turn after turn
    (``def greet():`` into ``def greet():`` and a new line)."""
    core = text.strip()
    variants = [text, core, f"{core}\n", f"{core} ", f" {core}", f"\n{core}", f"{core}\n\n"]
    return list(dict.fromkeys(variants))


def _other_than(*texts: str) -> dict[str, Any]:
    """A string that is none of ``texts`` (nor an empty one), as ``same_text`` spells them."""
    taken = ["", *(variant for text in texts for variant in same_text(text))]
    return {"type": "string", "not": {"enum": list(dict.fromkeys(taken))}}


def _call(name: str, args: dict[str, Any]) -> dict[str, Any]:
    """A call of ``name`` with exactly ``args``, each required."""
    exactly = {"type": "object", "properties": args, "required": list(args)}
    return call_branch(name, {**exactly, "additionalProperties": False})


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
                    "new_text": _other_than(line),
                },
            )["properties"]["arguments"]
            for path, lines in editable.items()
            for line in lines
        ]
    }
    return call


def _writes(known: Knowledge) -> list[dict[str, Any]]:
    """The write_file calls that can help: a new file (the one the task names, if it names
    one), and once a check fails, a file the model created, with other content than it has
    now (written again as it was, it fails the check again). Never over a file it did not
    create: that is how a tiny model loses one."""
    new = known.new_files()
    calls = []
    if new is None:
        fresh = {"type": "string", "pattern": PATH_PATTERN, "not": {"enum": sorted(known.texts)}}
        calls.append(_call("write_file", {"path": fresh, "content": _other_than()}))
    elif new := [p for p in new if p not in known.mine]:
        # Not the file's own name for its content: a tiny model copies the last words it saw.
        path = {"type": "string", "enum": new}
        calls.append(_call("write_file", {"path": path, "content": _other_than(*new)}))
    for mine in sorted(known.mine) if known.failing() else []:
        content = _other_than(mine, known.texts.get(mine) or "")
        path = {"type": "string", "enum": [mine]}
        calls.append(_call("write_file", {"path": path, "content": content}))
    return calls


def reply_schema(known: Knowledge, offered: Sequence[str]) -> dict[str, Any]:
    """The schema of this turn's reply: the calls that can work now, or a final answer."""
    if known.checked():
        return FINAL
    if known.unchecked and known.checks and "run_command" in offered:
        # After a change, a check: a tiny model otherwise goes on changing what it has just
        # written, and would not know whether it is done.
        return _call("run_command", {"command": {"type": "string", "enum": known.checks}})
    branches: list[dict[str, Any]] = []
    for name in offered:
        if name == "read_file" and (unread := known.unread()):
            branches.append(_call(name, {"path": {"type": "string", "enum": unread}}))
        elif name == "list_directory" and (dirs := known.unlisted()):
            branches.append(_call(name, {"path": {"type": "string", "enum": dirs}}))
        elif name == "edit_file" and (editable := known.editable()):
            branches.append(_edit_call(editable))
        elif name == "write_file":
            branches += _writes(known)
        elif name == "run_command" and (commands := known.commands()):
            branches.append(_call(name, {"command": {"type": "string", "enum": commands}}))
    if known.acted or not branches:
        branches.append(FINAL)
    return branches[0] if len(branches) == 1 else {"anyOf": branches}

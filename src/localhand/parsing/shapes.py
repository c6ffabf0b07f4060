"""Recognise a call in a loaded JSON value, and match names against the offered tools."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from localhand.parsing.json_load import RepairGate, loads_lenient

# Keys models use for the arguments, most common first (OpenAI/Qwen "arguments", Llama 3.x
# "parameters", Cohere "parameters", LangChain "action_input"/"tool_input", others "args").
ARG_KEYS = ("arguments", "parameters", "args", "input", "tool_input", "action_input", "params")
# Keys that hold the tool name.
NAME_KEYS = ("name", "function", "tool", "tool_name", "function_name", "action", "recipient_name")
# Keys that wrap a list of calls or one call.
LIST_KEYS = ("tool_calls", "function_calls", "calls", "tool_uses", "actions")
ONE_KEYS = ("function", "tool", "tool_call", "function_call", "call")
# Namespaces models put before a name: OpenAI/harmony "functions.", Gemini "default_api.".
NAME_PREFIXES = ("functions.", "function.", "default_api.", "tools.", "tool.", "api.")
FINAL_ANSWER_KEYS = ("final_answer",)
# Special tokens and markup that leak into a name when a server's parser stops one token late
# ("write_file<|channel|>commentary" from gpt-oss, "git_status</arg_value>" from GLM): the
# pieces between them are the candidates for the name meant.
_LEAKED_MARKUP = re.compile(r"<[^<>]{0,64}>|\[[A-Z_]{2,32}\]|[<>|\s\"'{}()\[\]]+|to=")


@dataclass(slots=True)
class RawCall:
    """A call as found in text, before name resolution and coercion."""

    name: str
    arguments: dict[str, Any] | None  # None: present but unusable (malformed)
    call_id: str | None = None
    positional: list[Any] = field(default_factory=list)
    no_arguments: bool = False  # the call object had no arguments at all (only its name)


def plausible_name(name: str) -> bool:
    """An identifier-like tool name (letters, digits, ``_ - . :``), not a sentence."""
    if not name or len(name) > 128 or not (name[0].isalpha() or name[0] == "_"):
        return False
    return all(ch.isalnum() or ch in "_-.:" for ch in name)


def _tool_entries(tools: Iterable[Any]) -> Iterable[tuple[str, dict[str, Any]]]:
    for tool in tools:
        if not isinstance(tool, dict):
            continue
        inner = tool.get("function")
        function = inner if isinstance(inner, dict) else tool
        name = function.get("name")
        if isinstance(name, str) and name:
            params = function.get("parameters")
            if not isinstance(params, dict):
                params = function.get("input_schema")  # Anthropic-style definitions
            yield name, params if isinstance(params, dict) else {}


class ToolIndex:
    """The offered tools by name, with forgiving lookup for names models garble slightly."""

    def __init__(self, tools: Iterable[Any] | None) -> None:
        self.offered = tools is not None
        self.params: dict[str, dict[str, Any]] = {}
        # Set by the parser to its per-reply budget, so hostile text cannot run json-repair
        # on thousands of argument strings.
        self.repair_gate: RepairGate = True
        try:
            for name, params in _tool_entries(tools or ()):
                self.params.setdefault(name, params)
        except TypeError:  # tools was not iterable: behave as if none were described
            self.offered = False
        self._resolved: dict[str, str | None] = {}
        self._folded: dict[str, str | None] = {}
        for name in self.params:
            key = self._fold(name)
            # Two tools folding together make the folded lookup ambiguous: disable it.
            self._folded[key] = None if key in self._folded else name

    @staticmethod
    def _fold(name: str) -> str:
        return name.strip().lower().replace("-", "_").replace(" ", "_")

    def resolve(self, name: str) -> str | None:
        """The offered tool ``name`` means, or None. Without a tool list any plausible name."""
        if name in self._resolved:
            return self._resolved[name]
        found = self._resolve(name)
        if len(self._resolved) < 4096:  # memo: hostile text repeats names thousands of times
            self._resolved[name] = found
        return found

    def _resolve(self, name: str) -> str | None:
        name = name.strip().strip("`'\"")
        if name in self.params:
            return name
        for prefix in NAME_PREFIXES:
            if name.startswith(prefix) and name[len(prefix) :] in self.params:
                return name[len(prefix) :]
        bare = name.rsplit(".", 1)[-1] if "." in name else name
        bare = bare.split(":", 1)[0]  # Kimi-style "functions.name:0"
        for candidate in (bare, name):
            hit = self._folded.get(self._fold(candidate))
            if hit:
                return hit
        if not self.offered:
            return name if plausible_name(name) else self._without_leaks(name)
        return self._without_leaks(name)

    def _without_leaks(self, name: str) -> str | None:
        """The offered tool (or, with no tool list, the plausible name) that remains once leaked
        special tokens are taken out of ``name``; None when no piece names one."""
        if len(name) > 512 or not any(ch in name for ch in "<>|["):
            return None  # no markup in it: a name with a space is not a leak
        for piece in _LEAKED_MARKUP.split(name):
            piece = piece.strip(".:,;")
            if not piece or piece == name:
                continue
            found = self._resolve(piece)
            if found:
                return found
        return None

    def schema(self, name: str) -> dict[str, Any]:
        return self.params.get(name, {})

    def property_names(self, name: str) -> list[str]:
        props = self.schema(name).get("properties")
        return list(props) if isinstance(props, dict) else []


def arguments_from(raw: Any, allow_repair: RepairGate = True) -> dict[str, Any] | None:
    """Arguments as a dict: objects as they are, JSON strings decoded (double-encoded ones
    too), nothing as ``{}``; None when they are present but unusable. A string that stopped
    early may have its arguments object closed, never one of its values (``may_close=1``)."""
    for _ in range(3):  # a string may be encoded twice ("\"{\\\"a\\\": 1}\"")
        if raw is None:
            return {}
        if isinstance(raw, dict):
            return raw
        if isinstance(raw, str):
            if not raw.strip():
                return {}
            ok, raw = loads_lenient(raw, allow_repair=allow_repair, may_close=1)
            if not ok:
                return None
            continue
        return None
    return raw if isinstance(raw, dict) else None


def _call_from_dict(value: dict[str, Any], index: ToolIndex) -> RawCall | None:
    name: str | None = None
    for key in NAME_KEYS:
        candidate = value.get(key)
        if isinstance(candidate, str) and candidate.strip():
            name = candidate.strip()
            break
    if name is None:
        # {"read_file": {"path": "a"}}: a single key naming an offered tool.
        if len(value) == 1 and index.params:
            ((key, inner),) = value.items()
            if isinstance(key, str) and key in index.params and isinstance(inner, dict):
                return RawCall(key, inner)
        return None
    call_id = value.get("id") if isinstance(value.get("id"), str) else None
    for key in ARG_KEYS:
        if key in value:
            return RawCall(name, arguments_from(value[key], index.repair_gate), call_id)
    others = {k: v for k, v in value.items() if k not in NAME_KEYS and k not in ("id", "type")}
    if not others:
        return RawCall(name, {}, call_id, no_arguments=True)
    # {"name": "read_file", "path": "a"}: arguments flattened into the call object. Only
    # believable when every other key is a parameter of that tool.
    resolved = index.resolve(name)
    if resolved and set(others) <= set(index.property_names(resolved)):
        return RawCall(name, others, call_id)
    return None


def interpret(value: Any, index: ToolIndex, depth: int = 0) -> list[RawCall] | None:
    """The calls a loaded value expresses, or None when it is not call-shaped."""
    if depth > 6:
        return None
    if isinstance(value, list):
        if not value:
            return None
        calls: list[RawCall] = []
        for item in value:
            found = interpret(item, index, depth + 1)
            if not found:
                return None  # a list is a call list only when every element is a call
            calls.extend(found)
        return calls
    if not isinstance(value, dict):
        return None
    for key in LIST_KEYS:
        inner = value.get(key)
        if isinstance(inner, list | dict):
            found = interpret(inner, index, depth + 1)
            if found:
                return found
    for key in ONE_KEYS:
        inner = value.get(key)
        if isinstance(inner, dict):
            found = interpret(inner, index, depth + 1)
            if found:
                return found
    call = _call_from_dict(value, index)
    return [call] if call else None


def final_answer_of(value: Any) -> str | None:
    """The answer text of ``{"final_answer": "..."}`` (the constrained-retry escape hatch) or
    LangChain's ``{"action": "Final Answer", "action_input": "..."}``."""
    if not isinstance(value, dict):
        return None
    action = value.get("action")
    if isinstance(action, str) and action.strip().lower().replace("_", " ") == "final answer":
        answer = value.get("action_input", "")
        return answer if isinstance(answer, str) else None
    if len(value) == 1:
        ((key, answer),) = value.items()
        if key in FINAL_ANSWER_KEYS and isinstance(answer, str):
            return answer
    return None

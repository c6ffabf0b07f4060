"""Real chat templates, rendered as llama-server renders them, over localhand's real requests.

Shared by ``tests/profiles/test_templates.py`` and ``benchmarks/prefill_bench.py``.

**The templates** are llama.cpp's copies of each family's Jinja chat template
(``models/templates/`` of ggml-org/llama.cpp; ``templates/SOURCES.json`` names the repository,
path and commit of each file, and its sha256).

**The rendering** follows llama.cpp's ``common/chat.cpp`` and ``common/jinja/`` at that commit:
``trim_blocks`` and ``lstrip_blocks``; ``raise_exception``, ``strftime_now`` and a ``tojson``
that keeps non-ASCII and writes ``", "`` and ``": "``; the messages as its
``to_json_oaicompat`` writes them (empty content as ``""``, ``reasoning_content`` only when
there is some, keys in its order); tool-call arguments as objects for a template that reads
them as one (``supports_object_arguments``), else as the JSON string; the system message merged
into the next one for a template without a system role; ``enable_thinking`` (true unless a
kwarg says otherwise), ``tools`` only when there are some, and the kwargs of
``chat_template_kwargs``; and the specialised handlers' message changes for gpt-oss (reasoning
as ``thinking``, no content beside calls) and Ministral 3 (reasoning and text as content
blocks). Only ``jinja2`` (Python's engine, not llama.cpp's C++ one) differs: where they
disagree on a template, this check is wrong for it.

**The requests** are localhand's: the real ``Agent``, given the family's profile, runs a
12-request task against a ``ScriptedModel`` that records each request; each is sent as the
OpenAI-compatible backend sends it (``wire_history`` of the profile, then ``to_openai_messages``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from jinja2.exceptions import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from backend_helpers import function_tool
from localhand import Agent
from localhand.models._openai_wire import to_openai_messages
from localhand.models.scripted import ScriptedModel
from localhand.profiles import Profile, profile_for, wire_history
from localhand.profiles.formats import write_call
from localhand.run.guardrails import Limits
from localhand.types import Message, Reply, ToolCall
from workspaces import BUGGY, CHECK, workspace_with

TEMPLATES = Path(__file__).parent / "templates"
SOURCES: dict[str, dict[str, str]] = json.loads((TEMPLATES / "SOURCES.json").read_text())
NOW = time.struct_time((2026, 1, 15, 12, 0, 0, 3, 15, 0))
"""The clock ``strftime_now`` reads: fixed, so that two renders of a prompt are equal."""

Shape = Literal["native", "text"]
SHAPES: tuple[Shape, ...] = ("native", "text")


@dataclass(frozen=True)
class Family:
    key: str
    """Which template: a family and, where it has several, its version."""
    profile: str
    """The model name localhand would see (matched to a profile)."""
    template: str
    kwargs: Mapping[str, Any] = field(default_factory=dict)


FAMILIES: tuple[Family, ...] = (
    Family("qwen3", "qwen3:8b", "Qwen-Qwen3-0.6B.jinja"),
    Family("qwen3-coder", "qwen3-coder:30b", "Qwen3-Coder.jinja"),
    Family("qwen2.5-coder", "qwen2.5-coder:7b", "Qwen-Qwen2.5-7B-Instruct.jinja"),
    Family("gpt-oss", "gpt-oss:20b", "openai-gpt-oss-120b.jinja"),
    Family("llama3.1", "llama3.1:8b", "meta-llama-Llama-3.1-8B-Instruct.jinja"),
    Family("llama3.2", "llama3.2:3b", "meta-llama-Llama-3.2-3B-Instruct.jinja"),
    Family(
        "mistral-small-3.2", "mistral-small3.2:24b", "Mistral-Small-3.2-24B-Instruct-2506.jinja"
    ),
    Family("devstral", "devstral:24b", "unsloth-mistral-Devstral-Small-2507.jinja"),
    Family(
        "magistral", "ministral-3-14b-reasoning", "mistralai-Ministral-3-14B-Reasoning-2512.jinja"
    ),
    Family("gemma3", "gemma3:4b", "google-gemma-3-4b-it.jinja"),
    Family("gemma4", "gemma4:31b", "google-gemma-4-31B-it.jinja"),
    Family("granite-3.3", "granite3.3:8b", "ibm-granite-granite-3.3-2B-Instruct.jinja"),
    Family("granite-4.0", "granite4:tiny-h", "ibm-granite-granite-4.0.jinja"),
    Family("phi-4-mini", "phi4-mini:3.8b", "llama-cpp-microsoft-Phi-4-mini-instruct.jinja"),
    Family("deepseek-r1", "deepseek-r1:8b", "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja"),
    Family("glm-4.5", "glm-4.5-air", "glm_4_5.jinja"),
    Family("glm-4.6", "glm-4.6", "GLM-4.6.jinja"),
)


def family_profile(family: Family) -> Profile:
    return profile_for(family.profile)


# ---------------------------------------------------------------- rendering, as llama-server


def _tojson(
    value: Any,
    indent: int | None = None,
    ensure_ascii: bool = False,
    separators: Sequence[str] | None = None,
    sort_keys: bool = False,
) -> str:
    if sort_keys:  # llama.cpp: "tojson sort_keys=true not implemented"
        raise TemplateError("tojson sort_keys=true not implemented")
    item, key = (separators or ((", " if indent is None else ","), ": "))[:2]
    return json.dumps(value, indent=indent, ensure_ascii=ensure_ascii, separators=(item, key))


def _raise(message: str) -> str:
    raise TemplateError(message)


def _environment() -> ImmutableSandboxedEnvironment:
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"]
    )
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise
    env.globals["strftime_now"] = lambda fmt: time.strftime(fmt, NOW)
    return env


_ENV = _environment()


@dataclass(frozen=True)
class Template:
    name: str
    source: str
    system_role: bool
    object_arguments: bool

    def render(
        self,
        messages: list[dict[str, Any]],
        tools: Sequence[Mapping] | None,
        kwargs: Mapping[str, Any] | None = None,
    ) -> str:
        return _render(self.source, self._prepare(messages), tools, kwargs or {})

    def _prepare(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out = [_as_llama_json(m, self.object_arguments) for m in messages]
        if not self.system_role and out and out[0]["role"] == "system" and len(out) > 1:
            out[1] = {**out[1], "content": out[0]["content"] + "\n" + out[1]["content"]}
            out = out[1:]
        if "<|channel|>" in self.source:  # parsers/gpt-oss.cpp
            out = [_gpt_oss(m) for m in out]
        if _is_ministral3(self.source):  # parsers/ministral3.cpp
            out = [_ministral3(m) for m in out]
        return out


def _render(
    source: str, messages: list, tools: Sequence[Mapping] | None, kwargs: Mapping[str, Any]
) -> str:
    context: dict[str, Any] = {
        "messages": messages,
        "bos_token": "",
        "eos_token": "",
        "enable_thinking": True,
        "datetime": time.strftime("%b %d %Y", NOW),
        "date_string": time.strftime("%d %b %Y", NOW),
        "add_generation_prompt": True,
        **kwargs,
    }
    if tools:
        context["tools"] = list(tools)
    return _compiled(source).render(context)


@lru_cache(maxsize=64)
def _compiled(source: str):
    return _ENV.from_string(source)


@lru_cache(maxsize=64)
def load_template(name: str) -> Template:
    """A stored template, with the capabilities llama.cpp probes (``jinja/caps.cpp``)."""
    source = (TEMPLATES / name).read_text()
    if "<|channel|>" in source:
        # llama.cpp patches this check out of gpt-oss's template (chat.cpp, PR 15230).
        source = source.replace(
            '{%- if "<|channel|>analysis<|message|>" in message.content or '
            '"<|channel|>final<|message|>" in message.content %}',
            "{%- if false %}",
        )
    return Template(name, source, _probe_system(source), _probe_object_arguments(source))


def _probe_system(source: str) -> bool:
    needle = "System message needle"
    probe = [{"role": "system", "content": needle}, {"role": "user", "content": "User message"}]
    try:
        return needle in _render(source, probe, None, {})
    except TemplateError:
        return False


def _probe_object_arguments(source: str) -> bool:
    call = {
        "id": "call00001",
        "type": "function",
        "function": {"name": "tool1", "arguments": {"arg": "argument_needle"}},
    }
    probe = [
        {"role": "user", "content": "User message"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "content": "Tool response", "tool_call_id": "call00001"},
    ]
    tools = [function_tool("tool1", "d", "arg")]
    try:
        return "argument_needle" in _render(source, probe, tools, {})
    except (TemplateError, TypeError):
        return False


def _as_llama_json(message: Mapping[str, Any], object_arguments: bool) -> dict[str, Any]:
    """One OpenAI message as llama.cpp re-serialises it after parsing (``to_json_oaicompat``)."""
    out: dict[str, Any] = {"role": message["role"], "content": message.get("content") or ""}
    if message.get("reasoning_content"):
        out["reasoning_content"] = message["reasoning_content"]
    if message.get("name"):
        out["name"] = message["name"]
    if message.get("tool_call_id"):
        out["tool_call_id"] = message["tool_call_id"]
    if message.get("tool_calls"):
        calls = []
        for raw in message["tool_calls"]:
            arguments = raw["function"]["arguments"]
            if isinstance(arguments, Mapping):
                arguments = json.dumps(arguments)
            if object_arguments:
                arguments = json.loads(arguments)
            call = {
                "type": "function",
                "function": {"name": raw["function"]["name"], "arguments": arguments},
            }
            if raw.get("id"):
                call["id"] = raw["id"]
            calls.append(call)
        out["tool_calls"] = calls
    return out


def _gpt_oss(message: dict[str, Any]) -> dict[str, Any]:
    if isinstance(message.get("reasoning_content"), str):
        message = {**message, "thinking": message["reasoning_content"]}
        if message.get("tool_calls"):
            message.pop("content", None)
    return message


def _is_ministral3(source: str) -> bool:
    return all(s in source for s in ("[SYSTEM_PROMPT]", "[TOOL_CALLS]", "[ARGS]")) and (
        "[CALL_ID]" not in source
    )


def _ministral3(message: dict[str, Any]) -> dict[str, Any]:
    if message["role"] not in ("system", "assistant"):
        return message
    blocks: list[dict[str, str]] = []
    if isinstance(message.get("reasoning_content"), str):
        blocks.append({"type": "thinking", "thinking": message["reasoning_content"]})
    if isinstance(message.get("content"), str):
        blocks.append({"type": "text", "text": message["content"]})
    out = {k: v for k, v in message.items() if k != "reasoning_content"}
    out["content"] = blocks
    return out


def to_wire(messages: Sequence[Message], profile: Profile) -> list[dict[str, Any]]:
    """localhand's history as its OpenAI-compatible backend sends it under ``profile``."""
    return to_openai_messages(wire_history(messages, profile))


# ---------------------------------------------------------------- the 12-request task

TASK = "Fix the bug in calc.py so check_calc.py passes, and note what you did in NOTES.md"
STEPS: tuple[tuple[str, dict[str, Any]] | str | None, ...] = (
    ("list_directory", {"path": "."}),
    ("read_file", {"path": "calc.py"}),
    ("read_file", {"path": "check_calc.py"}),
    ("run_command", {"command": "python3 check_calc.py"}),
    ("search_files", {"pattern": "subtract|minus"}),  # found in no result: only in the call
    ("edit_file", {"path": "calc.py", "old_text": "return a - b", "new_text": "return a + b"}),
    ("run_command", {"command": "python3 check_calc.py"}),
    None,  # a reply with thinking and nothing else: localhand nudges
    ("write_file", {"path": "NOTES.md", "content": "Fixed add() in calc.py: it subtracted.\n"}),
    ("read_file", {"path": "NOTES.md"}),
    ("list_directory", {"path": "."}),
    "Fixed add() in calc.py (it subtracted); check_calc.py passes; NOTES.md says so.",
)
"""What the model answers to each of the 12 requests: a call, an empty reply, the answer."""


def scripted_replies(profile: Profile, shape: Shape) -> list[Reply]:
    """The replies of a model of ``profile``'s family: its calls native or in its own text
    format, with some thinking when the family thinks."""
    thinks = profile.thinks()
    replies = []
    for number, step in enumerate(STEPS, 1):
        thinking = f"Step {number}: what I know so far, and what to do next." if thinks else ""
        if step is None:
            replies.append(Reply(thinking=thinking or "Hmm.", done_reason="stop"))
        elif isinstance(step, str):
            replies.append(Reply(content=step, thinking=thinking, done_reason="stop"))
        elif shape == "native":
            replies.append(
                Reply(thinking=thinking, tool_calls=(ToolCall(*step),), done_reason="stop")
            )
        else:
            text = write_call(profile.text_format, *step)
            replies.append(Reply(content=text, thinking=thinking, done_reason="stop"))
    return replies


@dataclass(frozen=True)
class Request:
    messages: list[Message]
    """As localhand's history held them (Ollama's shape)."""
    tools: list[dict[str, Any]]


def request_sequence(profile: Profile, shape: Shape, root: Path) -> list[Request]:
    """The requests localhand makes for the 12-request task, run for real in ``root``."""
    workspace = workspace_with(root, {"calc.py": BUGGY, "check_calc.py": CHECK})
    model = ScriptedModel(scripted_replies(profile, shape), name=profile.name)
    agent = Agent(model, workspace, profile=profile, limits=Limits(max_iterations=20))
    result = agent.run(TASK)
    if result.termination_reason != "final_answer":
        raise AssertionError(f"the task ended with {result.termination_reason}: {result.error}")
    model.assert_exhausted()
    return [Request(call.messages, call.tools or []) for call in model.calls]


def render_sequence(
    family: Family, requests: Sequence[Request], profile: Profile | None = None
) -> list[str]:
    """Each request's prompt, as llama-server renders it with the family's template."""
    profile = profile or family_profile(family)
    template = load_template(family.template)
    return [
        template.render(to_wire(r.messages, profile), r.tools, family.kwargs or None)
        for r in requests
    ]


def first_break(prompts: Sequence[str]) -> int | None:
    """The number (from 2) of the first prompt that does not start with the previous one."""
    for number in range(1, len(prompts)):
        if not prompts[number].startswith(prompts[number - 1]):
            return number + 1
    return None


def common_prefix(a: str, b: str) -> int:
    limit = min(len(a), len(b))
    index = 0
    while index < limit and a[index] == b[index]:
        index += 1
    return index

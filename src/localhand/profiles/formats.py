"""One call written as a family writes it in text: for a prompt's example, and for tests.

Each writer produces what the family's own chat template renders for a native call (or, for
a family whose template has no calls, what its makers' guide shows), so a call stored
natively comes back to the model in the words it would have written. The parser reads every
one of them (``localhand.parsing``; its ``source`` names are the keys here).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

Writer = Callable[[str, Mapping[str, Any]], str]


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _filled(form: str) -> Writer:
    """A writer for a family whose call is ``form`` with ``{name}``, ``{args}`` (the arguments
    as JSON) and ``{call}`` (name and arguments as one JSON object) filled in."""

    def write(name: str, args: Mapping[str, Any]) -> str:
        arguments = dict(args)
        call = _dumps({"name": name, "arguments": arguments})
        return form.format(name=name, args=_dumps(arguments), call=call)

    return write


def _qwen3_coder(name: str, args: Mapping[str, Any]) -> str:
    params = "".join(
        f"<parameter={key}>\n{value if isinstance(value, str) else _dumps(value)}\n</parameter>\n"
        for key, value in args.items()
    )
    return f"<tool_call>\n<function={name}>\n{params}</function>\n</tool_call>"


def _json(name: str, args: Mapping[str, Any]) -> str:
    # Llama 3.x's template writes "parameters", as its makers' prompt format does.
    return _dumps({"name": name, "parameters": dict(args)})


def _gemma_value(value: Any) -> str:
    if isinstance(value, str):
        return f'<|"|>{value}<|"|>'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{k}:{_gemma_value(v)}" for k, v in sorted(value.items())) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_gemma_value(v) for v in value) + "]"
    return _dumps(value)


def _gemma4(name: str, args: Mapping[str, Any]) -> str:
    body = ",".join(f"{k}:{_gemma_value(v)}" for k, v in sorted(args.items()))
    return f"<|tool_call>call:{name}{{{body}}}<tool_call|>"


def _pythonic(name: str, args: Mapping[str, Any]) -> str:
    params = ", ".join(f"{k}={_dumps(v)}" for k, v in args.items())
    return f"```tool_code\n{name}({params})\n```"


def _glm(name: str, args: Mapping[str, Any]) -> str:
    pairs = "".join(
        f"\n<arg_key>{k}</arg_key>\n<arg_value>{v if isinstance(v, str) else _dumps(v)}</arg_value>"
        for k, v in args.items()
    )
    return f"<tool_call>{name}{pairs}\n</tool_call>"


WRITERS: dict[str, Writer] = {
    "hermes": _filled('<tool_call>\n{{"name": "{name}", "arguments": {args}}}\n</tool_call>'),
    "qwen3_coder": _qwen3_coder,
    "harmony": _filled(
        "<|channel|>commentary to=functions.{name} <|constrain|>json<|message|>{args}<|call|>"
    ),
    "mistral": _filled("[TOOL_CALLS]{name}[ARGS]{args}"),
    "json": _json,
    "gemma4": _gemma4,
    "pythonic": _pythonic,
    "tool_call_token": _filled("<|tool_call|>[{call}]"),
    # llama.cpp's Phi-4-mini template writes one object per tag, not a list.
    "phi4": _filled("<|tool_call|>{call}<|/tool_call|>"),
    "deepseek": _filled(
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>{name}\n```json\n{args}"
        "\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
    ),
    "glm": _glm,
}
_OTHER = _filled("{call}")
"""A bare JSON object, for a format not known here."""


def write_call(text_format: str, name: str, arguments: Mapping[str, Any]) -> str:
    """The call as ``text_format`` writes it; a bare JSON object for a format not known here."""
    return WRITERS.get(text_format, _OTHER)(name, arguments)

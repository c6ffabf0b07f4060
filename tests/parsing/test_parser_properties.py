"""Property tests: every supported format round-trips any valid call; nothing makes the parser
raise (or fall back to its last-resort guard)."""

from __future__ import annotations

import json
import keyword
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from localhand.parsing import coerce_arguments, parse_tool_calls

PARAMS = {
    "type": "object",
    "properties": {
        "s": {"type": "string"},
        "i": {"type": "integer"},
        "b": {"type": "boolean"},
        "n": {"type": "number"},
        "a": {"type": "array", "items": {"type": "string"}},
        "o": {"type": "object", "properties": {"k": {"type": "string"}}},
    },
}
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

names = st.from_regex(r"[a-z][a-z0-9_]{0,15}", fullmatch=True).filter(
    lambda n: not keyword.iskeyword(n) and n not in ("print", "call", "function", "true", "false")
)
# Text that markup formats can carry: no "<" (their delimiters start with it) and no
# backslash (GLM/MiniMax values are raw text, not escaped).
plain_text = st.text(
    st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="<\\"), max_size=30
)
finite = st.floats(allow_nan=False, allow_infinity=False, width=32).filter(
    lambda x: not x.is_integer()  # "5.0" coerced for a number parameter stays a float anyway
)


@st.composite
def calls(draw: st.DrawFn, text: st.SearchStrategy[str] = plain_text) -> tuple[str, dict[str, Any]]:
    values = {
        "s": text,
        "i": st.integers(-(10**6), 10**6),
        "b": st.booleans(),
        "n": finite,
        "a": st.lists(text, max_size=3),
        "o": st.fixed_dictionaries({"k": text}),
    }
    keys = draw(st.lists(st.sampled_from(sorted(values)), unique=True, max_size=6))
    return draw(names), {key: draw(values[key]) for key in keys}


def tools_for(name: str) -> list[dict[str, Any]]:
    return [
        {"type": "function", "function": {"name": name, "parameters": PARAMS}},
        {"type": "function", "function": {"name": "zz_other", "parameters": {"type": "object"}}},
    ]


def _text(value: Any) -> str:
    # How XML-style templates write a value: strings raw, everything else as JSON.
    return value if isinstance(value, str) else json.dumps(value)


def _gemma(value: Any, quote: str) -> str:
    if isinstance(value, str):
        return f"{quote}{value}{quote}"
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{_gemma(v, quote)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_gemma(v, quote) for v in value) + "]"
    return json.dumps(value)


GEMMA4_QUOTE = '<|"|>'
Render = Callable[[str, dict[str, Any]], dict[str, Any]]


def _content(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def _j(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False)


RENDERERS: dict[str, Render] = {
    "native_object": lambda n, a: {
        "content": "",
        "tool_calls": [{"function": {"name": n, "arguments": a}}],
    },
    "native_string": lambda n, a: {
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": n, "arguments": _j(a)}}
        ],
    },
    "bare_json": lambda n, a: _content(_j({"name": n, "arguments": a})),
    "json_fence": lambda n, a: _content(
        "Calling it.\n```json\n" + _j({"name": n, "arguments": a}) + "\n```"
    ),
    "llama_parameters": lambda n, a: _content(_j({"name": n, "parameters": a})),
    "python_tag": lambda n, a: _content(
        "<|python_tag|>" + _j({"name": n, "parameters": a}) + "<|eom_id|>"
    ),
    "hermes": lambda n, a: _content(
        "<tool_call>\n" + _j({"name": n, "arguments": a}) + "\n</tool_call>"
    ),
    "hermes_python_dict": lambda n, a: _content(
        "<tool_call>\n" + repr({"name": n, "arguments": a}) + "\n</tool_call>"
    ),
    "qwen3_coder": lambda n, a: _content(
        f"<tool_call>\n<function={n}>\n"
        + "".join(f"<parameter={k}>\n{_text(v)}\n</parameter>\n" for k, v in a.items())
        + "</function>\n</tool_call>"
    ),
    "mistral_v3": lambda n, a: _content("[TOOL_CALLS]" + _j([{"name": n, "arguments": a}])),
    "mistral_v11": lambda n, a: _content(f"[TOOL_CALLS]{n}[ARGS]" + _j(a)),
    "pythonic": lambda n, a: _content(
        f"[{n}(" + ", ".join(f"{k}={v!r}" for k, v in a.items()) + ")]"
    ),
    "deepseek_v31": lambda n, a: _content(
        f"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>{n}<｜tool▁sep｜>{_j(a)}"
        "<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
    ),
    "deepseek_v3": lambda n, a: _content(
        f"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>{n}\n```json\n{_j(a)}\n```"
        "<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
    ),
    "kimi_k2": lambda n, a: _content(
        f"<|tool_calls_section_begin|><|tool_call_begin|>functions.{n}:0"
        f"<|tool_call_argument_begin|>{_j(a)}<|tool_call_end|><|tool_calls_section_end|>"
    ),
    "glm": lambda n, a: _content(
        f"<tool_call>{n}\n"
        + "".join(
            f"<arg_key>{k}</arg_key>\n<arg_value>{_text(v)}</arg_value>\n" for k, v in a.items()
        )
        + "</tool_call>"
    ),
    "minimax": lambda n, a: _content(
        f'<minimax:tool_call>\n<invoke name="{n}">\n'
        + "".join(f'<parameter name="{k}">{_text(v)}</parameter>\n' for k, v in a.items())
        + "</invoke>\n</minimax:tool_call>"
    ),
    "function_gemma": lambda n, a: _content(
        f"<start_function_call>call:{n}{_gemma(a, '<escape>')}<end_function_call>"
    ),
    "gemma4": lambda n, a: _content(f"<|tool_call>call:{n}{_gemma(a, GEMMA4_QUOTE)}<tool_call|>"),
    "harmony": lambda n, a: _content(
        f"<|channel|>commentary to=functions.{n} <|constrain|>json<|message|>{_j(a)}<|call|>"
    ),
    "granite": lambda n, a: _content("<|tool_call|>" + _j([{"name": n, "arguments": a}])),
    "command_r": lambda n, a: _content(
        "<|START_ACTION|>"
        + _j([{"tool_call_id": "0", "tool_name": n, "parameters": a}])
        + "<|END_ACTION|>"
    ),
    "lmstudio": lambda n, a: _content(
        "[TOOL_REQUEST]" + _j({"name": n, "arguments": a}) + "[END_TOOL_REQUEST]"
    ),
}


def rendering(
    call: tuple[str, dict[str, Any]], format_name: str, upto: float = 1.0
) -> tuple[str, dict[str, Any], str]:
    """The call's name, its arguments, and the text ``format_name`` writes it as: its first
    ``upto`` share (where the length limit cut it), the whole by default."""
    name, arguments = call
    text = RENDERERS[format_name](name, arguments)["content"]
    return name, arguments, text[: int(upto * len(text))]


CUT_CALLS = {
    "call": calls(),
    "where": st.floats(0, 1, exclude_max=True),
    "format_name": st.sampled_from(sorted(set(RENDERERS) - {"native_object", "native_string"})),
}
"""``@given(**CUT_CALLS)``: a call, a text format, and where in its text the length limit cuts."""


@FAST
@given(call=calls(), format_name=st.sampled_from(sorted(RENDERERS)))
def test_any_call_round_trips_in_any_format(
    call: tuple[str, dict[str, Any]], format_name: str
) -> None:
    name, arguments = call
    reply = parse_tool_calls(RENDERERS[format_name](name, arguments), tools_for(name))
    assert reply.type == "tool_calls", (format_name, reply)
    assert [(c.name, c.arguments) for c in reply.calls] == [(name, arguments)], format_name


FRAGMENTS = [
    "<tool_call>",
    "</tool_call>",
    "<think>",
    "</think>",
    "{",
    "}",
    "[",
    "]",
    '"',
    "'",
    ":",
    ",",
    '"name"',
    '"arguments"',
    "read_file",
    "<function=",
    "<parameter=",
    "</parameter>",
    "</function>",
    "[TOOL_CALLS]",
    "[ARGS]",
    "<|python_tag|>",
    "```",
    "```json",
    "(",
    ")",
    "=",
    "<invoke name=",
    "<arg_key>",
    "<|tool_call_begin|>",
    "<｜tool▁sep｜>",
    "call:",
    "<escape>",
    "to=functions.",
    "<|message|>",
    "Action:",
    "Action Input:",
    "\\",
    "\n",
    "null",
]
# Text full of other formats' markers: a string value that mentions <tool_call>, </think>,
# [TOOL_CALLS] or ``` must come through as text, not end the call early.
tricky_text = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=6)), max_size=8).map(
    "".join
)
JSON_CARRIERS = [
    "native_object",
    "native_string",
    "bare_json",
    "json_fence",
    "llama_parameters",
    "python_tag",
    "hermes",
    "hermes_python_dict",
    "mistral_v3",
    "mistral_v11",
    "pythonic",
    "deepseek_v31",
    "deepseek_v3",
    "kimi_k2",
    "harmony",
    "granite",
    "command_r",
    "lmstudio",
]


@FAST
@given(
    call=calls(st.one_of(st.text(max_size=40), tricky_text)),
    format_name=st.sampled_from(JSON_CARRIERS),
)
def test_json_and_python_formats_carry_any_text(
    call: tuple[str, dict[str, Any]], format_name: str
) -> None:
    name, arguments = call
    reply = parse_tool_calls(RENDERERS[format_name](name, arguments), tools_for(name))
    assert [(c.name, c.arguments) for c in reply.calls] == [(name, arguments)], format_name


@FAST
@given(
    call=calls(), format_name=st.sampled_from(["bare_json", "hermes", "qwen3_coder", "pythonic"])
)
def test_call_written_only_in_thinking_is_never_executed(
    call: tuple[str, dict[str, Any]], format_name: str
) -> None:
    name, _, rendered = rendering(call, format_name)
    reply = parse_tool_calls(_content(f"<think>{rendered}</think>"), tools_for(name))
    assert reply.calls == ()
    assert reply.only_thinking_calls


hostile = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=8)), max_size=40).map(
    "".join
)
TOOLS = tools_for("read_file")


@settings(max_examples=300, deadline=None)
@given(
    text=hostile, thinking=st.one_of(st.none(), hostile), reason=st.sampled_from([None, "length"])
)
def test_no_text_makes_the_parser_raise_or_fall_back(
    text: str, thinking: str | None, reason: Any
) -> None:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if thinking is not None:
        message["thinking"] = thinking
    reply = parse_tool_calls(message, TOOLS, done_reason=reason)
    assert reply.source != "fallback"  # the last-resort guard was not needed
    assert reply.type in ("tool_calls", "final_answer", "empty")
    assert (reply.type == "tool_calls") == bool(reply.calls)
    assert reply.type != "final_answer" or reply.content
    # A failed call attempt is never a final answer, whatever it says (issue 17).
    assert reply.type != "final_answer" or not reply.malformed


@settings(max_examples=100, deadline=None)
@given(
    message=st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=10),
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(
                st.sampled_from(
                    ["content", "tool_calls", "function", "name", "arguments", "thinking"]
                ),
                inner,
                max_size=4,
            )
        ),
        max_leaves=12,
    )
)
def test_odd_message_shapes_never_raise(message: Any) -> None:
    reply = parse_tool_calls(message, TOOLS)
    assert reply.type in ("tool_calls", "final_answer", "empty")


@settings(max_examples=100, deadline=None)
@given(
    value=st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
        ),
        max_leaves=10,
    ),
    schema=st.recursive(
        st.fixed_dictionaries(
            {
                "type": st.sampled_from(
                    ["string", "integer", "number", "boolean", "null", "object", "array"]
                )
            }
        ),
        lambda inner: (
            st.fixed_dictionaries({"anyOf": st.lists(inner, max_size=3)})
            | st.fixed_dictionaries({"type": st.just("array"), "items": inner})
            | st.fixed_dictionaries(
                {"properties": st.dictionaries(st.text(max_size=3), inner, max_size=3)}
            )
        ),
        max_leaves=8,
    ),
)
def test_coercion_never_raises(value: Any, schema: dict[str, Any]) -> None:
    result = coerce_arguments({"x": value}, {"type": "object", "properties": {"x": schema}})
    assert set(result) == {"x"}


@settings(max_examples=100, deadline=None)
@given(i=st.integers(), b=st.booleans(), items=st.lists(st.text(max_size=5), max_size=3))
def test_coercion_inverts_stringification(i: int, b: bool, items: list[str]) -> None:
    rendered = {"i": str(i), "b": str(b).lower(), "a": json.dumps(items), "s": "untouched"}
    assert coerce_arguments(rendered, PARAMS) == {"i": i, "b": b, "a": items, "s": "untouched"}

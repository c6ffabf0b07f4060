"""Repair policy: broken JSON is repaired only when the repair is unambiguous.

A repair may change punctuation (close what a stopped reply left open, drop a trailing comma,
quote a bare key); it never invents, drops or moves content, never fills a missing value and
never completes a string, number or word that the end of the text cut. Anything else is
``malformed``, so the loop asks again with a constrained ``format``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from localhand.parsing import parse_tool_calls
from localhand.parsing.faithful import check, holds_closed
from localhand.tools import default_tools
from test_parser_properties import (
    CUT_CALLS,
    JSON_CARRIERS,
    RENDERERS,
    calls,
    plain_text,
    rendering,
    tools_for,
    tricky_text,
)

SLOW_ENOUGH = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module")
def tools(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    return default_tools(str(tmp_path_factory.mktemp("ws"))).definitions()


# The reported defects ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [
        '<tool_call>{"name": "read_file", "arguments": {"path": </tool_call>',
        '{"name": "read_file", "arguments": {"path": 3,,}',
        '{"name": "read_file", "arguments": {"path": }}',
        '{"name": "read_file", "arguments": {"path": "calc',
        '<tool_call>{"name": "read_file", "arguments": {"path": "calc</tool_call>',
        '{"name": "read_file", "arguments": {"path": "calc.py",',
        '{"name": "read_file", "arguments": {"path": "calc.py", "start_line": 12',
    ],
)
def test_invented_or_cut_values_are_malformed(tools: list[dict[str, Any]], content: str) -> None:
    reply = parse_tool_calls({"role": "assistant", "content": content}, tools)
    assert reply.calls == ()
    assert reply.malformed
    assert reply.needs_constrained_retry


def test_closing_brackets_after_a_complete_value_is_fine(tools: list[dict[str, Any]]) -> None:
    content = '{"name": "read_file", "arguments": {"path": "calc.py"'
    reply = parse_tool_calls({"role": "assistant", "content": content}, tools)
    assert [(c.name, c.arguments) for c in reply.calls] == [("read_file", {"path": "calc.py"})]
    assert reply.repaired


def test_native_string_arguments_cut_inside_a_value(tools: list[dict[str, Any]]) -> None:
    message = {
        "content": "",
        "tool_calls": [{"function": {"name": "read_file", "arguments": '{"path": "a'}}],
    }
    reply = parse_tool_calls(message, tools)
    assert reply.calls == ()
    assert reply.malformed


# The faithfulness check itself -------------------------------------------------------------


@pytest.mark.parametrize(
    ("chunk", "value"),
    [
        ('{"a": 1,}', {"a": 1}),
        ('{a: "x"}', {"a": "x"}),
        ('{"a": "x"', {"a": "x"}),
        ('{"a": [1, "b"]', {"a": [1, "b"]}),
        ('{"a": true', {"a": True}),
        ("{'a': None, 'b': 'it\\'s'}", {"a": None, "b": "it's"}),
        ('{"code": "print("hi")"}', {"code": 'print("hi")'}),
        ('{"p": "C:\\dir"}', {"p": "C:\\dir"}),
        ('{"s": "caf\\u00e9"}', {"s": "café"}),
    ],
)
def test_punctuation_only_repairs_pass(chunk: str, value: Any) -> None:
    assert check(chunk, value) is not None


@pytest.mark.parametrize(
    ("chunk", "value"),
    [
        ('{"a": }', {"a": ""}),  # a missing value filled in
        ('{"a": 3,,}', {"a": "3,"}),  # punctuation moved into a value
        ('{"a": 3,,}', {"a": 3}),  # a doubled comma is not a trailing comma
        ('{"a": "x', {"a": "x"}),  # a string cut mid-way
        ('{"a": 12', {"a": 12}),  # a number that may have gone on
        ('{"a": tr', {"a": True}),  # a word cut mid-way
        ('{"a": "x",', {"a": "x"}),  # a member announced and never written
        ('{"a": ', {"a": None}),
        ('{"a"', {"a": None}),
        ('{"a": x.py}', {"a": "x.py"}),  # a bare word as a value
        ('{"a": "x" "b": 1}', {"a": "x", "b": 1}),  # a missing comma, or one string?
        ("{'a': 'x' 'y'}", {"a": "xy"}),  # Python's implicit concatenation
        ('{"a": "\\a"}', {"a": "\x07"}),  # Python's reading of an escape inside JSON
        ('{"a": [1, 2}', {"a": [1, 2]}),  # a mismatched bracket
        ('{"a": "x"}', {"a": "x", "b": 1}),  # an invented member
        ('{"a": "x", "b": 1}', {"a": "x"}),  # a dropped member
        ('{"a": "\\ud83d"}', {"a": "\ud83d"}),  # half an emoji
    ],
)
def test_ambiguous_repairs_are_rejected(chunk: str, value: Any) -> None:
    assert check(chunk, value) is None


def test_the_check_names_what_the_text_stopped_inside() -> None:
    value = {"a": {"b": ["c"]}}
    repair = check('{"a": {"b": ["c"]', value)
    assert repair is not None
    assert holds_closed(value["a"], repair)  # "a" was closed by the repair: maybe cut
    assert not holds_closed(value["a"]["b"], repair)  # the model closed ["c"] itself


def test_the_plan_loaders_read_a_stopped_reply() -> None:
    # What plan/brain.py and plan/draft.py use: scan_spans finds, the loaders read.
    from localhand.parsing.json_load import load_at, loads_lenient
    from localhand.parsing.json_scan import scan_spans

    text = 'Fix: {"steps": ["make"'
    span = scan_spans(text)[0]
    loaded = load_at(text, span)
    assert loaded is not None and loaded.value == {"steps": ["make"]}
    assert loads_lenient("{'a': 1}") == (True, {"a": 1})
    assert loads_lenient('{"a": "cut') == (False, None)


# Properties ----------------------------------------------------------------------------------

_ANY_TOOL = [{"type": "function", "function": {"name": "do_it", "parameters": {"type": "object"}}}]
# No backslashes in generated text (escapes make the oracle below ambiguous); quotes, brackets
# and commas in plenty, so mutations create the tricky cases.
_piece = st.text(alphabet="ab c\"'{}[]:,n1-", max_size=6)
_values = st.recursive(
    st.one_of(_piece, st.integers(-50, 500), st.booleans(), st.none()),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("xyz"), inner),
    max_leaves=6,
)
_mutation = st.tuples(
    st.sampled_from(["delete", "cut_slice", "insert", "truncate"]),
    st.floats(0, 1, exclude_max=True),
    st.integers(1, 8),
    st.sampled_from(list(",:{}[]\"' \\x")),
)


def _mutate(text: str, mutations: list[tuple[str, float, int, str]]) -> str:
    for kind, where, width, char in mutations:
        if not text:
            break
        i = int(where * len(text))
        if kind == "delete":
            text = text[:i] + text[i + 1 :]
        elif kind == "cut_slice":
            text = text[:i] + text[i + width :]
        elif kind == "insert":
            text = text[:i] + char + text[i:]
        else:
            text = text[:i]
    return text


_NAMED_ESCAPES = {"\a": "a", "\b": "b", "\f": "f", "\n": "n", "\r": "r", "\t": "t", "\v": "v"}


def _char_pattern(char: str) -> str:
    """The ways a character can be written in a JSON or Python string (itself, or escaped)."""
    forms = {re.escape(char), re.escape(json.dumps(char)[1:-1]), re.escape(repr(char)[1:-1])}
    if char in "\"'":
        forms.add(r"\\?" + re.escape(char))
    if char in _NAMED_ESCAPES:
        forms.add(r"\\" + _NAMED_ESCAPES[char])
    if ord(char) < 8:
        forms.add(r"\\0*" + oct(ord(char))[2:])
    return "(?:" + "|".join(sorted(forms)) + ")"


def _written(kind: str, value: Any, text: str) -> bool:
    """Whether ``value`` appears in ``text`` as a token of its own: a quoted string (each
    character as itself or escaped), a bare key, a number or a literal."""
    if isinstance(value, str):
        pattern = "[\"']" + "".join(_char_pattern(c) for c in value) + "[\"']"
        if kind == "key":
            pattern += r"|(?<![\w\"'])" + re.escape(value) + r"\s*:"
        return re.search(pattern, text) is not None
    if isinstance(value, bool) or value is None:
        return json.dumps(value) in text or repr(value) in text
    return str(value) in text or json.dumps(value) in text


def _leaves(value: Any, out: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        for key, inner in value.items():
            out.append(("key", key))
            _leaves(inner, out)
    elif isinstance(value, list):
        for inner in value:
            _leaves(inner, out)
    else:
        out.append(("value", value))
    return out


@SLOW_ENOUGH
@given(
    arguments=st.dictionaries(st.sampled_from(["p", "q", "r"]), _values, min_size=1),
    python=st.booleans(),
    carrier=st.sampled_from(["bare", "hermes", "hermes_unclosed", "fence", "native", "mistral"]),
    mutations=st.lists(_mutation, min_size=1, max_size=3),
)
def test_a_repair_never_invents_characters_or_fills_a_missing_value(
    arguments: dict[str, Any], python: bool, carrier: str, mutations: list[Any]
) -> None:
    call = {"name": "do_it", "arguments": arguments}
    if carrier in ("native", "mistral"):
        source = _mutate(json.dumps(arguments), mutations)
        message: dict[str, Any] = (
            {"content": "", "tool_calls": [{"function": {"name": "do_it", "arguments": source}}]}
            if carrier == "native"
            else {"content": "[TOOL_CALLS]do_it[ARGS]" + source}
        )
    else:
        source = _mutate(repr(call) if python else json.dumps(call), mutations)
        wrapped = {
            "bare": "{}",
            "hermes": "<tool_call>{}</tool_call>",
            "hermes_unclosed": "<tool_call>\n{}",
            "fence": "```json\n{}\n```",
        }[carrier]
        message = {"content": wrapped.replace("{}", source)}
    reply = parse_tool_calls(message, _ANY_TOOL)
    for found in reply.calls:
        for kind, value in _leaves(found.arguments, []):
            assert _written(kind, value, source), (source, found.arguments, value)


def _prefix_check(name: str, arguments: dict[str, Any], reply: Any) -> None:
    for found in reply.calls:
        assert found.name == name, reply
        for key, value in found.arguments.items():
            # Every argument the call carries is one the text wrote in full.
            assert key in arguments and arguments[key] == value, (key, value, reply)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), format_name=st.sampled_from(sorted(RENDERERS)))
def test_deleting_a_suffix_never_changes_an_argument(data: st.DataObject, format_name: str) -> None:
    # Markup formats carry plain text (their delimiters cannot appear in values); JSON
    # carriers any text, including other formats' markers.
    text = st.one_of(plain_text, tricky_text) if format_name in JSON_CARRIERS else plain_text
    name, arguments = data.draw(calls(text))
    message = RENDERERS[format_name](name, arguments)
    tools = tools_for(name)
    if message.get("tool_calls"):
        function = message["tool_calls"][0]["function"]
        rendered = function["arguments"]
        if not isinstance(rendered, str):
            rendered = json.dumps(rendered)
        for cut in range(len(rendered)):
            function["arguments"] = rendered[:cut]
            _prefix_check(name, arguments, parse_tool_calls(message, tools))
        return
    content = message["content"]
    for cut in range(len(content)):
        _prefix_check(name, arguments, parse_tool_calls({"content": content[:cut]}, tools))


@SLOW_ENOUGH
@given(
    call=calls(st.one_of(plain_text, tricky_text)),
    where=st.floats(0, 1, exclude_max=True),
    closer=st.sampled_from(["", "</tool_call>", "\n</tool_call>", "\n```"]),
)
def test_a_closer_written_after_a_cut_does_not_complete_it(
    call: tuple[str, dict[str, Any]], where: float, closer: str
) -> None:
    # The model stopped mid-call, then wrote a closing tag or fence: still no guessing.
    name, arguments = call
    body = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
    cut = body[: int(where * len(body))]
    for content in (f"<tool_call>{cut}{closer}", f"```json\n{cut}{closer}", cut + closer):
        _prefix_check(name, arguments, parse_tool_calls({"content": content}, tools_for(name)))


@SLOW_ENOUGH
@given(**CUT_CALLS)
def test_a_call_cut_by_the_length_limit_never_runs(
    call: tuple[str, dict[str, Any]], where: float, format_name: str
) -> None:
    name, arguments, cut = rendering(call, format_name, where)
    reply = parse_tool_calls({"content": cut}, tools_for(name), done_reason="length")
    # Only a call the text holds whole may run (the cut took its closing tag, say).
    assert [(c.name, c.arguments) for c in reply.calls] in ([], [(name, arguments)])


def test_corpus_has_repair_cases() -> None:
    corpus = Path(__file__).parents[1] / "parser_corpus" / "repairs.jsonl"
    cases = [json.loads(line) for line in corpus.read_text(encoding="utf-8").splitlines()]
    assert len(cases) >= 40
    assert sum(case["expect"].get("malformed", False) for case in cases) >= 25

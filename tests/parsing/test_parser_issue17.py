"""Property tests for issue 17: an unclosed thought that ends in a call makes it, a call cut
by the length limit is never a final answer, prose that mentions call markup comes back whole.
The cases taken from upstream parsers' fixtures are in ``parser_corpus/issue17_*.jsonl``."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from localhand.parsing import parse_tool_calls
from localhand.parsing.formats import TAGS, Tag
from test_parser_properties import (
    CUT_CALLS,
    FAST,
    TOOLS,
    _content,
    calls,
    rendering,
    tools_for,
)

# Issue 17 ------------------------------------------------------------------------------------

MARKUP_CARRIERS = ["hermes", "qwen3_coder", "glm", "mistral_v11", "gemma4", "kimi_k2", "minimax"]


@FAST
@given(call=calls(), format_name=st.sampled_from(MARKUP_CARRIERS))
def test_an_unclosed_thought_that_ends_in_a_call_makes_it(
    call: tuple[str, dict[str, Any]], format_name: str
) -> None:
    name, arguments, rendered = rendering(call, format_name)
    reply = parse_tool_calls(_content(f"<think>Let me call it. {rendered}"), tools_for(name))
    assert [(c.name, c.arguments) for c in reply.calls] == [(name, arguments)], reply
    assert reply.thinking == "Let me call it."
    # Followed by </think>, the same call stays deliberation.
    closed = parse_tool_calls(
        _content(f"<think>Let me call it. {rendered}</think>"), tools_for(name)
    )
    assert closed.calls == () and closed.only_thinking_calls


# Where each rendering's call markup is far enough along that its start can be recognised.
_CALL_STARTS = {"json_fence": len("Calling it.\n```js")}


@FAST
@given(**CUT_CALLS)
def test_a_call_cut_by_the_length_limit_is_never_a_final_answer(
    call: tuple[str, dict[str, Any]], where: float, format_name: str
) -> None:
    name, _, cut = rendering(call, format_name, where)
    if len(cut.strip()) < _CALL_STARTS.get(format_name, 3):
        return
    reply = parse_tool_calls({"content": cut}, tools_for(name), done_reason="length")
    assert reply.calls or reply.type != "final_answer", (format_name, cut, reply)


_MARKERS = [
    "<tool_call>",
    "[TOOL_CALLS]",
    "<|tool_call>",
    "<|python_tag|>",
    "<minimax:tool_call>",
    "<TOOLCALL>",
    "<|tool_call_start|>",
    "<|tool_calls_section_begin|>",
    "✿FUNCTION✿",
    "<think>",
    "</think>",
]
_WORDS = st.sampled_from(["tags", "tokens", "markers", "then", "before", "with", "around", "and"])


@FAST
@given(
    marker=st.sampled_from(_MARKERS),
    quoted=st.booleans(),
    words=st.lists(_WORDS, min_size=1, max_size=5),
    subject=st.sampled_from(["Qwen wraps calls in", "Mistral prefixes calls with", "It writes"]),
)
def test_prose_that_mentions_markup_comes_back_whole(
    marker: str, quoted: bool, words: list[str], subject: str
) -> None:
    if marker == "</think>" and not quoted:
        return  # a bare </think> ends a thought the template opened: that is its job
    tick = "`" if quoted else ""
    text = f"{subject} {tick}{marker}{tick} {' '.join(words)}."
    reply = parse_tool_calls(_content(text), TOOLS)
    assert reply.type == "final_answer", (text, reply)
    assert reply.content == text


@pytest.mark.parametrize("tag", [t for t in TAGS if t.distinctive], ids=lambda t: t.source)
def test_a_call_cut_in_any_tag_the_parser_reads_is_never_a_final_answer(tag: Tag) -> None:
    # Every markup the parser reads is one the cut check knows, down to its first characters:
    # a reply cut at "<tool_u" must not end the run as if it were the answer.
    call = '{"name": "write_file", "arguments": {"path": "a.py", "c'
    for cut in (tag.opener[: max(4, len(tag.opener) - 3)], tag.opener, tag.opener + call):
        content = {"content": f"Writing it.\n{cut}"}
        reply = parse_tool_calls(content, tools_for("write_file"), done_reason="length")
        assert reply.calls == () and reply.type != "final_answer", (cut, reply)

"""The parser corpus: documented formats and rules, one JSON case per line.

Each case in ``tests/parser_corpus/*.jsonl`` has ``id``, ``doc`` (where the format is
documented, or the upstream test file or model card the reply was taken from), ``message`` (an
assistant message), ``tools`` (``"default"`` for ``tools.json``, another name for
``tools_<name>.json``, ``null``, or a list of definitions), optional ``done_reason`` and ``expect``:
``type`` and ``calls`` always; ``content``, ``thinking``, ``source``, ``truncated``,
``repaired`` (exact), ``malformed`` (bool: any snippet reported), ``rejected`` /
``thinking_calls`` (names) and ``only_thinking_calls`` when the case is about them.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from localhand.parsing import parse_tool_calls

CORPUS = Path(__file__).parents[1] / "parser_corpus"
TOOLS = json.loads((CORPUS / "tools.json").read_text())


def _tools(spec: Any) -> Any:
    if spec == "default":
        return TOOLS
    if isinstance(spec, str):
        return json.loads((CORPUS / f"tools_{spec}.json").read_text())
    return spec


def _cases() -> list[dict[str, Any]]:
    cases = []
    for path in sorted(CORPUS.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                cases.append(json.loads(line))
    return cases


CASES = _cases()


def test_corpus_is_large_and_ids_are_unique() -> None:
    ids = [case["id"] for case in CASES]
    assert len(ids) >= 100
    assert len(set(ids)) == len(ids)
    assert all(case["doc"] for case in CASES)


# Issue 17: what the parser got wrong on real replies, by class. Every case of these files was
# taken from a real source (an upstream parser's test fixture, a chat template, a model card or
# a reported issue), which its ``doc`` names.
ISSUE_17_CLASSES = ("prose", "formats", "leaks", "examples", "open_thought", "cutoff")


def test_every_issue_17_class_has_cases_from_named_sources() -> None:
    new = [case for case in CASES if case["id"].startswith("i17-")]
    assert len(new) >= 80
    assert all(case.get("class") in ISSUE_17_CLASSES for case in new)
    assert all(len(case["doc"]) > 20 for case in new)
    by_class = Counter(case["class"] for case in new)
    assert all(by_class[name] >= 5 for name in ISSUE_17_CLASSES), by_class


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_corpus_case(case: dict[str, Any]) -> None:
    tools = _tools(case["tools"])
    reply = parse_tool_calls(case["message"], tools, done_reason=case.get("done_reason"))
    expect = case["expect"]
    assert reply.type == expect["type"], reply
    got = [{"name": call.name, "arguments": call.arguments} for call in reply.calls]
    assert got == expect["calls"], reply
    for key in ("content", "thinking", "source", "truncated", "repaired", "only_thinking_calls"):
        if key in expect:
            assert getattr(reply, key) == expect[key], (key, reply)
    if "malformed" in expect:
        assert bool(reply.malformed) == expect["malformed"], reply
    if "rejected" in expect:
        assert [call.name for call in reply.rejected_calls] == expect["rejected"], reply
    if "thinking_calls" in expect:
        assert [call.name for call in reply.thinking_calls] == expect["thinking_calls"], reply

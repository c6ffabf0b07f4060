"""What the task's own words make the run's work among the check's files, read narrowly.

A task that asks for new tests ("add a test for it in tests/test_calc.py") makes the test files
named in that sentence the work asked for: the model may write them. Nothing else it says
widens that: a test file named in another sentence, or named as what must pass ("Fix calc.py
so test_calc.py passes, then add a test in test_multiply.py"; "make tests/test_api.py pass"),
stays the check's, whatever else the task asks.
"""

from __future__ import annotations

import os
import re

from localhand.evidence.checkfiles import TEST_NAME

_ASKS_FOR_TESTS = re.compile(
    r"\b(?:add|write|create|extend|cover)\b[^;]*?\b(?:unit ?)?tests?\b", re.IGNORECASE
)
_SENTENCE_END = re.compile(r"[.!?](?:\s+|$)|[;\n]+")
_NAMED_FILE = re.compile(r"[\w./-]+\.\w+")
_MUST_PASS = re.compile(
    # "so (that) X passes", "make X pass", "until X pass", "ensure X still passes"
    r"\b(?:so|make|makes|making|until|get|getting|ensure|ensuring|keep|keeping)\b"
    r"((?:[^.;,!?]|\.(?=\w))*?)\b(?:pass(?:es|ing)?|succeeds?|green)\b"
    # "X must (still) pass", "X should pass", "X needs to pass"
    r"|([\w./-]+\.\w+)\s+(?:must|should|needs? to|has to|have to)\s+(?:still\s+)?pass",
    re.IGNORECASE,
)


def written_tests(task: str) -> frozenset[str]:
    """The test files ``task`` names in a sentence that asks for tests to be written ("Add a
    unittest test for it in test_mathutil.py"), but not as what must pass. A task that only
    names a test ("Make test_api.py pass", "Fix the failing test in test_math.py") asks for
    none, so its tests stay the check's."""
    asked: set[str] = set()
    for sentence in _SENTENCE_END.split(task):
        if _ASKS_FOR_TESTS.search(sentence):
            asked.update(_named(sentence))
    for must in _MUST_PASS.finditer(task):
        asked.difference_update(_named(must.group(1) or must.group(2) or ""))
    return frozenset(n for n in asked if TEST_NAME.match(os.path.basename(n)))


def _named(text: str) -> set[str]:
    found = (m.group().rstrip(".") for m in _NAMED_FILE.finditer(text))
    return {os.path.normpath(n.removeprefix("./")) for n in found}


__all__ = ["written_tests"]

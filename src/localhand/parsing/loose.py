"""Loose call formats: a fenced block, a pythonic list, a bare call, ReAct ``Action:`` lines.

They look like ordinary text, so only calls naming an offered tool count (the parser checks
names); they claim a malformed call only for ``Action:`` naming an offered tool whose
``Action Input:`` is broken JSON.

A fence in a programming language (```python, ```bash, ```js...) holds example code: a
call-shaped dict or call markup inside it is code, not a call. Small models do put their real
call in a fence, but in a ```json (or unlabelled, or ```tool_code) one; and a ```python fence
that holds nothing but pythonic calls of offered tools is still read as those calls."""

from __future__ import annotations

import bisect

from localhand.parsing.extract import (
    FENCE,
    PYTHONIC,
    Finder,
    Hit,
    Scan,
    cut_calls,
    marker_hits,
    snippet,
)
from localhand.parsing.json_load import loads_lenient, read_lenient
from localhand.parsing.json_scan import skip_space
from localhand.parsing.mention import at_line_start
from localhand.parsing.pythonic import parse_pythonic, starts_like_call
from localhand.parsing.shapes import RawCall, final_answer_of, interpret

CODE_LANGUAGES = frozenset(
    """python py python3 py3 ipython pycon javascript js jsx mjs typescript ts tsx java go golang
    rust rs c h cpp c++ cc cxx hpp csharp cs c# ruby rb php swift kotlin kt scala bash sh shell
    zsh fish console shell-session powershell ps1 pwsh bat cmd sql html xml xhtml jinja jinja2
    j2 lua perl pl r dart elixir ex haskell hs julia matlab makefile make dockerfile diff
    """.split()
)
_PYTHONIC_LANGUAGES = frozenset("python py python3 py3 ipython".split())


def fence_hits(scan: Scan) -> list[Hit]:
    """Markdown code fences whose whole body is a call: ```json {...}```, ```tool_code f()```.
    Fences in a programming language are recorded in ``scan.examples``."""
    text = scan.text

    def read(pos: int, ticks: Finder) -> tuple[Hit | None, int]:
        line_end = text.find("\n", pos + 3, pos + 64)
        lang = text[pos + 3 : line_end].strip().lower() if line_end >= 0 else ""
        body_start = line_end + 1 if line_end >= 0 and " " not in lang else pos + 3
        close = ticks.find(body_start)
        body_end = close if close >= 0 else len(text)
        end = close + 3 if close >= 0 else len(text)
        body = text[body_start:body_end]
        code = (lang.split() or [""])[0] in CODE_LANGUAGES
        if code and close >= 0 and at_line_start(text, pos):
            # Only a fence written as one (on its own line, and closed) holds example code: a
            # ``` inside a JSON string value must not hide the calls after it.
            scan.examples.append((pos, end))
        worth_it = scan.markers.within(body_start, body_end) or starts_like_call(text, body_start)
        if code and lang not in _PYTHONIC_LANGUAGES:
            worth_it = False
        calls = None
        if worth_it and scan.budget.attempt() and scan.budget.lenient(len(body)):
            calls = _body_calls(scan, body, lang, body_start, body_end)
            if calls and code and not calls[1]:
                calls = None  # a call-shaped dict in a ```python block is example code
        if not calls:
            return None, end
        source = "pythonic" if calls[1] else "json_fence"
        incomplete = close < 0
        return Hit(
            pos, end, source, calls[0], priority=FENCE, incomplete=incomplete, repaired=calls[2]
        ), end

    return marker_hits(scan, "```", read)


def outside_examples(hits: list[Hit], examples: list[tuple[int, int]]) -> list[Hit]:
    """``hits`` without those that start inside an example (a code fence, or call markup quoted
    as inline code); the fence's own hit, which starts at its backticks, stays."""
    if not examples:
        return hits
    examples = sorted(examples)
    starts = [start for start, _ in examples]
    kept: list[Hit] = []
    for hit in hits:
        at = bisect.bisect_right(starts, hit.start) - 1
        if at >= 0 and starts[at] < hit.start < examples[at][1]:
            continue
        kept.append(hit)
    return kept


def _body_calls(
    scan: Scan, body: str, lang: str, body_start: int, body_end: int
) -> tuple[list[RawCall], bool, bool] | None:
    """(calls, pythonic, repaired) for a fence body that is nothing but calls."""
    stripped = body.strip()
    if not stripped:
        return None
    if stripped[0] in "{[" and scan.runs_past(
        skip_space(scan.text, body_start, body_end), body_end
    ):
        return None  # the closing ``` was inside a string: the JSON finder reads it whole
    if stripped[0] in "{[":
        loaded = read_lenient(stripped, allow_repair=scan.budget.repair)
        if loaded is not None:
            found = interpret(loaded.value, scan.index)
            if found:
                if cut_calls(found, loaded):
                    return None  # a call the fence stopped inside of: the JSON finder reports it
                return found, False, loaded.how != "json"
            if scan.final_answer is None:
                scan.final_answer = final_answer_of(loaded.value)
    if starts_like_call(stripped, 0) or stripped[0] == "[":
        pythonic = parse_pythonic(stripped)
        if pythonic:
            return pythonic, True, False
    return None


def pythonic_hits(scan: Scan) -> list[Hit]:
    """``[name(a=1), other(b="x")]`` lists anywhere in the text (Llama 3.2/4 style)."""
    text = scan.text
    hits: list[Hit] = []
    cursor = 0
    for span in scan.spans():
        if span.start < cursor or text[span.start] != "[" or not span.closed:
            continue
        if not starts_like_call(text, span.start + 1) or not scan.budget.attempt():
            continue
        if not scan.budget.lenient(span.end - span.start):
            break
        calls = parse_pythonic(text[span.start : span.end])
        if calls:
            scan.keep(hits, Hit(span.start, span.end, "pythonic", calls, priority=PYTHONIC))
            cursor = span.end
    return hits


def whole_pythonic(scan: Scan, text: str) -> list[RawCall] | None:
    """The whole reply written as bare calls: ``read_file(path="a.py")``."""
    stripped = text.strip()
    if not stripped or not starts_like_call(stripped, 0):
        return None
    if not scan.budget.lenient(len(stripped)):
        return None
    return parse_pythonic(stripped)


def react_hits(scan: Scan) -> list[Hit]:
    """LangChain/ReAct prompts: ``Action: read_file`` then ``Action Input: {"path": "a"}``."""
    text = scan.text
    inputs = Finder(text, "Action Input:")
    observations = Finder(text, "Observation:")

    def read(pos: int, actions: Finder) -> tuple[Hit | None, int]:
        line_end = text.find("\n", pos, pos + 200)
        if line_end < 0:
            return None, len(text)
        name = text[pos + len("Action:") : line_end].strip().strip("`*'\"")
        at = inputs.find(line_end)
        if at < 0 or text[line_end:at].strip():
            return None, line_end
        value_start = at + len("Action Input:")
        # The input ends at the observation or the next action, whichever comes first.
        end = min(
            (p for p in (observations.find(value_start), actions.find(value_start)) if p >= 0),
            default=len(text),
        )
        raw = text[value_start:end].strip().strip("`")
        if raw.startswith("json"):
            raw = raw[4:]
        call = _react_call(scan, name, raw)
        if call is _BROKEN:
            # An offered tool's input written as JSON that does not load: a failed call.
            return Hit(pos, end, "react", priority=FENCE, malformed=snippet(text, pos, end)), end
        if call is not None:
            return Hit(pos, end, "react", [call], priority=FENCE), end
        return None, end

    return marker_hits(scan, "Action:", read)


_BROKEN = RawCall("", None)


def _react_call(scan: Scan, name: str, raw: str) -> RawCall | None:
    # A loose format: only offered names count, so skip the parse for any other name.
    if not scan.index.resolve(name) or not scan.budget.attempt():
        return None
    if not scan.budget.lenient(len(raw)):
        return None
    # An object is the arguments (it may be closed if the reply stopped after a complete
    # value); anything else is one parameter's value, which must be whole.
    closable = 1 if raw.startswith("{") else 0
    ok, value = loads_lenient(raw, allow_repair=scan.budget.repair, may_close=closable)
    if ok and isinstance(value, dict):
        return RawCall(name, value)
    if not ok and raw.startswith(("{", "[")):
        return _BROKEN  # broken JSON is not a bare value: never read '{"path": "a.' as a path
    resolved = scan.index.resolve(name)
    schema = scan.index.schema(resolved) if resolved else {}
    props = scan.index.property_names(resolved) if resolved else []
    required = schema.get("required")
    only = props if len(props) == 1 else required if isinstance(required, list) else []
    if len(only) == 1 and isinstance(only[0], str) and raw:
        # A tool with one (required) parameter given its value bare: "Action Input: a.py".
        return RawCall(name, {only[0]: value if ok else raw.strip("'\"")})
    return None

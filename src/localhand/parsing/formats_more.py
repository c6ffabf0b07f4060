"""Call syntaxes of further model families, as their chat templates and parsers define them.

- DeepSeek V3 / R1: ``<｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME`` then the arguments in
  a ```json fence, then ``<｜tool▁call▁end｜>``; DeepSeek V3.1:
  ``<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{...}<｜tool▁call▁end｜>`` (llama.cpp's
  ``deepseek_v3_1`` chat parser, vLLM ``deepseek_v3``/``deepseek_v31``).
- Kimi K2: ``<|tool_call_begin|>functions.NAME:0<|tool_call_argument_begin|>{...}<|tool_call_end|>``
  (vLLM ``kimi_k2`` parser, the K2 model card).
- FunctionGemma: ``<start_function_call>call:NAME{key:<escape>text<escape>}<end_function_call>``
  (ai.google.dev FunctionGemma formatting guide); Gemma 4:
  ``<|tool_call>call:NAME{key:<|"|>text<|"|>,n:3}<tool_call|>`` (its chat template). Keys are
  bare, strings sit between delimiter tokens.
- gpt-oss (harmony): ``<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>``
  then the JSON arguments and ``<|call|>`` (the openai-harmony format guide).
- Mistral ``[TOOL_CALLS]``: a JSON list (v3 tokenizer: Mistral 7B v0.3, Nemo, Small 3.0),
  ``NAME[ARGS]{json}`` / ``NAME[CALL_ID]id[ARGS]{json}`` (v11+: Small 3.1/3.2, Devstral,
  Magistral, Ministral 3) or ``NAME{json}`` (v11 tokenizer as vLLM's mistral parser tests
  decode it, ``[TOOL_CALLS]add{"a": 3.5}[TOOL_CALLS]multiply{...}``), as ``mistral-common``
  tokenizes them. Prose that names the marker ("prefixes calls with [TOOL_CALLS]") is text.
"""

from __future__ import annotations

import json
from typing import Any

from localhand.parsing.extract import (
    MARKUP,
    Finder,
    Hit,
    Scan,
    arguments_of,
    json_hits,
    marker_hits,
    snippet,
    value_at,
)
from localhand.parsing.json_scan import skip_space, string_end
from localhand.parsing.mention import (
    failed_mention,
    in_inline_code,
    inline_code_end,
    mid_line,
    name_end,
)
from localhand.parsing.shapes import RawCall
from localhand.parsing.xml_args import Body

DEEPSEEK_SEPS = ("<｜tool▁sep｜>", "<|tool▁sep|>", "<|tool_sep|>")
KIMI_ARGS = "<|tool_call_argument_begin|>"
GEMMA_QUOTES = ("<escape>", '<|"|>')
_MAX_DEPTH = 64


def deepseek_call(scan: Scan, at: int, stop: int, sep_at: int, sep: str) -> Body:
    """The body of one DeepSeek ``tool▁call`` block (V3 and V3.1 layouts)."""
    text = scan.text
    head = text[at:sep_at].strip()
    rest = sep_at + len(sep)
    if head == "function":
        # V3: the name is the first line after the separator, the arguments a ```json fence.
        line_end = text.find("\n", rest, stop)
        name = text[rest : line_end if line_end >= 0 else stop].strip()
        brace = text.find("{", rest, stop)
    else:
        name, brace = head, text.find("{", rest, stop)
    if not name or brace < 0:
        return Body(end=stop, malformed=True)
    loaded, closed = value_at(scan, brace, stop)
    arguments = arguments_of(loaded)
    if loaded is None or arguments is None:
        return Body(end=stop, incomplete=not closed, malformed=True)
    return Body([RawCall(name, arguments)], stop, incomplete=not closed)


def kimi_call(scan: Scan, at: int, stop: int, args_at: int) -> Body:
    """``functions.NAME:IDX<|tool_call_argument_begin|>{...}``."""
    text = scan.text
    name = text[at:args_at].strip()
    if name.startswith("functions."):
        name = name[len("functions.") :]
    index_at = name.rfind(":")
    if index_at > 0 and name[index_at + 1 :].isdigit():
        name = name[:index_at]
    loaded, closed = value_at(scan, args_at + len(KIMI_ARGS), stop)
    arguments = arguments_of(loaded)
    if not name or loaded is None or arguments is None:
        return Body(end=stop, incomplete=not closed, malformed=True)
    return Body([RawCall(name, arguments)], loaded.end, incomplete=not closed)


class _KeyValue:
    """Gemma's ``{key:value,...}`` argument syntax: bare keys, strings between a delimiter token
    (``<escape>`` or ``<|"|>``), JSON-like numbers, booleans, lists and nested objects.
    Recursive descent with a depth limit; every character is read once."""

    def __init__(self, text: str, stop: int, quote: str) -> None:
        self.text, self.stop, self.quote = text, stop, quote

    def value(self, i: int, depth: int) -> tuple[Any, int]:
        text, quote = self.text, self.quote
        i = skip_space(text, i, self.stop)
        if depth > _MAX_DEPTH or i >= self.stop:
            raise ValueError("too deep or cut off")
        if text.startswith(quote, i):
            close = text.find(quote, i + len(quote), self.stop)
            if close < 0:
                raise ValueError("unclosed string")
            return text[i + len(quote) : close], close + len(quote)
        char = text[i]
        if char == '"':
            end = string_end(text, i, self.stop)
            if end is None:
                raise ValueError("unclosed string")
            return json.loads(text[i:end], strict=False), end
        if char == "{":
            return self.obj(i, depth + 1)
        if char == "[":
            items: list[Any] = []
            i = skip_space(text, i + 1, self.stop)
            while i < self.stop and text[i] != "]":
                before = i
                item, i = self.value(i, depth + 1)
                items.append(item)
                i = skip_space(text, i, self.stop)
                if i < self.stop and text[i] == ",":
                    i += 1
                if i == before:
                    raise ValueError("stuck in a list")
            if i >= self.stop:
                raise ValueError("unclosed list")
            return items, i + 1
        end = i
        while end < self.stop and text[end] not in ",}]":
            end += 1
        token = text[i:end].strip()
        if not token:
            raise ValueError("missing value")  # {path:} is never read as ""
        try:
            return json.loads(token), end
        except ValueError:
            return token, end  # a bare word: keep it as text

    def obj(self, i: int, depth: int) -> tuple[dict[str, Any], int]:
        text = self.text
        out: dict[str, Any] = {}
        i += 1
        while True:
            i = skip_space(text, i, self.stop)
            if i >= self.stop:
                raise ValueError("unclosed object")
            if text[i] in ",]":
                raise ValueError("misplaced punctuation")
            if text[i] == "}":
                return out, i + 1
            if text.startswith(self.quote, i) or text[i] == '"':
                key, i = self.value(i, depth)
            else:
                colon = text.find(":", i, min(self.stop, i + 256))
                if colon < 0:
                    raise ValueError("no key")
                key, i = text[i:colon].strip(), colon
            i = skip_space(text, i, self.stop)
            if i >= self.stop or text[i] != ":":
                raise ValueError("no colon")
            out[str(key)], i = self.value(i + 1, depth)
            i = skip_space(text, i, self.stop)
            if i < self.stop and text[i] == ",":
                i += 1


def gemma_call(text: str, at: int, stop: int) -> Body:
    """``call:NAME{...}`` (FunctionGemma and Gemma 4 bodies)."""
    brace = text.find("{", at, min(stop, at + 300))
    name = text[at + len("call:") : brace].strip() if brace >= 0 else ""
    if not name:
        return Body(end=stop, malformed=True)
    parsed = gemma_arguments(text, brace, stop)
    if parsed is None:
        return Body(end=stop, incomplete=True, malformed=True)
    return Body([RawCall(name, parsed[0])], parsed[1])


def gemma_arguments(text: str, brace: int, stop: int) -> tuple[dict[str, Any], int] | None:
    """The ``{key:value,...}`` at ``brace`` and its end, or None; strings are delimited by
    whichever of ``GEMMA_QUOTES`` comes first after the brace (a call's first string is near)."""
    window = text[brace : min(stop, brace + 4096)]
    found = [(at, quote) for quote in GEMMA_QUOTES if (at := window.find(quote)) >= 0]
    try:
        return _KeyValue(text, stop, min(found)[1] if found else GEMMA_QUOTES[0]).obj(brace, 0)
    except (ValueError, RecursionError):
        return None


def harmony_hits(scan: Scan) -> list[Hit]:
    """gpt-oss calls: a message addressed ``to=functions.NAME`` whose body is the JSON."""
    text = scan.text
    marker = "to=functions."
    messages = Finder(text, "<|message|>")

    def read(pos: int, recipients: Finder) -> tuple[Hit | None, int]:
        name_start = pos + len(marker)
        end_of_name = name_end(text, name_start, len(text))
        body = messages.find(end_of_name)
        if body < 0 or body - end_of_name > 200:
            nxt = recipients.find(end_of_name)
            if body < 0 and nxt < 0 and scan.truncated and len(text) - end_of_name < 200:
                # "to=functions.NAME <|constr": the length limit cut the call's header.
                start = _frame_start(text, pos)
                cut = Hit(start, len(text), "harmony", strict=True, priority=MARKUP)
                cut.malformed, cut.incomplete = snippet(text, start, len(text)), True
                return cut, end_of_name
            return None, end_of_name
        # The arguments end at <|call|> or, at the latest, where the next recipient begins.
        following = recipients.find(body)
        stop = following if following >= 0 else len(text)
        loaded, closed = value_at(scan, body + len("<|message|>"), stop)
        start = _frame_start(text, pos)
        name = text[name_start:end_of_name]
        arguments = arguments_of(loaded)
        if loaded is None or arguments is None or not name:
            calls: list[RawCall] = []
            end = stop if not closed else body + len("<|message|>")
        else:
            calls = [RawCall(name, arguments)]
            end = loaded.end
            after = skip_space(text, end, len(text))
            if text.startswith("<|call|>", after):
                end = after + len("<|call|>")
        hit = Hit(start, end, "harmony", calls, strict=True, priority=MARKUP, incomplete=not closed)
        if not calls:
            hit.malformed = snippet(text, start, end)
        return hit, end

    return marker_hits(scan, marker, read)


def _frame_start(text: str, pos: int) -> int:
    # Remove the whole "<|start|>assistant<|channel|>commentary to=..." frame from the content.
    window = max(0, pos - 64)
    for token in ("<|start|>", "<|channel|>"):
        found = text.rfind(token, window, pos)
        if found >= 0:
            return found
    return pos


def _args_start(text: str, cursor: int, stop: int, args_tags: Finder) -> tuple[str, int] | None:
    """(name, where its JSON arguments start) for ``NAME[ARGS]{``, ``NAME[CALL_ID]id[ARGS]{``
    or ``NAME{`` at ``cursor``; None when that is not what follows."""
    end = name_end(text, cursor, stop, most=256, chars="_-.:")
    if end == cursor:
        return None
    name = text[cursor:end]
    after = skip_space(text, end, stop)
    if text.startswith("[CALL_ID]", after):
        args_at = args_tags.find(after)
        if args_at < 0 or args_at >= stop or args_at - after > 128:
            return None
        return name, args_at + len("[ARGS]")
    if text.startswith("[ARGS]", after):
        return name, after + len("[ARGS]")
    if after < stop and text[after] == "{":
        return name, after
    return None


def mistral_hits(scan: Scan) -> list[Hit]:
    """Mistral ``[TOOL_CALLS]``: a JSON list, or ``NAME[ARGS]{json}`` / ``NAME{json}`` calls
    (see the module docstring)."""
    text = scan.text
    marker = "[TOOL_CALLS]"
    args_tags = Finder(text, "[ARGS]")

    def read(pos: int, markers: Finder) -> tuple[Hit | None, int]:
        at = skip_space(text, pos + len(marker), len(text))
        nxt = markers.find(at)
        stop = nxt if nxt >= 0 else len(text)
        calls: list[RawCall] = []
        incomplete = repaired = False
        end = stop
        if in_inline_code(text, pos):
            scan.budget.attempt()
            scan.examples.append((pos, inline_code_end(text, pos)))  # its JSON is quoted too
            return None, at
        if at < stop and text[at] in "[{":
            found = json_hits(scan, at, stop, source="mistral", strict=True, priority=MARKUP)
            broken = any(h.malformed is not None for h in found)
            calls = [] if broken else [c for h in found for c in h.calls]
            incomplete = any(h.incomplete for h in found)
            repaired = any(h.repaired for h in found)
            end = max((h.end for h in found), default=stop)
        else:
            start = _args_start(text, at, stop, args_tags) if at < stop else None
            past_name = at < stop and name_end(text, at, stop, most=256, chars="_-.:") < stop
            if start is None and past_name and mid_line(text, pos):
                scan.budget.attempt()
                return None, at  # "Mistral prefixes calls with [TOOL_CALLS] followed by...": prose
            cursor = at
            while cursor < stop:
                if cursor != at:
                    start = _args_start(text, cursor, stop, args_tags)
                if start is None:
                    incomplete = incomplete or not calls
                    break
                name, args_at = start
                loaded, closed = value_at(scan, args_at, stop)
                arguments = arguments_of(loaded)
                if loaded is None or arguments is None:
                    incomplete = incomplete or not closed
                    calls = []  # one broken call makes the whole turn malformed
                    break
                calls.append(RawCall(name, arguments))
                repaired = repaired or loaded.how != "json"
                incomplete = incomplete or not closed
                end = cursor = skip_space(text, loaded.end, stop)
        if not calls and failed_mention(scan, pos, at, stop):
            scan.budget.attempt()
            return None, at  # "[TOOL_CALLS]{...}" in prose naming no tool
        hit = Hit(
            pos,
            end,
            "mistral",
            calls,
            strict=True,
            priority=MARKUP,
            incomplete=incomplete,
            repaired=repaired,
            malformed=None if calls else snippet(text, pos, stop),
        )
        return hit, max(end, at)  # a marker inside a string value is text

    return marker_hits(scan, marker, read)

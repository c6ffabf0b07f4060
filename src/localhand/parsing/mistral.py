"""Mistral ``[TOOL_CALLS]``: a JSON list (v3 tokenizer: Mistral 7B v0.3, Nemo, Small 3.0),
``NAME[ARGS]{json}`` / ``NAME[CALL_ID]id[ARGS]{json}`` (v11+: Small 3.1/3.2, Devstral,
Magistral, Ministral 3) or ``NAME{json}`` (v11 tokenizer as vLLM's mistral parser tests
decode it, ``[TOOL_CALLS]add{"a": 3.5}[TOOL_CALLS]multiply{...}``), as ``mistral-common``
tokenizes them. Prose that names the marker ("prefixes calls with [TOOL_CALLS]") is text."""

from __future__ import annotations

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
from localhand.parsing.json_scan import skip_space
from localhand.parsing.mention import (
    failed_mention,
    in_inline_code,
    inline_code_end,
    mid_line,
    name_end,
)
from localhand.parsing.shapes import RawCall


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

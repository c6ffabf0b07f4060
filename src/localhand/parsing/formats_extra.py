"""Call syntaxes written without a wrapper tag.

- Gemma 4 sometimes leaves its thought channel (``<|channel>thought…<channel|>``) straight into
  ``call:NAME{…}`` without the ``<|tool_call>`` token, or writes a line ``call:NAME{…}``, or a
  fragmented ``<call>NAME{…}`` (vLLM's ``gemma4_utils`` fallback tier and its tests, vLLM issue
  54256). A bare call counts when it names an offered tool, or when Gemma's closing token
  (``<tool_call|>``, ``<turn|>``) follows it.
- Qwen-Agent's function-calling prompt (``qwen_agent/llm/fncall_prompts/qwen_fncall_prompt.py``):
  ``✿FUNCTION✿: NAME`` then ``✿ARGS✿: {json}``, one pair per call, ended by ``✿RESULT✿`` or
  ``✿RETURN✿`` (its stop words) or the next pair. Code for a one-parameter tool (Qwen-Agent's
  ``code_interpreter``) may come as a fenced block instead of JSON.
"""

from __future__ import annotations

from typing import Any

from localhand.parsing.extract import MARKUP, Finder, Hit, Scan, marker_hits, snippet
from localhand.parsing.formats_more import gemma_arguments
from localhand.parsing.mention import at_line_start, in_inline_code, mid_line, name_end
from localhand.parsing.shapes import RawCall, arguments_from, plausible_name

_GEMMA_CLOSERS = ("<tool_call|>", "<turn|>")


def gemma_bare_hits(scan: Scan) -> list[Hit]:
    """``call:NAME{…}`` at the start of a line (or of the reply) and ``<call>NAME{…}``."""
    text = scan.text
    hits: list[Hit] = []
    for opener in ("call:", "<call>"):

        def read(pos: int, finder: Finder, opener: str = opener) -> tuple[Hit | None, int]:
            nxt = finder.find(pos + len(opener))
            stop = nxt if nxt >= 0 else len(text)  # each parse ends where the next one begins
            name_at = pos + len(opener)
            end_of_name = name_end(text, name_at, stop)
            usable = (opener == "<call>" or at_line_start(text, pos)) and not in_inline_code(
                text, pos
            )
            if not usable or end_of_name == name_at or text[end_of_name : end_of_name + 1] != "{":
                scan.budget.attempt()
                return None, name_at
            scan.budget.attempt()
            parsed = gemma_arguments(text, end_of_name, stop)
            if parsed is None:
                return None, name_at
            arguments, end = parsed
            closer = next((c for c in _GEMMA_CLOSERS if text.startswith(c, end)), "")
            call = RawCall(text[name_at:end_of_name], arguments)
            strict = bool(closer) or opener == "<call>"
            hit = Hit(pos, end + len(closer), "gemma4", [call], strict=strict, priority=MARKUP)
            return hit, hit.end if nxt >= 0 and nxt < hit.end else name_at

        hits.extend(marker_hits(scan, opener, read))
    return hits


FUNCTION, ARGS = "✿FUNCTION✿", "✿ARGS✿"
_STOP_WORDS = ("✿RESULT✿", "✿RETURN✿")


def _after_colon(text: str, at: int, stop: int) -> int:
    while at < stop and text[at] in " \t":
        at += 1
    if at < stop and text[at] in ":：":
        at += 1
    while at < stop and text[at] in " \t":
        at += 1
    return at


def _qwen_agent_arguments(scan: Scan, name: str, raw: str) -> dict[str, Any] | None:
    raw = raw.strip()
    if raw.startswith("{"):
        # Qwen-Agent drops a trailing comment after the object ("{...} <!-- note -->").
        raw = raw[: raw.rfind("}") + 1]
        return arguments_from(raw, scan.index.repair_gate)
    if raw.startswith("```"):
        lines = raw.split("\n")
        code = "\n".join(lines[1:-1] if lines[-1].strip() == "```" else lines[1:])
        resolved = scan.index.resolve(name)
        props = scan.index.property_names(resolved) if resolved else []
        return {props[0]: code} if len(props) == 1 else None
    return {} if not raw else arguments_from(raw, scan.index.repair_gate)


def qwen_agent_hits(scan: Scan) -> list[Hit]:
    """``✿FUNCTION✿: NAME`` / ``✿ARGS✿: {…}`` pairs (see the module docstring)."""
    text = scan.text
    flowers = Finder(text, "✿")

    def read(pos: int, _: Finder) -> tuple[Hit | None, int]:
        calls: list[RawCall] = []
        broken = incomplete = False
        cursor = pos
        while text.startswith(FUNCTION, cursor):
            at = _after_colon(text, cursor + len(FUNCTION), len(text))
            line_end = text.find("\n", at, at + 256)
            mark = flowers.find(at)
            name_stop = min(p for p in (line_end, mark, len(text)) if p >= 0)
            name = text[at:name_stop].strip()
            if not plausible_name(name) or name_stop >= len(text):
                broken = True  # no name, or the reply stopped in it
                cursor = name_stop
                break
            after = name_stop
            while after < len(text) and text[after] in " \t\r\n":
                after += 1
            raw = ""
            incomplete = after >= len(text)  # the reply ended before the arguments
            if text.startswith(ARGS, after):
                args_at = _after_colon(text, after + len(ARGS), len(text))
                mark = flowers.find(args_at)
                after = mark if mark >= 0 else len(text)
                raw = text[args_at:after]
                incomplete = mark < 0  # nothing ended the arguments but the reply
            arguments = _qwen_agent_arguments(scan, name, raw)
            if arguments is None:
                broken = True
                cursor = after
                break
            calls.append(RawCall(name, arguments))
            cursor = after
        end = max(cursor, pos + len(FUNCTION))
        if calls and not broken and text.startswith(_STOP_WORDS, end):
            # The server did not stop at ✿RESULT✿: what follows is the model imagining the
            # tool's answer, which Qwen-Agent discards too.
            end = len(text)
        if broken and (in_inline_code(text, pos) or mid_line(text, pos)):
            scan.budget.attempt()
            return None, end  # "Qwen-Agent's ✿FUNCTION✿ style": prose
        hit = Hit(
            pos,
            end,
            "qwen_agent",
            [] if broken else calls,
            strict=True,
            priority=MARKUP,
            incomplete=incomplete,
            malformed=snippet(text, pos, end) if broken else None,
        )
        return hit, end

    return marker_hits(scan, FUNCTION, read)

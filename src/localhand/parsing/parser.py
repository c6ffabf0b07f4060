"""``parse_tool_calls``: one assistant message in, one ``ParsedReply`` out, never an exception.

Order of evidence: native ``tool_calls`` (the server already parsed them) beat anything in the
text. In the text every format finder reports what it sees (``formats``, ``formats_more``,
``formats_extra``, ``loose``, ``extract.json_hits``); finds inside example code
(``loose.outside_examples``) are dropped and overlapping finds are settled outermost-first (see
``_without_overlaps``). Calls in a model's own markup count even for unknown names; calls in
loose formats (bare JSON, fences, pythonic, ReAct, bare Gemma calls) only when they name an
offered tool; markup that prose only mentions is text (``mention``). Thinking is removed first;
calls found only in thinking are reported, never executed, unless an unclosed thought ends in
complete call markup (``_open_thought_calls``). A reply that tried to call and failed, or that
the length limit cut inside a call (``cutoff``), is ``empty`` with ``malformed`` set, never a
final answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from localhand.parsing import formats, formats_extra, formats_more
from localhand.parsing.cutoff import CALL_OPENERS, cut_call_at_end, unclosed_markup
from localhand.parsing.extract import SNIPPET_CHARS, Hit, Scan, json_hits, snippet
from localhand.parsing.loose import (
    fence_hits,
    outside_examples,
    pythonic_hits,
    react_hits,
    whole_pythonic,
)
from localhand.parsing.message import as_mapping, finish, native_calls, text_of
from localhand.parsing.reply import ParsedReply
from localhand.parsing.shapes import ToolIndex
from localhand.parsing.thinking import split_thinking_parts
from localhand.types import ToolCall

# End-of-turn and framing tokens that leak into content when a server does not strip them.
_LEAKED_TOKENS = (
    "<|im_end|>",
    "<|eot_id|>",
    "<|eom_id|>",
    "<|end|>",
    "<|endoftext|>",
    "<|end_of_text|>",
    "<end_of_turn>",
    "</s>",
    "<|return|>",
    "<|call|>",
    "<|END_RESPONSE|>",
    "<|START_RESPONSE|>",
    "<|start|>assistant",
    "<|channel|>final<|message|>",
    "<｜end▁of▁sentence｜>",
    # Section wrappers around per-call blocks (DeepSeek, Kimi K2).
    "<｜tool▁calls▁begin｜>",
    "<｜tool▁calls▁end｜>",
    "<|tool▁calls▁begin|>",
    "<|tool▁calls▁end|>",
    "<|tool_calls_section_begin|>",
    "<|tool_calls_section_end|>",
    # Gemma 4: a stray call closer, the tool-response opener after a call, the end of turn.
    "<tool_call|>",
    "<|tool_response>",
    "<turn|>",
)


_TOKEN_FIRSTS = frozenset(token[0] for token in _LEAKED_TOKENS)
_TOKEN_LASTS = frozenset(token[-1] for token in _LEAKED_TOKENS)

# Call blocks and the closers that end them, for a reply the length limit cut.
_BLOCKS = tuple((tag.opener, tag.closers) for tag in formats.TAGS if tag.closers)


@dataclass(slots=True)
class _Found:
    calls: list[ToolCall] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    rejected: list[ToolCall] = field(default_factory=list)
    malformed: list[str] = field(default_factory=list)
    remaining: str = ""
    final_answer: str | None = None
    repaired: bool = False


def _all_hits(scan: Scan) -> list[Hit]:
    hits: list[Hit] = []
    for finder in (
        formats.tag_hits,
        formats.function_hits,
        formats_more.mistral_hits,
        formats_more.harmony_hits,
        formats_extra.gemma_bare_hits,
        formats_extra.qwen_agent_hits,
        fence_hits,
        react_hits,
        json_hits,
        pythonic_hits,
    ):
        hits.extend(finder(scan))
    return hits


def _without_overlaps(hits: list[Hit]) -> list[Hit]:
    """Keep non-overlapping hits, outermost first: a ``<tool_call>`` block beats the JSON
    inside it, and a JSON call beats markup that only appears inside one of its string values
    (a file being written that mentions ``<tool_call>``). Priority breaks ties of equal spans;
    a hit that starts inside an accepted one is dropped."""
    ordered = sorted(hits, key=lambda h: (h.start, h.start - h.end, h.priority))
    accepted: list[Hit] = []
    last_end = -1
    for hit in ordered:
        if hit.start >= last_end:
            accepted.append(hit)
            last_end = hit.end
    return accepted


def _extract(text: str, index: ToolIndex, truncated: bool) -> _Found:
    found = _Found()
    if not text.strip():
        return found
    scan = Scan(text, index, truncated=truncated)
    hits = _all_hits(scan)
    if scan.examples:
        hits = outside_examples(hits, scan.examples)
    hits = _without_overlaps(hits)
    removed: list[tuple[int, int]] = []
    for hit in hits:
        if hit.malformed is not None:
            found.malformed.append(hit.malformed[:SNIPPET_CHARS])
            removed.append((hit.start, hit.end))
            continue
        if not hit.calls:
            continue  # a final-answer object; handled below
        if truncated and hit.incomplete:
            # Cut off by the length limit: never executed, whatever a repair would make of it.
            found.malformed.append(snippet(text, hit.start, hit.end))
            removed.append((hit.start, hit.end))
            continue
        accepted, rejected = _split_by_name(hit, index)
        found.rejected.extend(rejected)
        if not accepted:
            continue  # prose showing a JSON example: it stays text
        found.calls.extend(accepted)
        found.repaired = found.repaired or hit.repaired
        if hit.source not in found.sources:
            found.sources.append(hit.source)
        removed.append((hit.start, hit.end))
    if truncated or text.rstrip()[-1:] not in ("}", "]", ">", "`"):
        covered = max((hit.end for hit in hits), default=0)
        cut = cut_call_at_end(text, covered, truncated=truncated)
        if cut is not None:
            found.malformed.append(cut[:SNIPPET_CHARS])
    found.remaining = _cut(text, removed)
    if not found.calls:
        found.final_answer = scan.final_answer
        if not found.malformed and not found.rejected:
            bare = whole_pythonic(scan, found.remaining)
            named = [c for c in bare or () if index.resolve(c.name)]
            if bare and len(named) == len(bare):
                found.calls = [finish(c, index) for c in bare]
                found.sources.append("pythonic")
                found.remaining = ""
        if found.rejected and not found.calls and not _prose_left(text, hits):
            # Nothing but call-shaped JSON naming unknown tools: an attempt, not an example.
            found.malformed.append(snippet(text, 0, len(text)).strip())
    return found


def _split_by_name(hit: Hit, index: ToolIndex) -> tuple[list[ToolCall], list[ToolCall]]:
    accepted: list[ToolCall] = []
    rejected: list[ToolCall] = []
    for raw in hit.calls:
        if hit.strict or index.resolve(raw.name):
            accepted.append(finish(raw, index))
        else:
            rejected.append(ToolCall(raw.name, dict(raw.arguments or {}), raw.call_id))
    return accepted, rejected


def _prose_left(text: str, hits: list[Hit]) -> bool:
    spans = [(h.start, h.end) for h in hits if h.calls]
    rest = _cut(text, spans).replace("```json", "").replace("```", "")
    return bool(rest.strip())


def _cut(text: str, spans: list[tuple[int, int]]) -> str:
    if not spans:
        return text
    pieces: list[str] = []
    cursor = 0
    for start, end in sorted(spans):
        if start > cursor:
            pieces.append(text[cursor:start])
        cursor = max(cursor, end)
    pieces.append(text[cursor:])
    return "".join(pieces)


def _clean(text: str) -> str:
    """``text`` without the framing tokens a server left at its start or end. Only there: an
    answer that explains "the model ends its turn with <|im_end|>" keeps its words."""
    start, end = 0, len(text)
    while True:
        while start < end and text[start] in " \t\r\n":
            start += 1
        while end > start and text[end - 1] in " \t\r\n":
            end -= 1
        if start < end and text[start] in _TOKEN_FIRSTS:
            token = next((t for t in _LEAKED_TOKENS if text.startswith(t, start, end)), None)
            if token is not None:
                start += len(token)
                continue
        if start < end and text[end - 1] in _TOKEN_LASTS:
            token = next((t for t in _LEAKED_TOKENS if text.endswith(t, start, end)), None)
            if token is not None:
                end -= len(token)
                continue
        return text[start:end]


def _parse(message: Any, tools: Any, done_reason: str | None) -> ParsedReply:
    data = as_mapping(message)
    index = ToolIndex(tools)
    reason = done_reason or data.get("done_reason") or data.get("finish_reason")
    truncated = reason == "length"
    content = text_of(data.get("content"))
    visible, thoughts, open_tail = split_thinking_parts(content)
    thinking_field = next(
        (data[k] for k in ("thinking", "reasoning_content", "reasoning") if text_of(data.get(k))),
        "",
    )
    thinking = "\n\n".join(t for t in (text_of(thinking_field).strip(), *thoughts) if t)

    tool_calls = data.get("tool_calls")
    if not tool_calls and isinstance(data.get("function_call"), Mapping):
        tool_calls = [{"function": data["function_call"]}]  # OpenAI's legacy single call
    native, native_bad = native_calls(tool_calls, index)
    if native:
        # The server parsed these from the model's own syntax: they are the calls. Any call
        # markup left in the content duplicates them, so only prose is kept as content.
        rest = _extract(visible, index, truncated)
        return ParsedReply(
            "tool_calls",
            tuple(native),
            _clean(rest.remaining),
            thinking,
            "native",
            truncated=truncated,
            malformed=tuple(native_bad),
        )

    found = _extract(visible, index, truncated)
    if truncated and not found.calls and not found.malformed and visible != content:
        # A thinking tag inside a call's string the limit cut ('{"k": "</think>...') split the
        # call off as thinking: the reply as written still ends inside a call.
        cut = cut_call_at_end(content, 0, truncated=True) or unclosed_markup(content, _BLOCKS)
        if cut is not None:
            found.malformed.append(cut[:SNIPPET_CHARS])
    if open_tail is not None and not found.calls and not found.malformed:
        ran_into = _open_thought_calls(open_tail, index, truncated)
        if ran_into is not None:
            # "<think>… <tool_call>{…}</tool_call>" and no "</think>": the thought ran into a
            # call the model finished writing, so the call is made (as Ollama's Qwen3 parser
            # does); what came before it stays thinking.
            in_call, at = ran_into
            found.calls, found.sources, found.repaired = (
                in_call.calls,
                in_call.sources,
                in_call.repaired,
            )
            found.remaining += in_call.remaining
            kept = thoughts[:-1] if open_tail.strip() else thoughts
            kept = [*kept, open_tail[:at].strip()]
            thinking = "\n\n".join(t for t in (text_of(thinking_field).strip(), *kept) if t)
    malformed = tuple(native_bad + found.malformed)
    if found.calls:
        return ParsedReply(
            "tool_calls",
            tuple(found.calls),
            _clean(found.remaining),
            thinking,
            "+".join(found.sources),
            truncated=truncated,
            malformed=malformed,
            rejected_calls=tuple(found.rejected),
            repaired=found.repaired,
        )
    thinking_calls: tuple[ToolCall, ...] = ()
    if thinking:
        in_thought = _extract(thinking, index, False)
        thinking_calls = tuple(in_thought.calls)
    if found.final_answer is not None:
        answer = found.final_answer.strip()
        return ParsedReply(
            "final_answer" if answer else "empty",
            (),
            answer,
            thinking,
            "final_answer_json",
            thinking_calls=thinking_calls,
            truncated=truncated,
        )
    text = _clean(found.remaining)
    return ParsedReply(
        # A reply that tried to call a tool and failed is never a final answer, whatever
        # prose came with it: the loop asks again (``needs_constrained_retry``).
        "final_answer" if text and not malformed else "empty",
        (),
        text,
        thinking,
        None,
        thinking_calls=thinking_calls,
        truncated=truncated,
        malformed=malformed,
        rejected_calls=tuple(found.rejected),
    )


_OPEN_TAIL_TRIES = 2
_OPEN_TAIL_CHARS = 262_144


def _open_thought_calls(tail: str, index: ToolIndex, truncated: bool) -> tuple[_Found, int] | None:
    """The calls an unclosed thought ends with, and where they start; None unless everything
    from a call opener to the end of the reply is complete calls."""
    if len(tail) > _OPEN_TAIL_CHARS:
        return None
    starts = sorted({at for opener in CALL_OPENERS if (at := tail.find(opener)) >= 0})
    for at in starts[:_OPEN_TAIL_TRIES]:
        found = _extract(tail[at:], index, truncated)
        clean = found.calls and not found.malformed and not found.rejected
        if clean and not _clean(found.remaining):
            return found, at
    return None


def _fallback(message: Any) -> ParsedReply:
    try:
        content = message.get("content") if isinstance(message, Mapping) else message
        text = content.strip() if isinstance(content, str) else ""
    except Exception:  # the guard of the guard: nothing about the input can be trusted
        text = ""
    return ParsedReply("final_answer" if text else "empty", (), text, source="fallback")


def parse_tool_calls(
    message: Any, tools: Iterable[Any] | None = None, *, done_reason: str | None = None
) -> ParsedReply:
    """Classify one assistant message as tool calls, a final answer, or empty.

    ``message`` is an Ollama-style assistant message dict (``content``, optional ``thinking``,
    optional ``tool_calls`` whose ``function.arguments`` is an object or a JSON string); the
    OpenAI shape (``id``/``type``, ``reasoning_content``) and a ``localhand.types.Reply`` work
    too. ``tools`` is the list of offered tool definitions (OpenAI/Ollama function schema); it
    decides which names in text count as calls and drives argument coercion. ``done_reason``
    (or the message's own ``done_reason``/``finish_reason``) of ``"length"`` means the reply was
    cut off: a call cut off by it is never returned. Never raises.
    """
    try:
        return _parse(message, tools, done_reason)
    except Exception:  # the parser must never take the loop down on odd model text
        return _fallback(message)

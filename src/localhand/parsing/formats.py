"""Call markup written in a model family's own tool syntax.

Each entry names where the format is documented (chat template, model card or the parser the
serving engine ships). Markup is strong evidence of intent, so a call in it counts even when
its name was not offered (the executor then answers with the tool list), and markup that fails
to parse is reported as malformed rather than read as an answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from localhand.parsing.extract import (
    MARKUP,
    Finder,
    Hit,
    Reader,
    Scan,
    arguments_of,
    json_hits,
    marker_hits,
    snippet,
    value_at,
)
from localhand.parsing.formats_more import (
    DEEPSEEK_SEPS,
    KIMI_ARGS,
    deepseek_call,
    gemma_call,
    kimi_call,
)
from localhand.parsing.json_scan import skip_space
from localhand.parsing.mention import (
    failed_mention,
    in_inline_code,
    inline_code_end,
    is_mention,
)
from localhand.parsing.pythonic import parse_pythonic, starts_like_call
from localhand.parsing.shapes import RawCall, plausible_name
from localhand.parsing.xml_args import (
    Body,
    _Finders,
    glm_call,
    invoke_calls,
    qwen_functions,
)


@dataclass(frozen=True, slots=True)
class Tag:
    opener: str
    closers: tuple[str, ...]
    source: str
    distinctive: bool = True  # False: the opener is an ordinary word, so no "malformed" claims


TAGS: tuple[Tag, ...] = (
    # Hermes 2 Pro / Qwen2.5 / Qwen3 chat templates; also Qwen3-Coder, GLM-4.5 and Seed bodies.
    Tag("<tool_call>", ("</tool_call>",), "hermes"),
    Tag("<tool_calls>", ("</tool_calls>",), "hermes"),
    Tag("<seed:tool_call>", ("</seed:tool_call>",), "seed_oss"),
    # MiniMax-M2 template; Anthropic-style <function_calls> prompts.
    Tag("<minimax:tool_call>", ("</minimax:tool_call>",), "minimax"),
    Tag("<function_calls>", ("</function_calls>",), "invoke_xml"),
    # Fine-tunes and prompt conventions seen in llama.cpp / Ollama issue threads.
    Tag("<function_call>", ("</function_call>",), "function_call_tag"),
    Tag("<functioncall>", ("</functioncall>", "<|endoftext|>"), "glaive"),
    Tag("<tool_use>", ("</tool_use>",), "tool_use_tag"),
    # IBM Granite 3.x (<|tool_call|>[...]) and Phi-4-mini (<|tool_call|>...<|/tool_call|>).
    Tag("<|tool_call|>", ("<|/tool_call|>", "<|end_of_text|>", "<|end|>"), "tool_call_token"),
    # Llama 3.1-3.3: <|python_tag|> then JSON or name.call(...), ended by <|eom_id|>.
    Tag("<|python_tag|>", ("<|eom_id|>", "<|eot_id|>"), "llama_python_tag"),
    # Llama 4 pythonic calls may be wrapped in python_start/python_end.
    Tag("<|python_start|>", ("<|python_end|>",), "llama4"),
    # Cohere Command R7B / Command A.
    Tag("<|START_ACTION|>", ("<|END_ACTION|>",), "command_r"),
    # LM Studio's generic tool-use format for models without native tool syntax.
    Tag("[TOOL_REQUEST]", ("[END_TOOL_REQUEST]",), "lmstudio"),
    # DeepSeek V3/R1/V3.1 (one block per call; the tool_calls_begin wrapper is left over as
    # framing and removed with the other leaked tokens) and Kimi K2.
    Tag("<｜tool▁call▁begin｜>", ("<｜tool▁call▁end｜>",), "deepseek"),
    Tag("<|tool▁call▁begin|>", ("<|tool▁call▁end|>",), "deepseek"),
    Tag("<|tool_call_begin|>", ("<|tool_call_end|>",), "kimi_k2"),
    # DeepSeek V3.2/V4 "DSML" markup.
    Tag("<｜DSML｜function_calls>", ("</｜DSML｜function_calls>",), "deepseek_dsml"),
    Tag("<｜DSML｜tool_calls>", ("</｜DSML｜tool_calls>",), "deepseek_dsml"),
    # FunctionGemma (270M) and Gemma 4.
    Tag("<start_function_call>", ("<end_function_call>",), "function_gemma"),
    Tag("<|tool_call>", ("<tool_call|>", "<turn|>"), "gemma4"),
    # NVIDIA Nemotron (<TOOLCALL>[...]</TOOLCALL>), InternLM2 / Intern-S1, Liquid LFM2
    # (pythonic or JSON between tool_call_start/end).
    Tag("<TOOLCALL>", ("</TOOLCALL>",), "nemotron"),
    Tag("<|action_start|><|plugin|>", ("<|action_end|>",), "internlm"),
    Tag("<|tool_call_start|>", ("<|tool_call_end|>",), "lfm2"),
    # Phi-4-mini and FireFunction: functools[{...}].
    Tag("functools[", (), "functools", distinctive=False),
)


def parse_body(
    scan: Scan, start: int, stop: int, finders: _Finders, *, closed: bool = False
) -> Body:
    """The calls in a markup body ``text[start:stop]``, whatever syntax it uses; ``closed``
    says that the block's closer ends it at ``stop``. A body that holds no call is malformed."""
    body = _read_body(scan, start, stop, finders, closed)
    body.malformed = body.malformed or not body.calls
    return body


def _read_body(scan: Scan, start: int, stop: int, finders: _Finders, closed: bool) -> Body:
    text = scan.text
    at = skip_space(text, start, stop)
    if at >= stop:
        return Body([], stop, incomplete=True, malformed=True)
    if text.startswith(":call:", at):
        at += 1  # Gemma 4 sometimes writes "<|tool_call>:call:NAME{...}"
    if text.startswith("<function=", at):
        body = qwen_functions(text, at, stop, finders)
        body.kind = "qwen3_coder"
        return body
    if text.startswith("<invoke", at):
        return invoke_calls(text, at, stop, finders)
    if text.startswith("<｜DSML｜invoke", at):
        return invoke_calls(text, at, stop, finders, prefix="｜DSML｜")
    if text.startswith("call:", at):
        return gemma_call(text, at, stop)
    if text[at] in "{[":
        hits = json_hits(scan, at, stop, source="body", strict=True, priority=MARKUP)
        calls = [call for hit in hits for call in hit.calls]
        if any(hit.malformed is not None for hit in hits):
            # Part of the block is a call the model did not finish: the block is malformed.
            return Body([], stop, incomplete=any(h.incomplete for h in hits), malformed=True)
        if calls:
            return Body(
                calls,
                max(hit.end for hit in hits),
                incomplete=any(hit.incomplete for hit in hits),
                repaired=any(hit.repaired for hit in hits),
            )
        if text[at] == "[":
            pythonic = parse_pythonic(text[at:stop])
            if pythonic:
                return Body(pythonic, stop)
        unclosed = any(hit.incomplete for hit in hits)
        return Body([], stop, incomplete=unclosed, malformed=True)
    # DeepSeek and Kimi bodies: NAME, a separator token, the arguments. The earliest
    # separator decides, so one that appears inside the arguments changes nothing.
    head = min(stop, at + 300)
    found = [(finders.find(sep, at, head), sep) for sep in (*DEEPSEEK_SEPS, KIMI_ARGS)]
    found = [(pos, sep) for pos, sep in found if pos >= 0]
    if found:
        sep_at, sep = min(found)
        if sep == KIMI_ARGS:
            return kimi_call(scan, at, stop, sep_at)
        return deepseek_call(scan, at, stop, sep_at, sep)
    if starts_like_call(text, at):
        pythonic = parse_pythonic(text[at:stop])
        if pythonic:
            return Body(pythonic, stop)
    if finders.find("<arg_key>", at, stop) >= 0:
        body = glm_call(text, at, stop, finders, closed=closed)
        body.kind, body.ends_with_block = "glm", True
        return body
    return _name_then_json(scan, at, stop)


def _name_then_json(scan: Scan, at: int, stop: int) -> Body:
    """``NAME {json}`` or ``NAME\n{json}``: a name line followed by the arguments."""
    text = scan.text
    brace = text.find("{", at, min(stop, at + 200))
    if brace < 0 and plausible_name(text[at:stop].strip()):
        # Just a name (GLM writes a call without arguments as its name alone).
        return Body([RawCall(text[at:stop].strip(), {})], stop, name_only=True)
    name = text[at:brace].strip() if brace >= 0 else ""
    if not plausible_name(name):
        return Body([], stop, malformed=True)
    loaded, closed = value_at(scan, brace, stop)
    arguments = arguments_of(loaded)
    if loaded is None or arguments is None:
        return Body([], stop, incomplete=not closed, malformed=True)
    return Body(
        [RawCall(name, arguments)], loaded.end, incomplete=not closed, repaired=loaded.how != "json"
    )


def tag_hits(scan: Scan) -> list[Hit]:
    """Calls inside the opener/closer pairs in ``TAGS``; a missing closer is tolerated (the
    body then runs to the next opener or the end of the text)."""
    finders = _Finders(scan.text)
    hits: list[Hit] = []
    for tag in TAGS:
        hits.extend(marker_hits(scan, tag.opener, _tag_reader(scan, tag, finders)))
    return hits


def _tag_reader(scan: Scan, tag: Tag, finders: _Finders) -> Reader:
    """Reads the block that ``tag``'s opener at a position starts."""
    text = scan.text
    closers = [Finder(text, closer) for closer in tag.closers]

    def read(pos: int, openers: Finder) -> tuple[Hit | None, int]:
        body_start = pos + len(tag.opener)
        if tag.opener.endswith("["):
            body_start -= 1  # functools[ ... ]: the bracket belongs to the JSON list
        next_open = openers.find(body_start)
        ends = [c.find(body_start) for c in closers]
        close = min((e for e in ends if e >= 0), default=-1)
        stop = min((p for p in (close, next_open) if p >= 0), default=len(text))
        if tag.distinctive and is_mention(text, pos, body_start, stop, truncated=scan.truncated):
            scan.budget.attempt()
            if in_inline_code(text, pos):
                # `<tool_call>{...}</tool_call>` quoted in prose: its JSON is an example too.
                scan.examples.append((pos, inline_code_end(text, pos)))
            return None, body_start  # prose about the markup: it stays text
        body = parse_body(scan, body_start, stop, finders, closed=0 <= close == stop)
        if body.malformed and 0 <= next_open < close and scan.budget.lenient(close - pos):
            # An opener inside a value ("<arg_value>has <tool_call> in it</arg_value>")
            # ended the body early: read it up to its own closer instead.
            whole = parse_body(scan, body_start, close, finders, closed=True)
            if not whole.malformed:
                body, stop = whole, close
        end = stop
        if close >= 0 and stop == close:
            end = close + len(tag.closers[ends.index(close)])
        if body.end > stop:
            # The JSON ran past the closer: the "closer" was inside a string value (e.g. a
            # file that mentions </tool_call>). Resume after the real one.
            later = [c.find(body.end) for c in closers]
            found = [e for e in later if e >= 0]
            end = min(found) + len(tag.closers[later.index(min(found))]) if found else body.end
        missing_closer = close < 0 or stop != close
        if body.name_only and missing_closer:
            # "<tool_call>read_fi": a name the reply stopped in (or before its arguments).
            body.malformed = True
        doubtful = (body.malformed and tag.distinctive) or (
            body.name_only and body.calls and not scan.index.params.get(body.calls[0].name)
        )
        if doubtful and failed_mention(scan, pos, body_start, stop, name_only=body.name_only):
            scan.budget.attempt()
            return None, body_start  # "wraps calls in <tool_call> and </tool_call>"
        source = body.kind if tag.source == "hermes" and body.kind else tag.source
        hit = Hit(
            pos,
            end,
            source,
            [] if body.malformed else body.calls,
            # A bare name is a call when it names a tool (GLM's call without arguments).
            strict=not body.name_only,
            priority=MARKUP,
            incomplete=body.incomplete
            or (missing_closer and next_open < 0 and (body.ends_with_block or not body.calls)),
            repaired=body.repaired,
        )
        if body.malformed:
            # Nothing from a block with a cut or broken call runs, not even its finished
            # calls: the constrained retry asks for the whole turn again.
            if not tag.distinctive:
                return None, body_start + 1
            hit.malformed = snippet(text, pos, end)
        return hit, max(end, body_start + 1)

    return read


def function_hits(scan: Scan) -> list[Hit]:
    """``<function=NAME>`` and ``<invoke name=...>`` calls written without a wrapper tag."""
    text = scan.text
    finders = _Finders(text)
    hits: list[Hit] = []
    for opener, reader, source in (
        ("<function=", qwen_functions, "qwen3_coder"),
        ("<invoke", invoke_calls, "invoke_xml"),
        ("<function name=", partial(invoke_calls, call="function", param="param"), "minicpm"),
    ):
        if opener not in text:
            continue
        openers = Finder(text, opener)
        pos = openers.find(0)
        while pos >= 0 and not scan.budget.exhausted:
            if in_inline_code(text, pos):
                scan.budget.attempt()
                scan.examples.append((pos, inline_code_end(text, pos)))
                pos = openers.find(pos + len(opener))
                continue
            result = reader(text, pos, len(text), finders)
            end = max(result.end, pos + len(opener))
            if result.calls or result.malformed:
                broken = result.malformed or not result.calls
                if broken and failed_mention(scan, pos, pos, end):
                    scan.budget.attempt()
                    pos = openers.find(pos + len(opener))  # "Llama writes <function=f>{...}"
                    continue
                scan.keep(
                    hits,
                    Hit(
                        pos,
                        end,
                        source,
                        [] if broken else result.calls,
                        strict=True,
                        priority=MARKUP,
                        incomplete=result.incomplete,
                        malformed=snippet(text, pos, end) if broken else None,
                    ),
                )
            pos = openers.find(end)
    return hits

"""XML-ish argument syntaxes, where every value arrives as text and the tool's schema later
decides its type (see ``coerce``).

- Qwen3-Coder (and Seed-OSS): ``<function=NAME><parameter=KEY>\\nvalue\\n</parameter></function>``.
  Its chat template writes a newline after ``>`` and before ``</parameter>``; exactly one of each
  is removed so multi-line values (code) are kept byte for byte. The same ``<function=NAME>``
  opener with a JSON body is Llama 3.1's documented custom tool format.
- MiniMax-M2 / Anthropic-style: ``<invoke name="NAME"><parameter name="KEY">value</parameter>``;
  MiniCPM: ``<function name="NAME"><param name="KEY">value</param></function>`` or a JSON body.
- GLM-4.5/4.6: ``NAME<arg_key>KEY</arg_key><arg_value>value</arg_value>`` inside ``<tool_call>``.

Values stay strings here (their templates write strings raw and other values as JSON), and the
tool's schema decides later whether ``"[1, 2]"`` is a list or a string.

All scanning is ``str.find`` with memo (``Finder``), so it stays linear on hostile text.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from typing import Any

from localhand.parsing.extract import Finder
from localhand.parsing.json_scan import skip_space
from localhand.parsing.shapes import RawCall, arguments_from


@dataclass(slots=True)
class Body:
    """The calls read from a markup body (by this module's readers and ``formats``), and how
    they ended."""

    calls: list[RawCall] = field(default_factory=list)
    end: int = 0
    incomplete: bool = False
    malformed: bool = False
    repaired: bool = False
    kind: str | None = None  # the body's own syntax, when it names the format better
    name_only: bool = False  # just a name: a call only if the block's closer follows it
    ends_with_block: bool = False  # only the block's closer ends the call (GLM)

    def cut(self, stop: int) -> Body:
        """This result marked cut short at ``stop``: a call the reply stopped in."""
        self.malformed = self.incomplete = True
        self.end = stop
        return self


def _trim_one_newline(value: str) -> str:
    if value.startswith("\r\n"):
        value = value[2:]
    elif value.startswith("\n"):
        value = value[1:]
    if value.endswith("\r\n"):
        value = value[:-2]
    elif value.endswith("\n"):
        value = value[:-1]
    return value


class _Finders:
    """One memoising finder per needle, shared across calls on the same text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._by_needle: dict[str, Finder] = {}

    def find(self, needle: str, pos: int, stop: int) -> int:
        finder = self._by_needle.get(needle)
        if finder is None:
            finder = self._by_needle[needle] = Finder(self.text, needle)
        at = finder.find(pos)
        return at if 0 <= at < stop else -1


def _earliest(*positions: int) -> int:
    found = [p for p in positions if p >= 0]
    return min(found) if found else -1


def _values(finders: _Finders, pos: int, stop: int) -> tuple[dict[str, str], int, bool] | None:
    """Read ``<parameter=KEY>value</parameter>`` pairs from ``pos`` up to ``</function>``.

    Returns (values, position after end_tag or where reading stopped, complete), or None when
    a value is cut: it runs into ``stop`` (the end of the reply or of the block) with nothing
    the model wrote to end it, or a parameter tag never closed. A missing ``closer`` is
    tolerated when the next parameter, the end tag or the next call follows (models drop it).
    """
    text = finders.text
    opener, closer, end_tag, next_call = "<parameter=", "</parameter>", "</function>", "<function="
    values: dict[str, str] = {}
    while True:
        at = skip_space(text, pos, stop)
        if at >= stop:
            return values, stop, False
        if text.startswith(end_tag, at):
            return values, at + len(end_tag), True
        if not text.startswith(opener, at):
            # Junk between parameters: skip to the next parameter or the end tag.
            nxt = _earliest(finders.find(opener, at, stop), finders.find(end_tag, at, stop))
            if nxt < 0:
                return values, stop, False
            pos = nxt
            continue
        key_end = text.find(">", at + len(opener), min(stop, at + len(opener) + 256))
        if key_end < 0:
            return None  # a parameter tag cut before its value began
        key = text[at + len(opener) : key_end].strip().strip("\"'")
        start = key_end + 1
        close = finders.find(closer, start, stop)
        boundary = _earliest(
            finders.find(opener, start, stop), finders.find(next_call, start, stop)
        )
        if close >= 0 and (boundary < 0 or close < boundary):
            values[key] = text[start:close]
            pos = close + len(closer)
            continue
        # No closer before the next parameter: the value ends there, or at the end tag.
        end_tag_at = finders.find(end_tag, start, stop)
        value_end = _earliest(boundary, end_tag_at)
        if value_end < 0:
            return None  # the value runs into the end: where it was meant to end is unknown
        values[key] = text[start:value_end]
        pos = value_end


def qwen_functions(text: str, pos: int, stop: int, finders: _Finders) -> Body:
    """``<function=NAME>...</function>`` calls, one after another, from ``pos``."""
    result = Body(end=pos)
    at = skip_space(text, pos, stop)
    while text.startswith("<function=", at):
        name_end = text.find(">", at, min(stop, at + 256))
        if name_end < 0:
            result.malformed = True
            return result
        name = text[at + len("<function=") : name_end].strip().strip("\"'")
        body = skip_space(text, name_end + 1, stop)
        if body < stop and text[body] == "{":
            # Llama 3.1 custom format: <function=NAME>{"a": 1}</function>
            close = finders.find("</function>", body, stop)
            raw = text[body : close if close >= 0 else stop]
            arguments = arguments_from(raw)
            if arguments is None:
                result.malformed = True
                return result
            result.calls.append(RawCall(name, arguments))
            end, complete = (close + len("</function>"), True) if close >= 0 else (stop, False)
        else:
            read = _values(finders, name_end + 1, stop)
            if read is None:
                return result.cut(stop)
            values, end, complete = read
            if not complete and not values:
                # "<function=NAME>" and then the reply stops: cut before its parameters.
                return result.cut(stop)
            result.calls.append(RawCall(name, {k: _trim_one_newline(v) for k, v in values.items()}))
        result.end = end
        if not complete:
            result.incomplete = True
            return result
        at = skip_space(text, end, stop)
    return result


def _attribute(text: str, at: int, stop: int, attr: str = "name") -> tuple[str | None, int]:
    """The value of ``attr="..."`` in the tag starting at ``at``; (value, position after >)."""
    tag_end = text.find(">", at, min(stop, at + 512))
    if tag_end < 0:
        return None, stop
    tag = text[at:tag_end]
    key = tag.find(attr + "=")
    if key < 0:
        return None, tag_end + 1
    value = tag[key + len(attr) + 1 :].strip()
    if value.startswith(('"', "'")):
        quote = value[0]
        close = value.find(quote, 1)
        value = value[1:close] if close > 0 else value[1:]
    else:
        value = value.split()[0] if value.split() else ""
    return value.strip(), tag_end + 1


def _tag_at(text: str, at: int, tag: str) -> bool:
    """``tag`` (``<invoke``) at ``at`` as a whole tag name, not the start of a longer one."""
    after = text[at + len(tag) : at + len(tag) + 1]
    return text.startswith(tag, at) and after in (" ", "\t", "\n", "\r", ">")


def _cdata(value: str) -> str:
    stripped = value.strip()
    if stripped.startswith("<![CDATA[") and stripped.endswith("]]>"):
        return stripped[len("<![CDATA[") : -len("]]>")]
    return value


def invoke_calls(
    text: str,
    pos: int,
    stop: int,
    finders: _Finders,
    prefix: str = "",
    *,
    call: str = "invoke",
    param: str = "parameter",
) -> Body:
    """``<invoke name="NAME"><parameter name="KEY">value</parameter></invoke>`` calls.

    ``prefix`` names a tag namespace: DeepSeek V3.2/V4 "DSML" writes ``<｜DSML｜invoke ...>`` and
    marks each parameter ``string="true"`` (raw text) or ``string="false"`` (JSON). MiniCPM
    writes ``<function name="NAME"><param name="KEY">value</param></function>`` (``call`` and
    ``param`` name the tags), values possibly in ``<![CDATA[...]]>``, or the arguments as one
    JSON object: ``<function name="NAME">{"key": "value"}</function>``.
    """
    invoke, end_invoke = f"<{prefix}{call}", f"</{prefix}{call}>"
    parameter, end_parameter = f"<{prefix}{param}", f"</{prefix}{param}>"
    result = Body(end=pos)
    at = skip_space(text, pos, stop)
    while _tag_at(text, at, invoke):
        name, body = _attribute(text, at, stop)
        if not name:
            result.malformed = True
            return result
        values: dict[str, Any] = {}
        complete = False
        cursor = skip_space(text, body, stop)
        if cursor < stop and text[cursor] == "{":
            # The arguments as one JSON object, up to the end tag (or, when it was dropped, to
            # the next call or the end of the reply: Llama 3.1's <function=NAME>{...} rule).
            close = finders.find(end_invoke, cursor, stop)
            body_end = close if close >= 0 else _earliest(finders.find(invoke, cursor, stop), stop)
            arguments = arguments_from(text[cursor:body_end])
            if arguments is None:
                return result.cut(stop)
            result.calls.append(RawCall(name, arguments))
            if close < 0:
                result.end, result.incomplete = body_end, True
                return result
            result.end = at = skip_space(text, close + len(end_invoke), stop)
            continue
        while True:
            cursor = skip_space(text, cursor, stop)
            if text.startswith(end_invoke, cursor):
                cursor += len(end_invoke)
                complete = True
                break
            if not _tag_at(text, cursor, parameter):
                nxt = _earliest(
                    finders.find(parameter, cursor, stop), finders.find(end_invoke, cursor, stop)
                )
                if nxt < 0:
                    cursor = stop
                    break
                cursor = nxt if nxt > cursor else cursor + 1
                continue
            key, start = _attribute(text, cursor, stop)
            is_string, _ = _attribute(text, cursor, stop, "string")
            close = finders.find(end_parameter, start, stop)
            if key is None or close < 0:
                # A parameter without its end: the value is cut (or never began). Dropping it
                # would run the call without it, so the whole call is malformed.
                return result.cut(stop)
            raw = _cdata(text[start:close])
            values[key] = raw
            if is_string == "false":
                # Keep the text when it is not JSON: validation will say what is wrong with it.
                with contextlib.suppress(ValueError):
                    values[key] = json.loads(raw)
            cursor = close + len(end_parameter)
        if not complete and not values:
            # '<invoke name="NAME">' and then the reply stops: cut before its parameters.
            return result.cut(stop)
        result.calls.append(RawCall(name, values))
        result.end = cursor
        if not complete:
            result.incomplete = True
            return result
        at = skip_space(text, cursor, stop)
    return result


def glm_call(text: str, pos: int, stop: int, finders: _Finders, *, closed: bool = False) -> Body:
    """``NAME\\n<arg_key>k</arg_key>\\n<arg_value>v</arg_value>...`` (GLM-4.5 family).

    ``closed`` says that the block's own closer (``</tool_call>``) ends the body at ``stop``.
    Two slips GLM models make are read as what they mean: a value whose ``</arg_value>`` is
    missing ends at the next ``<arg_key>`` or at the block's closer, and a value whose
    ``<arg_value>`` is missing starts right after ``</arg_key>`` and ends at ``</arg_value>``.
    A value that runs into the end of the reply is cut, never guessed."""
    first_key = finders.find("<arg_key>", pos, stop)
    result = Body(end=pos)
    name = text[pos : first_key if first_key >= 0 else stop].strip()
    if not name or any(ch in name for ch in " <>{}\n") or len(name) > 128:
        result.malformed = True
        return result
    values: dict[str, str] = {}
    cursor = first_key if first_key >= 0 else stop
    while 0 <= cursor < stop and text.startswith("<arg_key>", cursor):
        read = _glm_value(finders, cursor, stop, closed)
        if read is None:
            # A key whose value never began, or a value that runs into the end: cut.
            return result.cut(stop)
        key, value, cursor = read
        values[key] = value
        cursor = skip_space(text, cursor, stop)
    result.calls.append(RawCall(name, dict(values)))
    result.end = max(cursor, pos)
    return result


def _glm_value(finders: _Finders, at: int, stop: int, closed: bool) -> tuple[str, str, int] | None:
    """(key, value, position after it) for the ``<arg_key>`` at ``at``; None when cut."""
    text = finders.text
    key_close = finders.find("</arg_key>", at, stop)
    if key_close < 0:
        return None
    key = text[at + len("<arg_key>") : key_close].strip()
    after_key = key_close + len("</arg_key>")
    value_at = skip_space(text, after_key, stop)
    if value_at >= stop:
        return None
    value_close = finders.find("</arg_value>", value_at, stop)
    next_key = finders.find("<arg_key>", value_at, stop)
    if not text.startswith("<arg_value>", value_at):
        # "<arg_key>q</arg_key>how many</arg_value>": the opener was dropped.
        if value_close < 0 or (0 <= next_key < value_close):
            return None
        end = value_close + len("</arg_value>")
        return key, _trim_one_newline(text[after_key:value_close]), end
    start = value_at + len("<arg_value>")
    if value_close >= 0 and (next_key < 0 or value_close < next_key):
        return key, text[start:value_close], value_close + len("</arg_value>")
    if next_key >= 0:
        return key, text[start:next_key].rstrip(), next_key  # "</arg_value>" dropped
    if closed:
        return key, text[start:stop].rstrip(), stop  # dropped before "</tool_call>"
    return None

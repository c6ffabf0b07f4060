"""Token estimates, for decisions made before the server has counted anything.

Sizing ``num_ctx``, deciding when to compact the history and checking the budget all need a
prompt's length in tokens before the server has seen it, and localhand has none of the models'
tokenizers. "Four characters a token" holds for English prose but is a third low for what an
agent's history is mostly made of: code, JSON and ``read_file`` output with its line numbers
(about 3.3 and 2.7 characters a token). What makes the difference is the kind of character:
letters run together into few tokens, while digits, punctuation and line breaks are about a
token each. So a text's estimate weighs its character classes, counted with byte-level C
operations (``bytes.translate``, ``bytes.count``: no Python loop over the characters). JSON
(tool schemas, tool-call arguments) is counted from its structure, without encoding it.

The weights were fitted against Gemma 3's tokenizer (the one the project ships, in the tiny
GGUF model) on code, ``read_file`` and ``run_command`` output, tool calls, tool schemas,
Markdown and prose, then raised by about 5%: an estimate that is low lets the server silently
drop the start of the conversation, one a little high only compacts a little early.
``benchmarks/prompt_bench.py`` compares the estimate with that tokenizer
(``estimate_vs_tokenizer``). Other families' tokenizers were not measured; their smaller
vocabularies (Qwen 152k, Llama 3 128k entries, Gemma 262k) may take a few percent more
tokens for prose, and fewer for long numbers.
"""

from __future__ import annotations

import copy
import string
import threading
from collections.abc import Sequence
from typing import Any

from localhand.types import Message

CHARS_PER_TOKEN = 4
"""Characters a token in English prose, for rough conversions of prose (an answer's length)."""
CODE_CHARS_PER_TOKEN = 3
"""Characters a token in code and files, for turning a token allowance into characters of
files (a little low: Python is about 3.3, with read_file's line numbers 2.7)."""

# Weights, in hundredths of a token per character (per byte beyond ASCII).
LETTER = 25
"""ASCII letters: words and identifiers, about four letters a token."""
DIGIT = 170
"""Digits: vocabularies split numbers into single digits or short groups."""
SYMBOL = 72
"""Punctuation, brackets, operators, tabs: a token each, or two merged into one."""
NEWLINE = 135
"""Line breaks, with the indentation and line numbers that follow them."""
NON_ASCII = 20
"""Per UTF-8 byte beyond ASCII: about 0.6 token per CJK character, fewer for accented Latin."""
# Spaces weigh nothing: a tokenizer joins a space to the word after it.

MESSAGE_TOKENS = 5
"""Chat-template markup around every message (start, role, end, line breaks)."""
TOOL_RESULT_TOKENS = 12
"""More markup around a tool result (Qwen's ``<tool_response>`` tags, for instance)."""
CALL_TOKENS = 21
"""Per tool call: the template's tags around it (``<tool_call>``) and its JSON frame,
``{"name": ..., "arguments": ...}``."""
TOOLS_PREAMBLE_TOKENS = 100
"""What templates write around the tool schemas ("You may call one or more functions...")."""

_LETTERS = string.ascii_letters.encode("ascii")
_DIGITS = string.digits.encode("ascii")
_HIGH = bytes(range(128, 256))
_RUN_CHARS = b"=-_.*#~+/"
"""Characters that come in long runs (rules, test-runner banners, progress dots): a run of
8 is one token or two, not eight."""
_RUN = 8
_AS_RUN_CHARS = bytes(ord("=") if byte in _RUN_CHARS else ord(" ") for byte in range(256))
_A_RUN = b"=" * _RUN

_CACHE: dict[str, int] = {}
_CACHE_MAX_CHARS = 4_000_000
_CACHE_MAX_ENTRIES = 50_000
_cache_chars = 0


def estimate_text_tokens(text: str) -> int:
    """About how many tokens ``text`` takes, erring a little high.

    Texts are remembered (up to a few MB): a conversation is estimated again before every
    request, and all but its newest messages were counted before.
    """
    global _cache_chars
    tokens = _CACHE.get(text)
    if tokens is None:
        tokens = _CACHE[text] = _count(text)
        _cache_chars += len(text)
        if _cache_chars > _CACHE_MAX_CHARS or len(_CACHE) > _CACHE_MAX_ENTRIES:
            _CACHE.clear()  # a crude bound on memory: start again
            _cache_chars = 0
    return tokens


def estimate_prompt_tokens(messages: Sequence[Message], tools: Sequence[Any] | None = None) -> int:
    """A prompt's tokens (messages, tool schemas and template markup), erring a little high;
    see the module docstring."""
    total = _tools_tokens(tools) if tools else 0
    for m in messages:
        total += MESSAGE_TOKENS
        content = m.get("content")
        if content:
            total += estimate_text_tokens(content if type(content) is str else str(content))
        thinking = m.get("thinking")
        if thinking:
            total += estimate_text_tokens(str(thinking))
        calls = m.get("tool_calls")
        if calls:
            total += _calls_tokens(calls)
        if m.get("role") == "tool":
            total += TOOL_RESULT_TOKENS
    return total


def _count(text: str) -> int:
    """The estimate proper: weighed character classes (see the module docstring)."""
    data = text.encode("utf-8", "surrogatepass")
    plain = data if len(data) == len(text) else data.translate(None, _HIGH)
    rest = plain.translate(None, _LETTERS)
    symbols = rest.translate(None, _DIGITS)
    newlines = symbols.count(b"\n")
    weighted = (
        LETTER * (len(plain) - len(rest))
        + DIGIT * (len(rest) - len(symbols))
        + SYMBOL * (len(symbols) - symbols.count(b" ") - newlines)
        + NEWLINE * newlines
        + NON_ASCII * (len(data) - len(plain))
    )
    if _A_RUN in symbols.translate(_AS_RUN_CHARS):  # one pass over the symbols...
        for char in _RUN_CHARS:  # ...and a count per character only when there are runs
            weighted -= (SYMBOL * _RUN - 100) * data.count(bytes((char,)) * _RUN)
    return -(-weighted // 100)  # rounded up: a text that is not empty is at least a token


def _calls_tokens(calls: Any) -> int:
    """Tool calls as templates write them: each call's name and arguments as JSON."""
    if not isinstance(calls, list | tuple):
        return estimate_text_tokens(str(calls))
    total = 0
    for call in calls:
        function = call.get("function", call) if isinstance(call, dict) else call
        if not isinstance(function, dict):
            total += CALL_TOKENS + estimate_text_tokens(str(function))
            continue
        total += CALL_TOKENS + _json_tokens(function.get("name") or "")
        arguments = function.get("arguments")
        if type(arguments) is not dict:
            total += _json_tokens(arguments)
            continue
        total += 1  # the usual case, inline: a flat object of strings
        for key, value in arguments.items():
            total += 3 + _key_tokens(key)
            total += estimate_text_tokens(value) if type(value) is str else _json_tokens(value) - 1
    return total


def _json_tokens(value: Any) -> int:
    """Tokens of ``value`` written as JSON, counted without writing it: encoding every call
    again before every request would cost more than all the rest of the estimate."""
    if isinstance(value, str):
        return estimate_text_tokens(value) + 1  # + its quotes
    if isinstance(value, dict):
        # Per pair: the key's quotes, ": " and ", " (about two tokens: they merge).
        return 1 + sum(2 + _key_tokens(k) + _json_tokens(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return 1 + sum(1 + _json_tokens(v) for v in value)
    return 1 if value is None else estimate_text_tokens(str(value))


_KEYS: dict[Any, int] = {}


def _key_tokens(key: Any) -> int:
    """A key such as ``path`` or ``start_line``: its words are whole tokens in any vocabulary
    (by its letters alone, ``description`` would count three)."""
    tokens = _KEYS.get(key)
    if tokens is None:
        if type(key) is str and key.isascii() and key.isidentifier():
            tokens = 1 + 2 * key.count("_")
        else:
            tokens = estimate_text_tokens(str(key))
        if len(_KEYS) < 10_000:
            _KEYS[key] = tokens
    return tokens


class _SchemaEstimate:
    """The tool schemas' estimate, kept while the same schemas come back: a request offers the
    same tools as the one before, and comparing them (in C) costs a fraction of counting."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: list[Any] = []
        self._tokens = 0

    def __call__(self, tools: Sequence[Any]) -> int:
        current = list(tools)
        with self._lock:
            try:
                if current == self._seen:
                    return self._tokens
            except Exception:  # values that refuse to be compared: count them
                pass
        tokens = TOOLS_PREAMBLE_TOKENS + _json_tokens(current)
        try:
            seen = copy.deepcopy(current)  # a copy: the caller may change its dicts later
        except Exception:  # not plain data; counted every time
            return tokens
        with self._lock:
            self._seen, self._tokens = seen, tokens
        return tokens


_tools_tokens = _SchemaEstimate()

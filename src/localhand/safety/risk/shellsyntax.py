"""The shapes the shell parser produces, and bash's word expansions as pure functions."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

MAX_BRACE_WORDS = 64
"""A ``{a,b}{c,d}…`` word expanding to more words than this is left as it is."""

_ESCAPES = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r",
            "t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}  # fmt: skip


@dataclass(slots=True)
class Word:
    """One word after quote removal. Parts known only at run time read ``$NAME`` or ``$(…)``."""

    text: str
    dynamic: bool = False
    """Some part of it is only known at run time."""
    leading_dynamic: bool = False
    """It starts with such a part, so as a path it could point anywhere."""
    subs: list[Script] = field(default_factory=list)
    """Command substitutions inside it: their commands run too."""
    raw: str = ""
    """The source text, quotes included."""


@dataclass(slots=True)
class Redirect:
    op: str
    target: Word | None = None
    heredoc: str | None = None
    """A here-document's body, or a here-string's text."""
    heredoc_subs: list[Script] = field(default_factory=list)


@dataclass(slots=True)
class Command:
    words: list[Word] = field(default_factory=list)
    assignments: list[tuple[str, Word]] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)
    body: Script | None = None
    """The commands of a ``( … )`` or ``{ …; }`` group."""
    function: str | None = None
    """The function's name, when ``body`` defines one."""
    subs: list[Script] = field(default_factory=list)
    """Substitutions outside words, such as in ``(( … ))``."""

    def empty(self) -> bool:
        return not (self.words or self.assignments or self.redirects or self.body or self.subs)


@dataclass(slots=True)
class Pipeline:
    commands: list[Command] = field(default_factory=list)


@dataclass(slots=True)
class Script:
    pipelines: list[Pipeline] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """What could not be parsed cleanly, in words: ``an unclosed quote``."""


def decode_escapes(text: str, start: int = 0, *, stop: str = "") -> tuple[str, int]:
    """``text`` from ``start`` with backslash escapes decoded as ``$'…'`` and ``printf`` do
    (``\\x72``, ``\\162``, ``\\u0072``, ``\\n``...), up to the first unescaped ``stop``
    character. Returns the value and the index of that character (``len(text)`` if none)."""
    out, i, n = [], start, len(text)
    while i < n and text[i] not in stop:
        c = text[i]
        if c != "\\" or i + 1 >= n:
            out.append(c)
            i += 1
            continue
        e = text[i + 1]
        i += 2
        if e in _ESCAPES:
            out.append(_ESCAPES[e])
        elif e in "xuU01234567":
            hexadecimal = e in "xuU"
            digits = "0123456789abcdefABCDEF" if hexadecimal else "01234567"
            first = i if hexadecimal else i - 1
            limit = first + ({"x": 2, "u": 4, "U": 8}.get(e, 4 if e == "0" else 3))
            k = first
            while k < min(n, limit) and text[k] in digits:
                k += 1
            if k > first:
                out.append(chr(min(int(text[first:k], 16 if hexadecimal else 8), 0x10FFFF)))
                i = k
            else:
                out.append("\\" + e)
        elif e == "c" and i < n:
            out.append(chr(ord(text[i]) & 0x1F))
            i += 1
        else:
            out.append("\\" + e)
    return "".join(out), i


def is_assignment(word: Word) -> bool:
    name, eq, _ = word.raw.partition("=")
    return bool(eq) and name.rstrip("+").isidentifier() and not name.startswith("+")


def finish_word(
    parts: list[tuple[str, str]], subs: list[Script], raw: str, home: str
) -> list[Word]:
    """Brace, tilde and field splitting expansion of a word's parts, in bash's order."""
    if all(kind == "lit" for _, kind in parts):
        texts = expand_braces("".join(text for text, _ in parts))
        return [Word(tilde(text, home), raw=raw, subs=subs) for text in texts]
    words: list[Word] = []
    current: list[str] = []
    started = dynamic = leading = False

    def flush() -> None:
        nonlocal started, dynamic, leading
        if started:
            words.append(Word("".join(current), dynamic, leading, subs, raw))
        current.clear()
        started = dynamic = leading = False

    for index, (text, kind) in enumerate(parts):
        if kind == "split":  # an unquoted expansion: its spaces separate words
            pieces = text.split()
            if text[:1].isspace() or not pieces:
                flush() if text else None
            for number, piece in enumerate(pieces):
                if number:
                    flush()
                current.append(piece)
                started = True
            if pieces and text[-1].isspace():
                flush()
            continue
        if kind == "dyn":
            leading = leading or not "".join(current)
            dynamic = True
        current.append(tilde(text, home) if kind == "lit" and index == 0 else text)
        started = True
    flush()
    return words


def tilde(text: str, home: str) -> str:
    if text == "~" or text.startswith("~/"):
        return home + text[1:]
    if text.startswith("~") and text[1:2].isalnum():
        return os.path.expanduser(text)
    return text


def expand_braces(text: str) -> list[str]:
    """``a{b,c}d`` → ``abd acd``; nested lists too. Sequences (``{1..9}``) stay as they are."""
    results = [text]
    if len(text) > 1024 or "," not in text:
        return results
    for _ in range(8):  # each round expands the first list of every word
        expanded: list[str] = []
        changed = False
        for word in results:
            split = _first_brace_list(word)
            if split is None:
                expanded.append(word)
                continue
            head, options, tail = split
            changed = True
            expanded.extend(head + option + tail for option in options)
        if not changed or len(expanded) > MAX_BRACE_WORDS:
            return results if len(expanded) > MAX_BRACE_WORDS else expanded
        results = expanded
    return results


def _first_brace_list(word: str) -> tuple[str, list[str], str] | None:
    start = word.find("{")
    while start != -1:
        level, options, begin = 0, [], start + 1
        for j in range(start, len(word)):
            c = word[j]
            if c == "{":
                level += 1
            elif c == "}":
                level -= 1
                if level == 0:
                    options.append(word[begin:j])
                    if len(options) > 1:
                        return word[:start], options, word[j + 1 :]
                    break
            elif c == "," and level == 1:
                options.append(word[begin:j])
                begin = j + 1
        start = word.find("{", start + 1)
    return None

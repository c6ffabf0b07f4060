"""Every figure in the docs comes from ``benchmarks/publish.py`` or says where and when it was
measured.

A figure is a measurement written with its unit: any number of milliseconds, microseconds,
tokens, tokens or replies a second, or times (``×``); a number of seconds, minutes, percent or
bytes when it is approximate (``~``, ``about``), has decimals or is a range. A round number of
seconds, minutes or percent is taken for a setting (``120 s``, ``30 minutes``, ``95%``
intervals) and not checked. A figure is accounted for when it is

- inside a generated block (``<!-- figures:NAME -->``, rendered from ``figures.json``);
- inside a hand-kept region ``<!-- measured: NOTE -->`` … ``<!-- /measured -->`` whose NOTE says
  where and when (a date: ``2026-11-25`` or ``November 2026``), for what no quick command
  reproduces (an earlier edition's tables, a transcript, a compile time);
- inside a fenced transcript followed at once by a generated block of a ``recorded`` group
  (that block says where and when the transcript was made).

Every doc is held to this whole: README.md (all its sections, and the text before the first),
every page of docs/ and every page under examples/. A setting is worded so it does not read as a
measurement (``4096-token replies``, ``three times request_timeout``), not exempted.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from _figures_render import MARKER

ALWAYS = r"ms|µs|tokens/s|replies/s|tokens|×"
WHEN_INEXACT = r"s|seconds|min|minutes|%|MiB|GiB|MB|KB"
NUMBER = r"\d[\d,]*(?:\.\d+)?"
FIGURE = re.compile(
    rf"(?P<approx>~|≈|about |around )?(?<![\w.#/-])(?P<num>{NUMBER})"
    rf"(?P<range>\s?[–-]\s?{NUMBER})?\s?(?P<unit>{ALWAYS}|{WHEN_INEXACT})(?![\w/])"
)
MEASURED = re.compile(r"<!-- measured: (?P<note>.*?) -->(?P<body>.*?)<!-- /measured -->", re.S)
DATE = re.compile(
    r"\b\d{4}-\d{2}-\d{2}\b|\b(?:January|February|March|April|May|June|July|August|September|"
    r"October|November|December) \d{4}\b"
)
FENCE_THEN_BLOCK = re.compile(
    r"^```[^\n]*\n(?:(?!```).)*?\n```\s*\n(?=<!-- figures:(?P<name>[a-z0-9-]+) -->)", re.S | re.M
)

RECORDED_BLOCKS = {"tiny-transcript": "tiny_transcript", "qwen3-transcript": "qwen3_transcript"}
"""Generated blocks that say where and when the transcript just before them was made."""


def is_figure(match: re.Match[str]) -> bool:
    if re.fullmatch(ALWAYS, match["unit"]):
        return True
    return bool(match["approx"] or "." in match["num"] or match["range"])


def bad_notes(text: str) -> list[str]:
    """The ``measured`` markers whose note does not say when (no date) or where."""
    return [
        m["note"]
        for m in MEASURED.finditer(text)
        if not DATE.search(m["note"]) or len(DATE.sub("", m["note"]).strip(" ,;:.")) < 12
    ]


def _blank(match: re.Match[str]) -> str:
    return "\n" * match.group(0).count("\n")  # keep line numbers for the report


def unaccounted(text: str, figures: dict[str, Any]) -> Iterator[tuple[int, str]]:
    """(line, figure) for each figure in ``text`` that no block or marker accounts for."""

    def transcript(match: re.Match[str]) -> str:
        group = RECORDED_BLOCKS.get(match["name"])
        recorded = group and figures["groups"][group]["provenance"]["how"] == "recorded"
        return _blank(match) if recorded else match.group(0)

    text = FENCE_THEN_BLOCK.sub(transcript, text)  # before the blocks that mark them go
    text = MARKER.sub(_blank, text)
    text = MEASURED.sub(_blank, text)
    for number, line in enumerate(text.splitlines(), 1):
        for match in FIGURE.finditer(line):
            if is_figure(match):
                yield number, match.group(0).strip()


def problems(relative: str, text: str, figures: dict[str, Any]) -> list[str]:
    """What is wrong with one doc: figures not accounted for, markers that do not say when."""
    found = [
        f"{relative}:{line}: {fig!r} is not from publish.py and carries no marker"
        for line, fig in unaccounted(text, figures)
    ]
    found += [
        f"{relative}: a measured marker says no date or place: {note!r}" for note in bad_notes(text)
    ]
    return found

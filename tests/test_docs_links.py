"""Every relative link in README.md and docs/*.md leads somewhere: the file exists, and an
``#anchor`` (in the page, or ``page.md#anchor``) names a heading of the page it points to, as
GitHub makes anchors from headings."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\((?P<target>[^)\s]+)(?:\s+\"[^\"]*\")?\)")
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
HEADING = re.compile(r"^#{1,6}\s+(?P<text>.+?)\s*#*\s*$")
SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: the text as rendered (a link's text, no code marks),
    lowercased, punctuation dropped but for hyphens and spaces, spaces made hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) outside fenced code blocks."""
    lines, fence = [], None
    for number, line in enumerate(text.splitlines(), 1):
        opening = re.match(r"^\s*(`{3,}|~{3,})", line)
        if opening:
            mark = opening.group(1)
            if fence is None:
                fence = mark[0] * len(mark)
                continue
            if mark.startswith(fence):
                fence = None
                continue
        if fence is None:
            lines.append((number, line))
    return lines


def anchors(text: str) -> set[str]:
    """The anchors of a page's headings; a repeated heading gets ``-1``, ``-2``... as on GitHub."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    for _, line in prose_lines(text):
        match = HEADING.match(line)
        if not match:
            continue
        base = anchor(match["text"])
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(text: str) -> list[tuple[int, str]]:
    """(line number, target) of each link outside code: fences and inline code spans."""
    return [
        (number, match["target"])
        for number, line in prose_lines(text)
        for match in LINK.finditer(CODE_SPAN.sub("", line))
    ]


def broken(page: Path, root: Path) -> list[str]:
    """What is wrong with the relative links of one page, each as ``page:line: target: why``."""
    problems = []
    name = page.relative_to(root)
    for number, target in links(page.read_text()):
        if SCHEME.match(target):
            continue  # http(s), mailto: not checked here
        path, _, fragment = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            problems.append(f"{name}:{number}: {target}: no such file")
        elif fragment and dest.suffix == ".md" and fragment not in anchors(dest.read_text()):
            problems.append(f"{name}:{number}: {target}: no heading with that anchor")
    return problems


def pages(root: Path) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def test_anchor_is_githubs() -> None:
    assert anchor("The answer as JSON: `--output-schema FILE`") == (
        "the-answer-as-json---output-schema-file"
    )
    assert anchor("Which model? `localhand eval`") == "which-model-localhand-eval"
    assert anchor("llama-server: one slot per task, and its own figures") == (
        "llama-server-one-slot-per-task-and-its-own-figures"
    )
    assert anchor("Ollama's context window, retries") == "ollamas-context-window-retries"
    assert anchor("See [the docs](docs/x.md) now") == "see-the-docs-now"


def test_a_broken_link_or_anchor_is_found(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text(
        "# Top\n\n## Quick start\n\n[ok](docs/a.md#the-part) [same](#quick-start)\n"
        "[gone](docs/missing.md) [wrong](docs/a.md#no-such-part) [self](#nowhere)\n"
        "`[code](docs/missing.md)` [web](https://example.com/x#y)\n"
        "```\n[fenced](docs/missing.md)\n```\n"
    )
    (tmp_path / "docs" / "a.md").write_text(
        "# A\n\n## The part\n\n## The part\n\n[up](../README.md)\n"
    )
    assert anchors((tmp_path / "docs" / "a.md").read_text()) == {"a", "the-part", "the-part-1"}
    found = [p for page in pages(tmp_path) for p in broken(page, tmp_path)]
    assert found == [
        "README.md:6: docs/missing.md: no such file",
        "README.md:6: docs/a.md#no-such-part: no heading with that anchor",
        "README.md:6: #nowhere: no heading with that anchor",
    ]


@pytest.mark.parametrize("page", pages(REPO), ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_and_anchor_resolves(page: Path) -> None:
    assert broken(page, REPO) == []

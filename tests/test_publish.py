"""``benchmarks/publish.py``: every figure in the docs' generated blocks comes from the figures
file the publish command writes, each says where and when it was measured, and the quick mode
still runs (so the command cannot rot). Timings are never compared: the machines are noisy."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import optional_deps

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "benchmarks"
sys.path.insert(0, str(BENCH))

from _figures_check import problems  # noqa: E402
from _figures_render import BLOCKS, MARKER, fill, provenance  # noqa: E402
from publish import documents  # noqa: E402

QUICK_GROUPS = {"sandbox", "overhead", "startup", "chat_format", "prompt", "batch"}


def committed() -> dict[str, Any]:
    return json.loads((BENCH / "figures.json").read_text())


def docs() -> list[str]:
    """The docs held to the rule: README.md, the pages of docs/ and every page under examples/."""
    return documents(REPO)


def copy_docs(root: Path) -> None:
    for relative in docs():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / relative, root / relative)


def publish(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(BENCH / "publish.py"), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
    )


def test_every_block_in_the_docs_is_rendered_from_the_figures_file() -> None:
    figures = committed()
    for relative, names in BLOCKS.items():
        text = (REPO / relative).read_text()
        assert sorted({m["name"] for m in MARKER.finditer(text)}) == sorted(set(names)), relative
        assert fill(text, figures, relative) == text, (
            f"{relative}: a generated block does not match benchmarks/figures.json "
            "(edited by hand, or figures.json changed without `benchmarks/publish.py --render`)"
        )


def test_every_group_says_where_and_when_it_was_measured() -> None:
    figures = committed()
    for key in ("cpu", "cores", "ram_gib", "os", "python", "load_start"):
        assert figures["machine"][key], key
    for name, group in figures["groups"].items():
        prov = group["provenance"]
        if prov["how"] == "measured":
            assert prov["command"].startswith("python benchmarks/"), name
            assert prov["date"] and len(prov["load_start"]) == 3, name
            assert prov["machine"]["cores"] and prov["machine"]["localhand_commit"], name
            assert provenance(figures, name).startswith("measured "), name
        else:
            assert prov["how"] == "recorded" and prov["note"], name
            assert "not re-measured" in provenance(figures, name), name


def test_a_figure_typed_into_a_block_by_hand_is_caught(tmp_path: Path) -> None:
    copy_docs(tmp_path)
    page = tmp_path / "docs" / "benchmarks.md"
    text = page.read_text()
    block = next(m for m in MARKER.finditer(text) if m["name"] == "in-short")
    edited = block["body"].replace("ms", "µs", 1)
    assert edited != block["body"]
    page.write_text(text[: block.start("body")] + edited + text[block.end("body") :])
    done = publish("--check", "--root", str(tmp_path))
    assert done.returncode == 1, done.stderr
    assert "docs/benchmarks.md" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_doc_that_lost_its_block_gets_a_clear_error(tmp_path: Path) -> None:
    copy_docs(tmp_path)
    page = tmp_path / "docs" / "eval.md"
    page.write_text(MARKER.sub("", page.read_text()))
    done = publish("--check", "--root", str(tmp_path))
    assert done.returncode == 2
    assert "docs/eval.md: missing blocks ['eval-chat-format', 'eval-tiny']" in done.stderr
    assert "Traceback" not in done.stderr


def test_every_figure_in_the_docs_is_generated_or_says_where_and_when_it_was_measured() -> None:
    figures = committed()
    found = [problem for d in docs() for problem in problems(d, (REPO / d).read_text(), figures)]
    assert found == []


def add_line(path: Path, after: str, line: str) -> None:
    text = path.read_text()
    assert after in text
    path.write_text(text.replace(after, after + "\n" + line + "\n", 1))


@pytest.mark.parametrize(
    ("relative", "after"),
    [
        ("docs/benchmarks.md", "## What is left\n"),
        ("docs/benchmarks.md", "## Results at a glance\n"),
        ("docs/design-differences.md", "## Plan mode\n"),
        ("docs/safety.md", "## What it guarantees\n"),  # a page without blocks is checked too
        ("docs/troubleshooting.md", "## Out of memory\n"),
        ("README.md", "## Run the tests\n"),  # every section of README is checked
        ("README.md", "# localhand\n"),  # and the text before the first section
        ("examples/eval/README.md", "# An eval report: the tiny model on tier 1\n"),
    ],
)
def test_a_figure_typed_outside_the_blocks_without_a_marker_is_caught(
    tmp_path: Path, relative: str, after: str
) -> None:
    copy_docs(tmp_path)
    add_line(tmp_path / relative, after, "A command now costs about 4 ms and a run 1.5 s.")
    done = publish("--check", "--root", str(tmp_path))
    assert done.returncode == 1, done.stderr
    assert f"{relative}:" in done.stderr and "'about 4 ms'" in done.stderr, done.stderr
    assert "'1.5 s'" in done.stderr and "Traceback" not in done.stderr


def test_unmarked_lists_the_loose_figures_of_every_docs_page(tmp_path: Path) -> None:
    copy_docs(tmp_path)
    assert publish("--unmarked", "--root", str(tmp_path)).stdout.strip() == ""
    add_line(tmp_path / "docs" / "mcp.md", "## Tools from MCP servers\n", "It starts in about 2 s.")
    done = publish("--unmarked", "--root", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().startswith("docs/mcp.md:") and "'about 2 s'" in done.stdout


def test_a_marker_saying_where_and_when_accounts_for_its_figures(tmp_path: Path) -> None:
    copy_docs(tmp_path)
    page = tmp_path / "docs" / "benchmarks.md"
    dated = (
        "<!-- measured: on a laptop with a GPU, 2026-11-20 -->\nA run took 1.5 s there."
        "\n<!-- /measured -->"
    )
    add_line(page, "## What is left\n", dated)
    assert publish("--check", "--root", str(tmp_path)).returncode == 0
    undated = "<!-- measured: on a laptop -->\nA run took 2.5 s.\n<!-- /measured -->"
    add_line(page, "## What is left\n", undated)
    done = publish("--check", "--root", str(tmp_path))
    assert done.returncode == 1
    assert "a measured marker says no date or place: 'on a laptop'" in done.stderr


def test_settings_and_a_transcript_followed_by_its_recorded_block_are_not_figures() -> None:
    figures = committed()
    settings = (
        "## Benchmarks\nA request may take 300 s, the whole task 30 minutes; 95% intervals.\n"
    )
    assert problems("README.md", settings, figures) == []
    worded = "## Configuration\nReplies stop at 4096 tokens; the first request gets 3×.\n"
    assert [p.split(": ", 1)[1] for p in problems("README.md", worded, figures)] == [
        "'4096 tokens' is not from publish.py and carries no marker",
        "'3×' is not from publish.py and carries no marker",
    ]  # a setting in a measurement's unit is reworded ("4096-token replies"), not exempted
    reworded = "## Configuration\n4096-token replies; the first request gets three times that.\n"
    assert problems("README.md", reworded, figures) == []
    transcript = "## Quick start\n```\n■ pass · 2.7 s\n```\n\n<!-- figures:tiny-transcript -->"
    assert problems("README.md", transcript + "<!-- /figures:tiny-transcript -->", figures) == []
    loose = transcript.replace("<!-- figures:tiny-transcript -->", "Then 3.5 s more.")
    assert [p.split(": ", 1)[1] for p in problems("README.md", loose, figures)] == [
        "'2.7 s' is not from publish.py and carries no marker",
        "'3.5 s' is not from publish.py and carries no marker",
    ]


@pytest.mark.slow
@pytest.mark.timeout(900)  # about two minutes on 2 loaded cores; past 900 s it hung
def test_quick_publish_measures_and_writes_every_block_from_its_output(tmp_path: Path) -> None:
    optional_deps.tiny_gguf()  # the chat-format check reads the tiny model's GGUF
    copy_docs(tmp_path)
    figures_file = tmp_path / "figures.json"
    shutil.copy(BENCH / "figures.json", figures_file)
    before = committed()
    done = publish("--quick", "--figures", str(figures_file), "--root", str(tmp_path), timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    after = json.loads(figures_file.read_text())
    assert after["quick"] is True
    assert after["date"] > before["date"]
    for name, group in after["groups"].items():
        if name in QUICK_GROUPS:  # measured again now, on this machine
            assert group["provenance"]["how"] == "measured", name
            assert group["provenance"]["date"] >= before["date"], name
        else:  # kept, with the date and machine of the run that measured them
            assert group == before["groups"][name], name
    for relative in BLOCKS:
        text = (tmp_path / relative).read_text()
        assert fill(text, after, relative) == text, relative
    assert (
        publish("--check", "--figures", str(figures_file), "--root", str(tmp_path)).returncode == 0
    )
    headline = next(
        m["body"]
        for m in MARKER.finditer((tmp_path / "docs/benchmarks.md").read_text())
        if m["name"] == "headline"
    )
    for name in ("sandbox", "overhead", "startup", "robustness", "quickstart"):
        assert provenance(after, name) in headline, name

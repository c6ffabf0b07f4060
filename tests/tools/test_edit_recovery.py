"""edit_file when old_text is not quite the file's: the mismatch corpus built from real models'
reports (benchmarks/edit_recovery_corpus.py), loose matches through the real FileTools on disk,
and the refusals that quote what the retry should copy."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from localhand.errors import ToolError
from localhand.tools import FileTools
from localhand.tools.edits import replace_once
from localhand.tools.edits_hint import closest_region

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

from edit_recovery_corpus import CASES  # noqa: E402


@pytest.mark.parametrize("case", CASES, ids=[f"{i}-{c['kind']}" for i, c in enumerate(CASES)])
def test_corpus_case_lands_or_is_refused_as_expected(case: dict[str, str]) -> None:
    if case["expect"] == "refused":
        with pytest.raises(ToolError) as refusal:
            replace_once(case["file"], case["old"], case["new"], where="f.py")
        assert case["hint"] in str(refusal.value)
        return
    edit = replace_once(case["file"], case["old"], case["new"], where="f.py")
    assert case["expect"] == ("loose" if edit.loose else "exact")
    assert edit.text == case["result"]


def test_corpus_covers_every_reported_kind() -> None:
    kinds = {case["kind"] for case in CASES}
    reported = {"whitespace", "indentation", "stale view", "partial line", "crlf", "tabs vs spaces"}
    assert reported <= kinds
    assert {case["expect"] for case in CASES} == {"exact", "loose", "refused"}


def test_bench_prints_shares_that_add_up() -> None:
    out = subprocess.run(
        [sys.executable, str(BENCH / "edit_recovery_bench.py")],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(BENCH.parent / "src")},
    ).stdout
    figures = json.loads(out)
    assert figures["cases"] == len(CASES)
    assert sum(figures["share"].values()) == pytest.approx(1.0, abs=0.01)
    assert figures["not_as_expected"] == []


def test_loose_edit_on_disk_says_loose_never_exact(root: Path, tools: FileTools) -> None:
    (root / "main.go").write_text("func main() {\n\tif ok {\n\t\trun()\n\t}\n}\n")
    message = tools.edit_file(
        "main.go", "    if ok {\n        run()", "    if ok {\n        go run()"
    )
    assert (root / "main.go").read_text() == "func main() {\n\tif ok {\n\t\tgo run()\n\t}\n}\n"
    assert message.startswith("Edited 'main.go' at line 2")
    assert "did not match exactly" in message and "loosely" in message
    assert "tabs vs spaces" in message


def test_exact_edit_does_not_mention_loose(root: Path, tools: FileTools) -> None:
    (root / "m.py").write_text("a = 1\n")
    assert "loose" not in tools.edit_file("m.py", "a = 1", "a = 2")


def test_loose_deletion_of_whole_lines_takes_their_line_breaks(
    root: Path, tools: FileTools
) -> None:
    (root / "m.py").write_text("def f():\n    x = 1\n    debug(x)\n    return x\n")
    tools.edit_file("m.py", "\tdebug(x)\n", "")
    assert (root / "m.py").read_text() == "def f():\n    x = 1\n    return x\n"


def test_loose_match_keeps_crlf_and_deeper_new_lines(root: Path, tools: FileTools) -> None:
    (root / "w.py").write_bytes(b"def f():\r\n\tif a:\r\n\t\tgo()\r\n")
    tools.edit_file("w.py", "if a:\n    go()", "if a:\n    go()\n    if b:\n        stop()")
    assert (root / "w.py").read_bytes() == (
        b"def f():\r\n\tif a:\r\n\t\tgo()\r\n\t\tif b:\r\n\t\t\tstop()\r\n"
    )


def test_ambiguous_loose_match_names_each_line_and_writes_nothing(
    root: Path, tools: FileTools
) -> None:
    original = "if a:\n    y = 0\nif b:\n        y = 0\n"
    (root / "m.py").write_text(original)
    with pytest.raises(ToolError, match=r"matches 2 places .*\(lines 2, 4\)"):
        tools.edit_file("m.py", "y  = 0", "y = 1")
    assert (root / "m.py").read_text() == original


@pytest.mark.parametrize("old", ["", " ", "\n\n", "\t \n"])
def test_empty_or_whitespace_old_text_is_refused_with_what_to_do(
    root: Path, tools: FileTools, old: str
) -> None:
    (root / "m.py").write_text("a = 1\n\n")
    with pytest.raises(ToolError, match="Put an existing line") as caught:
        tools.edit_file("m.py", old, "b = 2\n")
    assert "write_file" in str(caught.value)
    assert (root / "m.py").read_text() == "a = 1\n\n"


def test_not_found_quotes_the_closest_region_verbatim(root: Path, tools: FileTools) -> None:
    body = "".join(f"value_{n} = {n}\n" for n in range(1, 200))
    (root / "m.py").write_text(body.replace("value_120 = 120", "value_120 = compute(120)"))
    with pytest.raises(ToolError) as caught:
        tools.edit_file("m.py", "value_119 = 119\nvalue_120 = 120\n", "x")
    message = str(caught.value)
    assert "   119| value_119 = 119\n   120| value_120 = compute(120)" in message
    assert "line 120: you wrote 'value_120 = 120', file has 'value_120 = compute(120)'" in message


def test_nothing_close_says_so() -> None:
    with pytest.raises(ToolError, match="nothing in it is close"):
        replace_once("alpha\nbeta\n", "completely different words", "x", where="f")


def test_closest_region_is_quick_on_a_long_file() -> None:
    text = "".join(f"    result_{n} = transform(item_{n}, weight={n})\n" for n in range(5000))
    old = "".join(f"    result_{n} = transfrom(item_{n}, weight={n})\n" for n in range(2500, 2510))
    began = time.perf_counter()
    found = closest_region(text, old)
    assert found is not None and found[0] == 2501
    assert time.perf_counter() - began < 5

"""Edits shown as changes (#39): the live view prints each ``edit_file``/``write_file`` as it
happens, under the call's line, as a few ``- ``/``+ `` lines indented by spaces, capped with
"… N more"; in colour on a terminal, plain under ``NO_COLOR`` and in a pipe; never the raw
arguments, whatever the model sent (a call written as text, a missing argument, escapes,
bidi overrides, bytes that are not UTF-8, a huge text, a secret).

Real runs: ``localhand run`` in a pseudo-terminal (and through pipes) against FakeOllama over a
real socket; ``changed`` itself is checked on generated pairs of texts."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cli_helpers import localhand
from localhand.cli.diffview import LIVE_LINE_CHARS, changed
from localhand.store.run_diff import MAX_FILE_BYTES, file_diff, read_now
from localhand.testing import FakeOllama
from pty_helpers import Terminal, screen_lines
from workspaces import workspace_with

pytestmark = pytest.mark.timeout(120)
CALC = "def add(a, b):\n    return a - b\n\n\ndef multiply(a, b):\n    return a * b\n"
INDENT = " " * 8
DIFF_LINE = re.compile(rf"^{INDENT}[-+] ")
TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"content": "", "tool_calls": [{"function": {"name": name, "arguments": arguments}}]}


def as_text(name: str, **arguments: Any) -> dict[str, Any]:
    """A call written in the reply's text (Hermes style), as models without native calls do."""
    body = json.dumps({"name": name, "arguments": arguments})
    return {"content": f"<tool_call>\n{body}\n</tool_call>"}


EDITS = [
    call("edit_file", path="calc.py", old_text="return a - b", new_text="return a + b"),
    call("write_file", path="notes.txt", content="".join(f"note {n}\n" for n in range(20))),
    as_text("write_file", path="old.txt", content="one\n2\nthree\nfour\n"),
    call("edit_file", path="calc.py", new_text="x"),  # no old_text: the tool refuses it
    call("list_directory", path="."),
    {"content": "Done."},
]


def workspace(tmp_path: Path) -> Path:
    return workspace_with(tmp_path / "ws", {"calc.py": CALC, "old.txt": "one\ntwo\nthree\n"})


def colours(raw: str) -> set[str]:
    """The colour parameters of the SGR sequences in ``raw`` (30-38, 40-48, 90-97, 100-107)."""
    found = set()
    for params in re.findall(r"\x1b\[([0-9;]*)m", raw):
        found |= {p for p in params.split(";") if re.fullmatch(r"3[0-8]|4[0-8]|9[0-7]|10[0-7]", p)}
    return found


def blocks(plain: str) -> dict[str, list[str]]:
    """Each tool line's first words (``✓ edit_file calc.py``) and the diff lines right under it."""
    out: dict[str, list[str]] = {}
    current = None
    for line in screen_lines(plain):
        if "│ ✓ " in line or "│ ✗ " in line:
            current = " ".join(line.split("│", 1)[1].split()[:3])
            out.setdefault(current, [])
        elif current and (DIFF_LINE.match(line) or line.startswith(INDENT + "…")):
            out[current].append(line)
        elif line.strip():
            current = None
    return out


@pytest.mark.parametrize("no_color", [False, True], ids=["colour", "NO_COLOR"])
def test_a_terminal_shows_each_edit_as_its_lines(tmp_path: Path, no_color: bool) -> None:
    ws = workspace(tmp_path)
    with FakeOllama(EDITS, models={"qwen3:8b": {}}) as server:
        env = {"OLLAMA_HOST": server.url, **({"NO_COLOR": "1"} if no_color else {})}
        args = ("run", "fix calc", "-w", str(ws), "--model", "qwen3:8b", "--sandbox", "off")
        terminal = Terminal(*args, cwd=tmp_path, columns=80, env=env)
        try:
            assert terminal.wait() == 3, terminal.plain()
        finally:
            terminal.close()
    plain, raw = terminal.plain(), terminal.output
    shown = blocks(plain)
    assert shown["✓ edit_file calc.py"] == [
        f"{INDENT}-     return a - b",
        f"{INDENT}+     return a + b",
    ]
    notes = [f"{INDENT}+ note {n}" for n in range(6)] + [f"{INDENT}… 14 more"]
    assert shown["✓ write_file notes.txt"] == notes
    # written as text, over a file that was there: the difference from what was there
    assert shown["✓ write_file old.txt"] == [f"{INDENT}- two", f"{INDENT}+ 2", f"{INDENT}+ four"]
    assert shown["✗ edit_file calc.py"] == []  # refused: no lines, and no arguments either
    assert shown["✓ list_directory ."] == []  # other tools keep their one line
    assert '{"path"' not in plain and "old_text" not in plain.split("■")[0]
    # as it happens: every change is printed before the run's closing lines
    assert plain.index("+ note 5") < plain.index("■ unverified")
    diff_raw = [line for line in raw.splitlines() if "- two" in line or "+ 2" in line]
    assert len(diff_raw) == 2, raw
    if no_color:
        assert not colours(raw), raw
    else:
        assert "31" in colours(diff_raw[0]) and "32" in colours(diff_raw[1]), diff_raw


HOSTILE = "title\x1b]0;pwned\x07\n\x1b[2Jclear\n\x9b31mred\n\u202eevil.exe\rover\n"
ODD = [
    call("write_file", path="evil.txt", content=HOSTILE),
    call("write_file", path="legacy.txt", content="café\nnew\n"),
    call("write_file", path="long.txt", content="y" * 100_000 + "\n"),
    call("write_file", path="big.txt", content=("x" * 99 + "\n") * (MAX_FILE_BYTES // 100 + 1)),
    call("write_file", path="conf.py", content=f"TOKEN = '{TOKEN}'\n"),
    call("write_file", path=".env", content="PASSWORD=hunter2hunter2\n"),
    call("edit_file", path="calc.py", old_text="return a * b", new_text="return a * b\n" * 50),
    call("list_directory", path="\x1b[2J\u202e"),  # another tool's argument: inert too
    {"content": "Done."},
]


def test_odd_arguments_neither_crash_nor_spoof_the_view(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    (ws / "legacy.txt").write_bytes(b"caf\xe9\nold\n")  # Latin-1: not UTF-8
    with FakeOllama(ODD, models={"qwen3:8b": {}}) as server:
        done = localhand(
            "run", "odd", "-w", str(ws), "--model", "qwen3:8b", "--sandbox", "off",
            "--max-reply-tokens", "1000000", host=server.url, cwd=tmp_path,
        )  # fmt: skip
    err = done.stderr
    assert done.returncode == 3, err
    assert "list_directory \\x1b[2J\\u202e → " in err
    for control in ("\x1b", "\x9b", "\x07", "\u202e", "\r"):
        assert control not in err
    shown = blocks(err)
    assert shown["✓ write_file evil.txt"][:2] == [
        f"{INDENT}+ title\\x1b]0;pwned\\x07",
        f"{INDENT}+ \\x1b[2Jclear",
    ]
    assert f"{INDENT}+ \\u202eevil.exe" in shown["✓ write_file evil.txt"]
    assert shown["✓ write_file legacy.txt"] == []  # not UTF-8 before: its line alone
    assert shown["✓ write_file long.txt"] == [f"{INDENT}+ " + "y" * (LIVE_LINE_CHARS - 2)]
    assert shown["✓ write_file big.txt"] == []  # too large to read back: its line alone
    assert TOKEN not in err and shown["✓ write_file conf.py"] == [
        f"{INDENT}+ TOKEN = 'ghp_[REDACTED]'"
    ]
    assert shown["✓ write_file .env"] == [] and "hunter2" not in err  # a secret file: unread
    # the live lines of the edit count what the end-of-run summary counts for the file
    more = re.fullmatch(rf"{INDENT}… (\d+) more", shown["✓ edit_file calc.py"][-1])
    counts = re.search(r"^  calc\.py +\+(\d+) -(\d+)$", err, re.M)
    assert more and counts, err
    assert 6 + int(more[1]) == int(counts[1]) + int(counts[2]) > 40
    assert all(len(line) < 400 for line in err.splitlines()[:-12]), "no line runs on"
    # `show` replays the timeline: an edit is its path there too, never its arguments' JSON
    replayed = localhand("show", "last", cwd=tmp_path).stdout
    assert re.search(r"✓ write_file evil\.txt → Created", replayed), replayed
    assert '{"path"' not in replayed


def test_json_output_reads_no_file_for_a_view(tmp_path: Path) -> None:
    """``--json`` has no view: the tools are not wrapped, and stderr has no diff lines."""
    ws = workspace(tmp_path)
    with FakeOllama(EDITS, models={"qwen3:8b": {}}) as server:
        done = localhand(
            "run", "fix", "-w", str(ws), "--model", "qwen3:8b", "--sandbox", "off", "--json",
            host=server.url, cwd=tmp_path,
        )  # fmt: skip
    assert json.loads(done.stdout.splitlines()[-1])["files_modified"] == [
        "calc.py",
        "notes.txt",
        "old.txt",
    ]
    assert not [line for line in done.stderr.splitlines() if DIFF_LINE.match(line)]


ABSENT = read_now(Path("/"), "no such file here")
"""What ``read_now`` gives for a file that is not there (a new file's before)."""
TEXTS = st.lists(st.sampled_from(["a", "b", "c", "", "  d", "\td"]), max_size=30)


def is_subsequence(part: list[str], whole: list[str]) -> bool:
    remaining = iter(whole)
    return all(any(line == item for item in remaining) for line in part)


@settings(max_examples=300, deadline=None)
@given(TEXTS, TEXTS, st.booleans())
def test_changed_lines_are_a_diff_of_the_two_texts(
    old: list[str], new: list[str], created: bool
) -> None:
    before = "".join(f"{line}\n" for line in old).encode()
    after = "".join(f"{line}\n" for line in new).encode()
    diff = file_diff("f.txt", ABSENT if created and not old else before, after)
    assert diff is not None
    lines = changed(diff)
    removed = [line[2:] for line in lines if line.startswith("- ")]
    added = [line[2:] for line in lines if line.startswith("+ ")]
    assert len(removed) + len(added) == len(lines)
    tabs = (
        [line.replace("\t", "    ") for line in old],
        [line.replace("\t", "    ") for line in new],
    )
    assert is_subsequence(removed, tabs[0]) and is_subsequence(added, tabs[1])
    assert len(old) - len(removed) == len(new) - len(added)  # the rest kept, on both sides
    assert (lines == []) == (old == new)

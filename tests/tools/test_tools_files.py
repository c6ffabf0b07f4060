"""The file tools: what they show, what they refuse, and the limits that keep outputs small."""

from __future__ import annotations

import errno
import os
import re
import socket
import stat
import threading
import time
from pathlib import Path

import pytest

from localhand.errors import ToolError
from localhand.tools import FileTools, ShellTool, ToolLimits, Workspace, default_tools, fsio
from localhand.tools.deadline import deadline
from localhand.tools.files import reports_writes
from localhand.tools.fsio import READ_FLAGS, as_regular
from localhand.types import ToolCall


def small(root: Path, **limits: int) -> FileTools:
    return FileTools(Workspace(root), ToolLimits(**limits))


def leftovers(directory: Path) -> list[str]:
    return sorted(name for name in os.listdir(directory) if name.endswith(".tmp"))


# read_file


def test_read_numbers_lines(root: Path, tools: FileTools) -> None:
    (root / "a.py").write_text("def f():\n    return 1\n")
    assert tools.read_file("a.py") == "    1| def f():\n    2|     return 1"


def test_read_a_range_says_which_lines_of_how_many(root: Path, tools: FileTools) -> None:
    (root / "a.txt").write_text("".join(f"l{n}\n" for n in range(1, 11)))
    assert tools.read_file("a.txt", 3, 4) == "    3| l3\n    4| l4\n[Lines 3-4 of 10.]"
    assert tools.read_file("a.txt", start_line=9) == "    9| l9\n   10| l10\n[Lines 9-10 of 10.]"
    assert tools.read_file("a.txt", end_line=99).endswith("   10| l10")  # clamped, whole file


def test_read_truncates_at_the_line_cap_and_says_how_to_go_on(root: Path) -> None:
    (root / "big.txt").write_text("".join(f"l{n}\n" for n in range(1, 26)))
    tools = small(root, read_max_lines=10)
    first = tools.read_file("big.txt")
    assert first.splitlines()[-2] == "   10| l10"
    assert first.splitlines()[-1] == (
        "[Showing lines 1-10 of 25. To read more, call read_file with start_line=11.]"
    )
    second = tools.read_file("big.txt", start_line=11)
    assert second.splitlines()[0] == "   11| l11"
    assert "start_line=21" in second


def test_read_truncates_at_the_byte_cap(root: Path) -> None:
    (root / "wide.txt").write_text(("x" * 90 + "\n") * 50)
    out = small(root, read_max_bytes=1000).read_file("wide.txt")
    assert len(out) < 1200
    assert "of 50. To read more, call read_file with start_line=" in out


def test_read_cuts_very_long_lines(root: Path) -> None:
    (root / "min.js").write_text("a" * 5000 + "\nnext\n")
    out = small(root, read_max_line_chars=100).read_file("min.js")
    assert out == f"    1| {'a' * 100}… [4,900 more bytes in this line]\n    2| next"


def test_read_handles_crlf_and_a_missing_final_newline(root: Path, tools: FileTools) -> None:
    (root / "w.txt").write_bytes(b"one\r\ntwo\r\nthree")
    assert tools.read_file("w.txt") == "    1| one\n    2| two\n    3| three"
    assert tools.read_file("w.txt", 3, 3) == "    3| three\n[Lines 3-3 of 3.]"


def test_read_non_utf8_uses_replacement_characters(root: Path, tools: FileTools) -> None:
    (root / "latin.txt").write_bytes(b"ok\ncaf\xe9\n")
    assert tools.read_file("latin.txt") == (
        "    1| ok\n    2| caf\ufffd\n[Note: 'latin.txt' is not valid UTF-8 (from line 2); bytes "
        "that are not are shown as \ufffd. edit_file keeps them as they are outside the text it "
        "replaces.]"
    )


def test_read_describes_binary_files(root: Path, tools: FileTools) -> None:
    (root / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0" + bytes(2000))
    assert tools.read_file("img.png") == (
        "'img.png' is a binary file (a PNG image, 2,011 bytes); not shown."
    )
    (root / "blob").write_bytes(b"\x01\x02\0")
    assert tools.read_file("blob") == "'blob' is a binary file (binary data, 3 bytes); not shown."


def test_read_empty_file(root: Path, tools: FileTools) -> None:
    (root / "e.txt").write_text("")
    assert tools.read_file("e.txt") == "'e.txt' is empty."


def test_read_missing_file_suggests_list_directory(root: Path, tools: FileTools) -> None:
    (root / "main.py").write_text("")
    with pytest.raises(ToolError) as caught:
        tools.read_file("mian.py")
    assert str(caught.value) == (
        "'mian.py' does not exist; use list_directory to see what is there. Did you mean 'main.py'?"
    )
    with pytest.raises(ToolError, match="use list_directory"):
        tools.read_file("nope/deeper.py")


def test_read_a_directory_is_refused(root: Path, tools: FileTools) -> None:
    (root / "src").mkdir()
    with pytest.raises(ToolError, match="'src' is a directory; use list_directory"):
        tools.read_file("src")


@pytest.mark.parametrize(
    ("start", "end", "message"),
    [
        (0, None, "start_line must be 1 or more"),
        (None, 0, "end_line must be 1 or more"),
        (5, 2, "end_line 2 is before start_line 5"),
        (7, None, "start_line 7 is past the end of 'a.txt', which has 3 lines"),
    ],
)
def test_read_bad_ranges(
    root: Path, tools: FileTools, start: int | None, end: int | None, message: str
) -> None:
    (root / "a.txt").write_text("1\n2\n3\n")
    with pytest.raises(ToolError, match=message):
        tools.read_file("a.txt", start, end)


def test_read_outside_the_workspace_is_refused(root: Path, tools: FileTools) -> None:
    (root.parent / "secret").write_text("s")
    (root / "link").symlink_to(root.parent / "secret")
    for path in ("../secret", str(root.parent / "secret"), "link"):
        with pytest.raises(ToolError, match="outside the workspace"):
            tools.read_file(path)


def test_read_a_fifo_is_refused_without_blocking(root: Path, tools: FileTools) -> None:
    os.mkfifo(root / "pipe")
    with pytest.raises(ToolError, match="not a regular file"):
        tools.read_file("pipe")


# write_file


def test_write_creates_parents_and_reports_size(root: Path, tools: FileTools) -> None:
    assert tools.write_file("a/b/c.txt", "hé\nthere") == "Created 'a/b/c.txt': 9 bytes, 2 lines."
    assert (root / "a/b/c.txt").read_text() == "hé\nthere"
    assert tools.write_file("a/b/c.txt", "x\n") == "Overwrote 'a/b/c.txt': 2 bytes, 1 line."
    assert leftovers(root / "a/b") == []


def test_write_preserves_the_mode_of_an_existing_file(root: Path, tools: FileTools) -> None:
    script = root / "run.sh"
    script.write_text("echo old\n")
    script.chmod(0o750)
    tools.write_file("run.sh", "echo new\n")
    assert stat.S_IMODE(script.stat().st_mode) == 0o750
    assert script.read_text() == "echo new\n"


def test_write_new_file_gets_the_umask_mode(root: Path, tools: FileTools) -> None:
    umask = os.umask(0o022)
    try:
        tools.write_file("new.txt", "x")
    finally:
        os.umask(umask)
    assert stat.S_IMODE((root / "new.txt").stat().st_mode) == 0o644


def test_failed_write_leaves_the_original_and_no_temp_file(
    root: Path, tools: FileTools, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = b"keep me\x00\xff exactly\n"
    (root / "f.bin").write_bytes(original)

    def broken_replace(src: object, dst: object, **dir_fds: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(
        ToolError, match=re.escape("could not write 'f.bin': No space left on device")
    ):
        tools.write_file("f.bin", "new content")
    assert (root / "f.bin").read_bytes() == original
    assert os.listdir(root) == ["f.bin"]


def test_write_through_a_symlink_inside_keeps_the_link(root: Path, tools: FileTools) -> None:
    (root / "real.txt").write_text("old")
    (root / "alias.txt").symlink_to("real.txt")
    assert tools.write_file("alias.txt", "new") == "Overwrote 'real.txt': 3 bytes, 1 line."
    assert (root / "alias.txt").is_symlink()
    assert (root / "real.txt").read_text() == "new"


def test_writes_are_recorded_with_their_real_paths(root: Path, tools: FileTools) -> None:
    (root / "real.txt").write_text("old")
    (root / "alias.txt").symlink_to("real.txt")
    real = root.resolve()
    tools.write_file("alias.txt", "new")
    tools.write_file("sub/new.py", "x = 1\n")
    tools.edit_file("sub/new.py", old_text="x = 1", new_text="x = 2")
    with pytest.raises(ToolError):
        tools.edit_file("sub/new.py", old_text="absent", new_text="y")
    with pytest.raises(ToolError):
        tools.write_file("../escape.txt", "x")
    tools.read_file("real.txt")
    assert tools.take_written() == {real / "real.txt", real / "sub/new.py"}
    assert tools.take_written() == set()


def test_only_the_file_tools_own_writers_report_their_writes(root: Path) -> None:
    space = Workspace(root)

    class Overridden(FileTools):
        def write_file(self, path: str, content: str) -> str:
            return super().write_file(path, content)

    class OtherWrite(FileTools):
        def _write(self, target: Path, rel: str, data: bytes) -> None:
            super()._write(target, rel, data)

    plain, shell = FileTools(space), ShellTool(space)
    assert reports_writes(plain.write_file) and reports_writes(plain.edit_file)
    assert not reports_writes(plain.read_file)  # reads go by name: they write nothing
    assert not reports_writes(shell.run_command)
    assert not reports_writes(Overridden(space).write_file)
    assert reports_writes(Overridden(space).edit_file)
    assert not reports_writes(OtherWrite(space).edit_file)
    assert not reports_writes(lambda path, content: None)


def test_write_refuses_directories_and_escapes(root: Path, tools: FileTools) -> None:
    (root / "d").mkdir()
    with pytest.raises(ToolError, match="'d' is a directory"):
        tools.write_file("d", "x")
    with pytest.raises(ToolError, match="outside the workspace"):
        tools.write_file("../escape.txt", "x")
    assert not (root.parent / "escape.txt").exists()


def test_write_below_a_file_is_a_clear_error(root: Path, tools: FileTools) -> None:
    (root / "file").write_text("")
    with pytest.raises(ToolError, match=re.escape("could not write 'file/x.txt'")):
        tools.write_file("file/x.txt", "x")


# edit_file


def test_edit_replaces_the_single_match(root: Path, tools: FileTools) -> None:
    (root / "m.py").write_text("def add(a, b):\n    return a - b\n")
    message = tools.edit_file("m.py", "return a - b", "return a + b")
    assert message == "Edited 'm.py' at line 2: replaced 1 line(s) with 1."
    assert (root / "m.py").read_text() == "def add(a, b):\n    return a + b\n"
    assert leftovers(root) == []


def refused_edit(root: Path, tools: FileTools, text: str, old: str, new: str) -> str:
    """Why edit_file refuses to replace ``old`` by ``new`` in ``m.py`` holding ``text``."""
    (root / "m.py").write_text(text)
    with pytest.raises(ToolError) as caught:
        tools.edit_file("m.py", old, new)
    return str(caught.value)


def test_edit_zero_matches_says_so(root: Path, tools: FileTools) -> None:
    assert refused_edit(root, tools, "x = 1\n", "unrelated words", "y = 3") == (
        "old_text was not found in 'm.py'; nothing in it is close. Read the file again and copy "
        "the exact text"
    )


def test_edit_applies_a_unique_whitespace_insensitive_match_as_loose(
    root: Path, tools: FileTools
) -> None:
    (root / "m.py").write_text("a = 0\n\ndef f():\n    if x:\n        return 1\n")
    message = tools.edit_file("m.py", "if x:\n  return 1", "if x:\n  return 2")
    assert message.startswith("Edited 'm.py' at line 4") and "loosely" in message
    assert (root / "m.py").read_text() == "a = 0\n\ndef f():\n    if x:\n        return 2\n"


def test_edit_zero_matches_quotes_the_closest_lines(root: Path, tools: FileTools) -> None:
    (root / "m.py").write_text("a = 1\nb = 2\nc = 3\n")
    with pytest.raises(ToolError, match="closest text is at lines 2-3") as caught:
        tools.edit_file("m.py", "b = 2\nc = 4", "b = 2\nc = 5")
    assert "     2| b = 2\n     3| c = 3\n" in str(caught.value)


def test_edit_hints_when_line_number_prefixes_were_copied(root: Path, tools: FileTools) -> None:
    (root / "m.py").write_text("a = 1\n")
    with pytest.raises(ToolError, match="leave those prefixes out"):
        tools.edit_file("m.py", "    1| a = 1", "a = 2")


def test_edit_several_matches_says_how_many_and_where(root: Path, tools: FileTools) -> None:
    refusal = refused_edit(root, tools, "x = 1\ny = 2\nx = 1\n\nx = 1\n", "x = 1", "x = 9")
    assert refusal == (
        "old_text occurs 3 times in 'm.py' (at lines 1, 3, 5); include more of the surrounding "
        "lines in old_text so that it matches exactly once"
    )
    assert (root / "m.py").read_text() == "x = 1\ny = 2\nx = 1\n\nx = 1\n"


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [("", "x", "old_text is empty"), ("same", "same", "nothing to change")],
)
def test_edit_refuses_empty_and_no_op_edits(
    root: Path, tools: FileTools, old: str, new: str, message: str
) -> None:
    (root / "m.py").write_text("same\n")
    with pytest.raises(ToolError, match=message):
        tools.edit_file("m.py", old, new)


def test_edit_matches_lf_text_in_a_crlf_file(root: Path, tools: FileTools) -> None:
    (root / "w.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    tools.edit_file("w.txt", "one\ntwo", "1\n2")
    assert (root / "w.txt").read_bytes() == b"1\r\n2\r\nthree\r\n"


def test_edit_keeps_bytes_that_are_not_utf8(root: Path, tools: FileTools) -> None:
    (root / "l.txt").write_bytes(b"caf\xe9\nold\n")
    tools.edit_file("l.txt", "old", "new")
    assert (root / "l.txt").read_bytes() == b"caf\xe9\nnew\n"


def test_edit_refuses_binary_and_missing_files(root: Path, tools: FileTools) -> None:
    (root / "b.bin").write_bytes(b"a\0b")
    with pytest.raises(ToolError, match="binary"):
        tools.edit_file("b.bin", "a", "c")
    with pytest.raises(ToolError, match="does not exist"):
        tools.edit_file("missing.py", "a", "c")


def test_failed_edit_leaves_the_original(
    root: Path, tools: FileTools, monkeypatch: pytest.MonkeyPatch
) -> None:
    (root / "m.py").write_text("x = 1\n")

    def broken_replace(src: object, dst: object, **dir_fds: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(ToolError, match="Permission denied"):
        tools.edit_file("m.py", "x = 1", "x = 2")
    assert (root / "m.py").read_text() == "x = 1\n"
    assert os.listdir(root) == ["m.py"]


# list_directory


def test_list_sorts_directories_first_and_skips_noise(root: Path, tools: FileTools) -> None:
    for name in ("src", "docs", ".git", "__pycache__", "node_modules", ".venv"):
        (root / name).mkdir()
    for name in ("b.py", "A.md", ".env"):
        (root / name).write_text("")
    assert tools.list_directory() == "docs/\nsrc/\n.env\nA.md\nb.py"
    assert tools.list_directory("src") == "'src' is empty."


def test_list_caps_the_number_of_entries(root: Path) -> None:
    for n in range(15):
        (root / f"f{n:02}.txt").write_text("")
    out = small(root, list_max_entries=10).list_directory(".")
    assert out.splitlines()[-2:] == ["f09.txt", "[... 5 more entries not shown]"]


def test_list_refuses_files_missing_paths_and_escapes(root: Path, tools: FileTools) -> None:
    (root / "a.txt").write_text("")
    with pytest.raises(
        ToolError, match=re.escape("'a.txt' is a file, not a directory; use read_file")
    ):
        tools.list_directory("a.txt")
    with pytest.raises(ToolError, match="does not exist"):
        tools.list_directory("nowhere")
    with pytest.raises(ToolError, match="outside the workspace"):
        tools.list_directory("..")


# search_files


@pytest.fixture
def tree(root: Path) -> Path:
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("import os\n\ndef main():\n    return os.getcwd()\n")
    (root / "src" / "util.py").write_text("def helper():\n    pass\n")
    (root / "README.md").write_text("Run main() to start.\n")
    for ignored in (".git", "node_modules", "__pycache__", ".venv"):
        (root / ignored).mkdir()
        (root / ignored / "x.py").write_text("def main(): pass\n")
    (root / "blob.bin").write_bytes(b"def main\0\0")
    return root


def test_search_prints_path_line_text(tree: Path, tools: FileTools) -> None:
    assert (
        tools.search_files(r"def \w+\(")
        == "src/app.py:3: def main():\nsrc/util.py:1: def helper():"
    )
    assert tools.search_files("main", path="README.md") == "README.md:1: Run main() to start."


def test_search_invalid_regex_falls_back_to_literal(tree: Path, tools: FileTools) -> None:
    out = tools.search_files("main(")
    assert out.splitlines()[0].startswith("['main(' is not a valid regex (")
    assert out.splitlines()[0].endswith("; searched for it as literal text.]")
    assert out.splitlines()[1:] == [
        "README.md:1: Run main() to start.",
        "src/app.py:3: def main():",
    ]


def test_search_no_matches(tree: Path, tools: FileTools) -> None:
    assert (
        tools.search_files("nothing_here", path="src") == "No matches for 'nothing_here' in 'src'."
    )


def test_search_caps_results_with_a_note(root: Path, tools: FileTools) -> None:
    (root / "many.txt").write_text("hit\n" * 30)
    out = tools.search_files("hit", max_results=5)
    lines = out.splitlines()
    assert lines[:5] == [f"many.txt:{n}: hit" for n in range(1, 6)]
    assert lines[5] == "[Stopped at 5 matches; use a narrower pattern or path to see more.]"
    assert len(lines) == 6


def test_search_max_results_is_bounded(root: Path) -> None:
    (root / "many.txt").write_text("hit\n" * 30)
    out = small(root, search_max_results=3).search_files("hit", max_results=1000)
    assert out.count("\n") == 3
    assert len(small(root).search_files("hit", max_results=0).splitlines()) == 2


def test_search_clips_long_lines(root: Path) -> None:
    (root / "long.txt").write_text("needle " + "x" * 500 + "\n")
    out = small(root, search_max_line_chars=20).search_files("needle")
    assert out == "long.txt:1: needle xxxxxxxxxxxxx…"


def test_search_skips_large_files_and_outside_symlinks(root: Path, tmp_path: Path) -> None:
    (root / "big.txt").write_text("needle\n" + "x" * 2000)
    (tmp_path / "secret.txt").write_text("needle\n")
    (root / "leak.txt").symlink_to(tmp_path / "secret.txt")
    (root / "ok.txt").write_text("needle\n")
    out = small(root, search_max_file_bytes=1000).search_files("needle")
    assert out == "ok.txt:1: needle"


def test_search_anchors_work_per_line(root: Path, tools: FileTools) -> None:
    (root / "a.txt").write_text("x foo\nfoo y\n")
    assert tools.search_files("^foo") == "a.txt:2: foo y"
    assert tools.search_files(r"\Afoo") == "a.txt:2: foo y"


@pytest.mark.parametrize(
    "pattern",
    [
        r"\s+foo",
        r"a.b",
        r"^$",
        r"x*",
        r"foo$",
        r"^\s*def\b",
        r"[^x]+y",
        r"o\no",
        r"(?m)^b",
        r"\Afoo",
        r"bar\Z",
        r"\d{2,}",
        "foo",
        r"a\.b",
        "^foo",
        "o.$",
    ],
)
def test_search_finds_exactly_the_lines_a_line_by_line_search_finds(
    root: Path, pattern: str
) -> None:
    text = "foo\n  foo bar\n\na_b axb\nxy\n    def f():\nbar 12\nfoo\nb\n"
    (root / "t.txt").write_text(text)
    expected = [
        f"t.txt:{number}: {line.strip()}"
        for number, line in enumerate(text.split("\n"), 1)
        if re.search(pattern, line)
    ]
    out = small(root, search_max_results=200).search_files(pattern, max_results=200)
    assert out.splitlines() == (expected or [f"No matches for {pattern!r} in '.'."])


def test_only_a_pattern_that_may_backtrack_goes_to_the_regex_module() -> None:
    from localhand.tools.search import _compiled, _Linear

    for plain in ("def low_stock", "self.name", "^import os$", r"call\(x\)", "a.b"):
        assert all(isinstance(p, _Linear) for p in _compiled(plain)[:2]), plain
    for timed in ("(a|aa)+$", "a+", "x{2}", "[ab]", r"\bfoo", "a|b", r"\Afoo", "(?i)foo"):
        assert not isinstance(_compiled(timed)[0], _Linear), timed


BACKTRACKING = ("a" * 40 + "b\n") * 20
"""Lines on which a pattern like (a|aa)+$ tries about 2**40 ways before it fails."""


def test_search_with_a_pattern_python_re_never_finishes_returns_in_time(root: Path) -> None:
    (root / "a.txt").write_text(BACKTRACKING)
    tools = small(root, search_timeout_ms=1000)
    started = time.monotonic()
    # (a+)+$ hangs the re module here; the regex module sees through it and answers at once.
    assert tools.search_files("(a+)+$") == "No matches for '(a+)+$' in '.'."
    with pytest.raises(ToolError) as caught:
        tools.search_files("(a|aa)+$")
    assert time.monotonic() - started < 3
    assert str(caught.value) == (
        "search_files stopped after 1.0 s: the pattern '(a|aa)+$' takes too long to match (it "
        "was matching 'a.txt'). Simplify it: nested repetition such as (a+)+ or (a|aa)+ makes "
        "the regex engine try exponentially many ways; or search a narrower path"
    )


def test_search_ends_with_the_tasks_wall_clock(root: Path) -> None:
    (root / "a.txt").write_text(BACKTRACKING)
    tools = small(root, search_timeout_ms=60_000)
    started = time.monotonic()
    with deadline(started + 0.3), pytest.raises(ToolError, match=r"stopped after 0\.3 s"):
        tools.search_files("(a|aa)+$")
    assert time.monotonic() - started < 2


def test_a_backtracking_search_does_not_hold_up_other_threads(root: Path) -> None:
    """The dashboard and the wall clock run in other threads: they must not wait for it."""
    (root / "a.txt").write_text(BACKTRACKING)
    tools = small(root, search_timeout_ms=600)
    ticks = 0
    stop = threading.Event()

    def tick() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            time.sleep(0.001)

    ticker = threading.Thread(target=tick)
    ticker.start()
    try:
        with pytest.raises(ToolError, match="takes too long"):
            tools.search_files("(a|aa)+$")
    finally:
        stop.set()
        ticker.join()
    assert ticks > 100  # about 600 if it ran all along; a held GIL would give a handful


def test_search_refuses_missing_paths_and_escapes(root: Path, tools: FileTools) -> None:
    with pytest.raises(ToolError, match="does not exist"):
        tools.search_files("x", path="nowhere")
    with pytest.raises(ToolError, match="outside the workspace"):
        tools.search_files("x", path="/")
    with pytest.raises(ToolError, match="pattern is empty"):
        tools.search_files("")


# through the registry, as the model calls them


def test_model_style_calls_through_the_registry(root: Path) -> None:
    (root / "a.txt").write_text("1\n2\n3\n")
    registry = default_tools(root)
    result = registry.execute(ToolCall("read_file", {"path": "a.txt", "start_line": "2"}))
    assert result.ok
    assert result.content == "    2| 2\n    3| 3\n[Lines 2-3 of 3.]"
    refused = registry.execute(ToolCall("read_file", {"path": "../etc"}))
    assert not refused.ok
    assert "outside the workspace" in refused.content


# file safety: special files, atomic writes under failure, caps, encodings


def hidden_and_all(directory: Path) -> list[str]:
    return sorted(os.listdir(directory))


def test_sockets_and_fifos_are_refused_without_blocking(root: Path, tools: FileTools) -> None:
    os.mkfifo(root / "pipe")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(root / "sock"))
    try:
        with pytest.raises(ToolError) as caught:
            tools.read_file("sock")
        assert str(caught.value) == "'sock' is a socket, not a regular file; it was not opened"
        with pytest.raises(ToolError, match=r"'pipe' is a FIFO \(named pipe\), not a regular"):
            tools.edit_file("pipe", "a", "b")
        with pytest.raises(ToolError) as caught:
            tools.write_file("pipe", "x")
        assert str(caught.value) == (
            "'pipe' is a FIFO (named pipe); only regular files can be written"
        )
        assert stat.S_ISFIFO(os.stat(root / "pipe").st_mode)
        (root / "a.txt").write_text("needle\n")
        assert tools.search_files("needle") == "a.txt:1: needle"  # walks past both
    finally:
        server.close()


def test_as_regular_refuses_a_fifo_swapped_in_after_the_check(root: Path) -> None:
    os.mkfifo(root / "late")
    with pytest.raises(OSError, match="not a regular file") as caught:
        as_regular(os.open(root / "late", READ_FLAGS), "late")
    assert caught.value.errno == errno.EINVAL


@pytest.mark.parametrize("unnamed", [True, False], ids=["O_TMPFILE", "named-temp"])
def test_disk_full_mid_write_leaves_the_original_and_nothing_else(
    root: Path, tools: FileTools, monkeypatch: pytest.MonkeyPatch, unnamed: bool
) -> None:
    original = b"keep me\x00\xff exactly\n" * 100
    (root / "f.txt").write_bytes(original)
    before = hidden_and_all(root)
    if not unnamed:
        monkeypatch.setattr(fsio, "_tmpfile_works", False)
    real_write = os.write
    calls: list[int] = []

    def full_disk(fd: int, data: bytes) -> int:
        calls.append(len(data))
        if len(calls) == 1:  # half of it fits, then the disk is full
            return real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", full_disk)
    with pytest.raises(ToolError) as caught:
        tools.write_file("f.txt", "new content " * 1000)
    monkeypatch.undo()
    assert str(caught.value) == "could not write 'f.txt': No space left on device"
    assert len(calls) == 2
    assert (root / "f.txt").read_bytes() == original
    assert hidden_and_all(root) == before


@pytest.mark.parametrize("failing", ["fchmod", "replace"])
def test_any_failure_leaves_the_original_and_no_temp_file(
    root: Path, tools: FileTools, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    (root / "m.py").write_text("x = 1\n")
    os.chmod(root / "m.py", 0o640)

    def broken(*args: object, **kwargs: object) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, failing, broken)
    with pytest.raises(ToolError, match=r"could not write 'm\.py': Input/output error"):
        tools.edit_file("m.py", "x = 1", "x = 2")
    monkeypatch.undo()
    assert (root / "m.py").read_text() == "x = 1\n"
    assert hidden_and_all(root) == ["m.py"]


def test_a_write_that_makes_no_progress_counts_as_disk_full(
    root: Path, tools: FileTools, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, "write", lambda fd, data: 0)
    with pytest.raises(ToolError, match="No space left on device"):
        tools.write_file("new.txt", "x")
    monkeypatch.undo()
    assert hidden_and_all(root) == []


def test_read_only_files_are_not_replaced(root: Path, tools: FileTools) -> None:
    (root / "locked.cfg").write_text("keep\n")
    os.chmod(root / "locked.cfg", 0o444)
    with pytest.raises(ToolError) as caught:
        tools.write_file("locked.cfg", "changed")
    assert str(caught.value) == (
        "'locked.cfg' is read-only (mode 444), so it was left as it is; if it really must "
        "change, make it writable with run_command first"
    )
    with pytest.raises(ToolError, match="is read-only"):
        tools.edit_file("locked.cfg", "keep", "changed")
    assert (root / "locked.cfg").read_text() == "keep\n"


def test_write_and_edit_sizes_are_capped(root: Path) -> None:
    tools = small(root, write_max_bytes=100)
    with pytest.raises(ToolError) as caught:
        tools.write_file("big.txt", "x" * 101)
    assert str(caught.value) == (
        "the new content of 'big.txt' is 101 bytes, more than the 100 allowed; write a smaller "
        "file, or generate a large one with a script"
    )
    assert not (root / "big.txt").exists()
    (root / "huge.txt").write_text("y" * 500)
    with pytest.raises(ToolError, match=r"'huge.txt' is 500 bytes, more than edit_file handles"):
        tools.edit_file("huge.txt", "y", "z")
    (root / "ok.txt").write_text("a" * 60)
    with pytest.raises(ToolError, match=r"the new content of 'ok\.txt' is 120 bytes"):
        tools.edit_file("ok.txt", "a" * 60, "b" * 120)
    assert (root / "ok.txt").read_text() == "a" * 60


def test_lines_of_a_huge_file_are_not_counted_to_the_end(root: Path) -> None:
    (root / "log.txt").write_text("line\n" * 5000)
    out = small(root, read_max_lines=2, read_count_max_bytes=1000).read_file("log.txt")
    assert out == (
        "    1| line\n    2| line\n[Showing lines 1-2 of a 25,000-byte file, too big to count. "
        "To read more, call read_file with start_line=3.]"
    )


def test_a_character_cut_by_the_line_cap_is_not_called_invalid(root: Path) -> None:
    (root / "wide.txt").write_text("ab€€€\n", encoding="utf-8")
    out = small(root, read_max_line_chars=4).read_file("wide.txt")
    assert out == "    1| ab… [9 more bytes in this line]"


def test_edit_explains_replacement_characters(root: Path, tools: FileTools) -> None:
    (root / "latin.txt").write_bytes(b"name = 'caf\xe9'\nother = 1\n")
    with pytest.raises(ToolError) as caught:
        tools.edit_file("latin.txt", "name = 'caf\ufffd'", "name = 'cafe'")
    assert str(caught.value).startswith("old_text contains \ufffd, which read_file shows")
    assert tools.edit_file("latin.txt", "other = 1", "other = 2").startswith("Edited")
    assert (root / "latin.txt").read_bytes() == b"name = 'caf\xe9'\nother = 2\n"


def test_a_lone_surrogate_from_json_is_written_as_a_question_mark(
    root: Path, tools: FileTools
) -> None:
    tools.write_file("s.txt", "a\ud800b")
    assert (root / "s.txt").read_bytes() == b"a?b"


def test_writes_are_synced_once_when_the_tools_close_not_each_time(
    root: Path, tools: FileTools, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[str] = []
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(os.readlink(f"/proc/self/fd/{fd}")))
    tools.write_file("a.txt", "one")
    tools.write_file("sub/b.txt", "two")
    tools.edit_file("a.txt", "one", "three")
    assert synced == []  # a write is atomic, not synced: see fsio's docstring
    tools.close()
    assert sorted(synced) == sorted(
        str(p) for p in (root / "a.txt", root / "sub" / "b.txt", root, root / "sub")
    )
    synced.clear()
    tools.close()  # nothing written since: nothing to sync
    assert synced == []
    monkeypatch.undo()
    assert (root / "a.txt").read_text() == "three"


def test_the_registry_syncs_at_its_close_and_passes_over_a_file_gone_since(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = default_tools(root, plugins=False)  # the loop closes it when the run ends
    for name in ("gone.txt", "kept.txt"):
        registry.execute(ToolCall("write_file", {"path": name, "content": "x"}))
    (root / "gone.txt").unlink()
    synced: list[str] = []
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(os.readlink(f"/proc/self/fd/{fd}")))
    registry.close()
    assert sorted(synced) == [str(root), str(root / "kept.txt")]

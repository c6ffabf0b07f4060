"""The change a run made, shown: the end-of-run summary (files, +/- lines), the diff with
``--diff`` and ``show RUN --diff``, the whole undo command, in git and non-git workspaces.

Real runs: the command line in a child process (or, for the live view's ``--diff``, the same
wiring in this process) against FakeOllama over a real socket, recorded in a real store."""

from __future__ import annotations

import argparse
import io
import json
import re
import subprocess
from pathlib import Path

import pytest
from rich.console import Console

from cli_helpers import localhand
from localhand.testing import FakeOllama
from workspaces import example_copy

TASK = "Fix the bug in calc.py so check_calc.py passes"
ESC = "\x1b"


def tool_call(name: str, **arguments: object) -> dict:
    return {"content": "", "tool_calls": [{"function": {"name": name, "arguments": arguments}}]}


FIX = [
    tool_call("edit_file", path="calc.py", old_text="return a - b", new_text="return a + b"),
    tool_call("write_file", path="notes.txt", content="one\ntwo\n"),
    {"content": "Fixed add()."},
]


def git_init(path: Path) -> None:
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "start"]):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=path, check=True
        )


@pytest.fixture(params=["git", "plain"])
def demo(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    path = example_copy("calc", tmp_path / "demo")
    if request.param == "git":
        git_init(path)
    return path


def run(demo: Path, tmp_path: Path, script: list[dict], *extra: str) -> tuple[str, str]:
    with FakeOllama(script=script, models={"qwen3:8b": {}}) as server:
        done = localhand(
            "run", TASK, "--workspace", str(demo), "--model", "qwen3:8b", *extra,
            host=server.url, cwd=tmp_path,
        )  # fmt: skip
    assert done.returncode in (0, 3), done.stderr
    return done.stdout, done.stderr


def run_id(tmp_path: Path) -> str:
    listed = localhand("runs", "--json", cwd=tmp_path)
    return str(json.loads(listed.stdout)[0]["id"])


def test_the_live_view_ends_with_files_and_their_lines(demo: Path, tmp_path: Path) -> None:
    _, err = run(demo, tmp_path, FIX)
    summary = re.search(r"changes: 2 files, \+(\d+) -(\d+)", err)
    assert summary, err
    assert (int(summary[1]), int(summary[2])) == (3, 1)
    assert re.search(r"^  calc\.py +\+1 -1$", err, re.M), err
    assert re.search(r"^  notes\.txt +\+2 -0$", err, re.M), err
    assert f"localhand show {run_id(tmp_path)} --diff" in err
    assert "+    return a + b" not in err, "the diff itself only with --diff"
    assert "        +     return a + b" in err.splitlines(), "the live view's lines of the edit"


def test_show_diff_prints_the_lines_and_show_alone_the_summary(demo: Path, tmp_path: Path) -> None:
    run(demo, tmp_path, FIX)
    ident = run_id(tmp_path)
    plain = localhand("show", ident, cwd=tmp_path)
    assert "changes: 2 files, +3 -1" in plain.stdout
    assert "-    return a - b" not in plain.stdout
    shown = localhand("show", ident[:8], "--diff", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    for line in ("-    return a - b", "+    return a + b", "+one", "+two"):
        assert line in shown.stdout.splitlines(), shown.stdout
    assert re.search(r"^@@ .* @@", shown.stdout, re.M)
    change = json.loads(localhand("show", ident, "--json", cwd=tmp_path).stdout)["change"]
    counts = {f["path"]: (f["added"], f["removed"]) for f in change["files"]}
    assert counts == {"calc.py": (1, 1), "notes.txt": (2, 0)}
    assert "+    return a + b" in change["diff"].splitlines()


def test_a_changed_file_after_the_run_is_named_outside_git(tmp_path: Path) -> None:
    demo = example_copy("calc", tmp_path / "demo")
    run(demo, tmp_path, FIX)
    (demo / "notes.txt").write_text("one\ntwo\nthree\n")
    shown = localhand("show", "last", "--diff", cwd=tmp_path)
    assert "changed after the run ended, shown as they are now: notes.txt" in shown.stdout


def test_escape_sequences_in_a_diff_are_shown_inert(demo: Path, tmp_path: Path) -> None:
    hostile = "title\x1b]0;pwned\x07\n\x1b[2Jclear\n\x9b31mred\n"
    script = [tool_call("write_file", path="evil.txt", content=hostile), {"content": "Done."}]
    _, err = run(demo, tmp_path, script)
    shown = localhand("show", "last", "--diff", cwd=tmp_path)
    for out in (err, shown.stdout):
        assert ESC not in out and "\x9b" not in out and "\x07" not in out
    assert "+title\\x1b]0;pwned\\x07" in shown.stdout, shown.stdout
    assert "+\\x1b[2Jclear" in shown.stdout


def test_a_secret_in_the_diff_is_scrubbed(demo: Path, tmp_path: Path) -> None:
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    script = [
        tool_call("write_file", path="conf.py", content=f"TOKEN = '{token}'\n"),
        {"content": "ok"},
    ]
    run(demo, tmp_path, script)
    shown = localhand("show", "last", "--diff", cwd=tmp_path)
    assert "conf.py" in shown.stdout and token not in shown.stdout


def test_the_live_view_prints_the_diff_with_the_diff_flag(
    demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The wiring ``localhand run`` gets: ``add_diff_option`` on its parser, then the view."""
    from localhand.cli.args import add_diff_option, diff_requested

    parser = argparse.ArgumentParser()
    add_diff_option(parser)
    assert vars(parser.parse_args(["--diff"])) == {}, "no keyword for run() to take"
    assert diff_requested()
    text = live_run(demo, FIX, monkeypatch)
    plain = re.sub(r"\x1b\[[0-9;]*m", "", text)
    assert "-    return a - b" in plain and "+    return a + b" in plain, plain
    assert "\x1b[32m+    return a + b" in text, "added lines in green on a colour terminal"
    assert "changes: 2 files, +3 -1" in plain and "the lines:" not in plain, "shown: no hint"
    assert "\x1b[31m-    return a - b" in text
    assert all(len(line) <= 60 for line in plain.splitlines() if line.startswith("  calc"))
    parser = argparse.ArgumentParser()
    add_diff_option(parser)
    parser.parse_args([])
    assert not diff_requested(), "a new command line starts without --diff"


class Yes:
    """The user, answering yes to the dangerous command."""

    def approve(self, command: str, risk: object) -> bool:
        return True


def live_run(
    demo: Path, script: list[dict], monkeypatch: pytest.MonkeyPatch, *, approver: object = None
) -> str:
    """A run in this process, as ``localhand run`` wires it: the live view on a 60-column
    colour terminal, the run recorded in the store; what the view printed."""
    from localhand.cli.view import TerminalView
    from localhand.config.settings import load_settings
    from localhand.events import EventBus
    from localhand.run.task import Task
    from localhand.session.api import run_task
    from localhand.session.recording import RunRecording

    out = io.StringIO()
    bus = EventBus()
    bus.subscribe(TerminalView(Console(file=out, width=60, color_system="truecolor")))
    with FakeOllama(script=script, models={"qwen3:8b": {}}) as server:
        monkeypatch.setenv("OLLAMA_HOST", server.url)
        task = Task(description=TASK, workspace=demo, model="qwen3:8b")
        settings = load_settings()
        with RunRecording(task, bus, settings=settings) as recording:
            run_task(task, settings, bus=bus, store=recording.store, approver=approver)
    assert not bus.errors, bus.errors
    return out.getvalue()


def test_the_undo_command_is_whole_after_a_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    demo = example_copy("calc", tmp_path / "demo")
    script = [tool_call("run_command", command="rm -rf *"), {"content": "Cleaned."}]
    text = live_run(demo, script, monkeypatch, approver=Yes())
    plain = re.sub(r"\x1b\[[0-9;]*m", "", text)
    assert not (demo / "calc.py").exists(), plain
    ident = run_id(tmp_path)
    undo = f"undo: localhand undo {ident}"
    assert undo in plain.splitlines(), plain
    assert re.search(r"^  calc\.py +\+0 -9$", plain, re.M), plain
    shown = localhand("show", "last", cwd=tmp_path)
    assert undo in shown.stdout.splitlines(), shown.stdout
    assert localhand("undo", ident, "--yes", cwd=tmp_path).returncode == 0
    assert (demo / "calc.py").is_file(), "the command printed is the one that restores"


def test_without_a_copy_the_files_are_listed_with_sizes(tmp_path: Path) -> None:
    demo = example_copy("calc", tmp_path / "demo")
    (demo / "data.bin").write_bytes(b"x" * (6 * 1024 * 1024))  # too big for the store to keep
    _, err = run(demo, tmp_path, FIX)
    shown = localhand("show", "last", "--diff", cwd=tmp_path)
    for out in (err, shown.stdout):
        assert "no line diff: the workspace is not a git repository" in out, out
        assert re.search(r"^  notes\.txt +\(8 bytes\)$", out, re.M), out


def test_the_summary_fits_the_width_and_counts_lines_that_look_like_headers() -> None:
    from localhand.cli.diffview import summary_lines
    from localhand.store.run_diff import change_of

    deep = "src/" + "very_long_directory_name/" * 6 + "module.sql"
    diff = (
        f"diff --git a/{deep} b/{deep}\n--- a/{deep}\n+++ b/{deep}\n@@ -1,2 +1,2 @@\n"
        "--- a comment that starts with two dashes\n+++ counter\n context\n"
    )
    change = change_of({"git": {"diff": diff}, "files_modified": [deep]})
    assert [(f.path, f.added, f.removed) for f in change.files] == [(deep, 1, 1)]
    for width in (40, 80):
        lines = [line.plain for line in summary_lines(change, width)]
        assert all(len(line) <= width for line in lines[1:]), lines
        assert lines[1].rstrip().endswith("module.sql  +1 -1") and "…" in lines[1]


def test_a_symlink_out_of_the_workspace_shows_no_lines_from_outside(tmp_path: Path) -> None:
    demo = example_copy("calc", tmp_path / "demo")
    run(demo, tmp_path, FIX)
    (tmp_path / "outside.txt").write_text("OUTSIDE-CONTENT\n")
    (demo / "notes.txt").unlink()
    (demo / "notes.txt").symlink_to(tmp_path / "outside.txt")
    shown = localhand("show", "last", "--diff", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "OUTSIDE-CONTENT" not in shown.stdout
    assert re.search(r"^  notes\.txt +\(\d+ bytes\)$", shown.stdout, re.M), shown.stdout

"""The first hour: a mistyped command, flag or choice is answered with the one meant, and
completion offers run ids and model names (from the store and the last ``localhand models``,
never from a server)."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from cli_helpers import localhand
from localhand.run.task import Task
from localhand.store import Store
from localhand.testing import FakeOllama
from test_completion import bash_complete
from workspaces import example_copy


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        (["run", "x", "--modle", "q"], "--model"),
        (["run", "x", "--approv=never"], "--approve"),
        (["rnu", "x"], "run"),
        (["run", "x", "--approve", "neverr"], "never"),
        (["show", "last", "--jsn"], "--json"),
    ],
)
def test_a_mistyped_word_gets_did_you_mean(tmp_path: Path, typed: list[str], meant: str) -> None:
    done = localhand(*typed, cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"(did you mean {meant}?)" in done.stderr.splitlines()[0], done.stderr


def test_nothing_close_names_nothing(tmp_path: Path) -> None:
    done = localhand("run", "x", "--zzzzzz", cwd=tmp_path)
    assert done.returncode == 2 and "did you mean" not in done.stderr


@pytest.fixture
def on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``localhand`` on PATH, as the script calls it: this checkout's."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "localhand"
    shim.write_text(f'#!/bin/sh\nexec {sys.executable} -m localhand "$@"\n')
    shim.chmod(shim.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return tmp_path


def test_completion_offers_last_and_recent_runs(on_path: Path) -> None:
    script = localhand("completion", "bash", cwd=on_path).stdout
    assert bash_complete(script, "localhand show ", on_path) == ["last"]  # no store yet
    assert not Path(os.environ["LOCALHAND_DB"]).exists()  # completing made none
    store = Store(os.environ["LOCALHAND_DB"])
    ids = [store.begin_run(Task("x", workspace=on_path), model="m") for _ in range(2)]
    for line in (
        "show ",
        "undo ",
        "replay ",
        "run --continue ",
    ):
        offered = bash_complete(script, f"localhand {line}", on_path)
        assert offered[0] == "last" and set(offered[1:]) == set(ids), (line, offered)
    assert bash_complete(script, f"localhand show {ids[0][:6]}", on_path) == [ids[0]]


def test_model_names_come_from_the_last_models_answer(on_path: Path) -> None:
    script = localhand("completion", "bash", cwd=on_path).stdout
    assert bash_complete(script, "localhand run -m ", on_path) == []
    with FakeOllama(script=[], models={"qwen3:8b": {}, "gemma3:4b": {}}) as server:
        listed = localhand("models", "--backend", "ollama", host=server.url, cwd=on_path)
        assert listed.returncode == 0, listed.stderr
    # the server is gone: the names come from the cache, with no network
    assert bash_complete(script, "localhand run --model ", on_path) == ["gemma3:4b", "qwen3:8b"]
    assert bash_complete(script, "localhand plan -m qw", on_path) == ["qwen3:8b"]


def test_show_of_a_plan_run_draws_it_as_the_live_view_did(tmp_path: Path) -> None:
    demo = example_copy("plan", tmp_path / "demo")
    live = localhand("plan", "plan.yaml", "-w", str(demo), host="http://127.0.0.1:9", cwd=demo)
    assert live.returncode == 1, live.stderr

    shown = localhand("show", "last", cwd=demo)

    assert shown.returncode == 0, shown.stderr
    drawn = shown.stdout.splitlines()
    assert drawn[0].startswith("run ") and "· fail ·" in drawn[0]
    assert drawn[1 : len(live.stderr.splitlines()) + 1] == live.stderr.splitlines()
    assert "✗ failed (exit code 2" in shown.stdout and "• " not in shown.stdout

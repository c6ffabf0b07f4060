"""The workspace's starting point is recorded while the first request goes out, and before the
first tool can change anything."""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from localhand import Agent
from localhand.evidence import gitstate
from localhand.models.scripted import ScriptedModel, call


def test_the_first_request_does_not_wait_for_the_git_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "a.txt").write_text("before\n")
    asked = threading.Event()
    real = gitstate.record_before

    def after_the_first_request(workspace: Path, task_id: str) -> Any:
        assert asked.wait(10), "the snapshot held up the first request"
        return real(workspace, task_id)

    def first(messages: Any) -> Any:
        asked.set()
        return call("write_file", path="a.txt", content="after\n")

    monkeypatch.setattr(gitstate, "record_before", after_the_first_request)
    result = Agent(ScriptedModel([first, "Done."]), tmp_path).run("Change a.txt")
    assert result.files_modified == ["a.txt"]
    assert result.git is not None and "-before" in result.git["diff"], "recorded before the write"


def test_the_stores_copy_is_the_workspace_before_the_first_tool_however_slow_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from localhand.events import EventBus
    from localhand.store import Store
    from localhand.store import archive as archive_module

    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("before\n")
    real_pack = archive_module.pack

    def slow_pack(*args: Any, **kwargs: Any) -> Any:
        time.sleep(0.5)  # the first reply comes long before the copy is packed
        return real_pack(*args, **kwargs)

    monkeypatch.setattr(archive_module, "pack", slow_pack)
    store = Store(tmp_path / "runs.db")
    bus = EventBus()
    bus.subscribe(store.recorder())
    model = ScriptedModel([call("write_file", path="a.txt", content="after\n"), "Done."])
    result = Agent(model, workspace, bus=bus).run("Change a.txt")
    assert result.files_modified == ["a.txt"]
    (run,) = store.runs()
    kept = store.archive(run.id)
    assert kept is not None and kept.data is not None
    archive_module.unpack(kept.data, tmp_path / "copy")
    assert (tmp_path / "copy" / "a.txt").read_text() == "before\n"

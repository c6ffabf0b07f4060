"""A call that only reads does not wait for the tests' collection; one that may write does."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from localhand.evidence import reporting
from localhand.evidence.baseline import Baseline
from localhand.evidence.verify import CommandCheck


def test_a_read_waits_for_the_snapshot_alone_and_a_write_for_the_collection_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "test_calc.py").write_text("def test_one():\n    assert True\n")
    collecting, release = threading.Event(), threading.Event()

    def slow_collection(*args: object, **kwargs: object) -> None:
        collecting.set()
        release.wait(30)

    monkeypatch.setattr(reporting, "collect_before", slow_collection)
    baseline = Baseline(tmp_path, "t1", [CommandCheck("python3 -m pytest -q")])
    assert collecting.wait(30), "the baseline never started collecting"

    baseline.before(["read_file", "search_files"])  # returns with the collection still running
    assert baseline.tracker.baseline.files  # the snapshot is there to compare against

    wrote = threading.Event()
    writer = threading.Thread(target=lambda: (baseline.before(["write_file"]), wrote.set()))
    writer.start()
    assert not wrote.wait(0.5), "a write went ahead of the tests' collection"
    release.set()
    assert wrote.wait(30)
    writer.join()
    baseline.close()


@pytest.mark.skipif(sys.platform != "linux", reason="nice is per thread on Linux alone")
def test_the_collection_yields_the_cpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """It runs in the background while the model answers: at a lower priority, which the
    command it starts inherits, and the run's own thread keeps its own."""
    (tmp_path / "test_calc.py").write_text("def test_one():\n    assert True\n")
    seen: list[int] = []

    def collection(*args: object, **kwargs: object) -> None:
        seen.append(int(subprocess.run(["nice"], capture_output=True, text=True).stdout))

    monkeypatch.setattr(reporting, "collect_before", collection)
    Baseline(tmp_path, "t1", [CommandCheck("python3 -m pytest -q")]).close()
    ours = os.getpriority(os.PRIO_PROCESS, 0)
    assert seen == [min(ours + 10, 19)]
    assert int(subprocess.run(["nice"], capture_output=True, text=True).stdout) == ours

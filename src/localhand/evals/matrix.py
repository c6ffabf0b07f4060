"""The runs of an eval (every model × task × repeat) as one batch file, on a copy of the suite.

Why a copy: ``localhand batch`` makes each task's workspace from the task's own folder, as a
git worktree when that folder is in a repository. The built-in suite lives in the package
(inside the user's checkout, for an editable install), so each run would snapshot the whole
repository. The suite is copied into a fresh temporary folder, outside any repository, and
removed afterwards.

Why relative paths: resume matches a finished task on its id and on a hash of its batch line.
The lines name workspaces relative to the batch file, so they are the same from one eval to
the next although each copy is made in a new folder; the resume state itself lives in the
report folder.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localhand.evals.suites import CACHES, Suite, SuiteTask

SUITE_DIR = "suite"
"""The suite's folder inside the copy, next to ``tasks.jsonl``."""


@dataclass(frozen=True, slots=True)
class Cell:
    """One run of the eval: ``task`` by ``model``, the ``repeat``-th time (from 1)."""

    id: str
    """The batch task id: also the task id of its run in the store."""
    model: str
    task: SuiteTask
    repeat: int


def eval_tag(out: Path) -> str:
    """A short hash of the report folder. It starts every run's id, so that the runs of two
    evals (two report folders) are never taken for one another in the run store."""
    return hashlib.sha256(str(out.resolve()).encode()).hexdigest()[:6]


def model_slug(model: str) -> str:
    """``model`` as a part of a file name; a name that had to change gets a short hash of
    itself, so that ``qwen3:8b`` and ``qwen3-8b`` stay apart."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", model).strip("-.") or "model"
    if slug != model:
        slug += "-" + hashlib.sha256(model.encode()).hexdigest()[:4]
    return slug


def cells(suite: Suite, models: list[str], repeat: int, tag: str) -> list[Cell]:
    """Every run, repeat by repeat (so that an eval stopped early has seen every task once
    before it sees any twice), model by model within each task."""
    return [
        Cell(f"{tag}-{model_slug(model)}-{task.id}-{k}", model, task, k)
        for k in range(1, repeat + 1)
        for task in suite.tasks
        for model in models
    ]


@contextlib.contextmanager
def staged(suite: Suite, runs: list[Cell]) -> Iterator[Path]:
    """A copy of the suite and the batch file of ``runs`` beside it; yields the batch file's
    path, and removes the copy on exit."""
    stage = Path(tempfile.mkdtemp(prefix="localhand-eval-"))
    try:
        shutil.copytree(
            suite.root,
            stage / SUITE_DIR,
            symlinks=True,
            ignore=shutil.ignore_patterns(*CACHES, "*.pyc"),
        )
        tasks_file = stage / "tasks.jsonl"
        lines = [json.dumps(batch_line(cell, suite.root), ensure_ascii=False) for cell in runs]
        tasks_file.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        yield tasks_file
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def batch_line(cell: Cell, root: Path) -> dict[str, Any]:
    """The batch line of ``cell``: its task file as written, with the workspace and the plan
    file named relative to the batch file (which sits beside the copy of the suite)."""
    task = cell.task
    data = dict(task.data)
    data["workspace"] = _in_copy(task.task.workspace, root)
    if isinstance(task.task.plan, str):
        data["plan"] = _in_copy(Path(task.task.plan), root)
    data["id"] = cell.id
    data["model"] = cell.model
    return data


def _in_copy(path: Path, root: Path) -> str:
    """Where ``path`` (inside the suite, as ``load_suite`` checked) is in the copy, relative
    to the batch file."""
    inside = path.resolve().relative_to(root.resolve())
    return (Path(SUITE_DIR) / inside).as_posix()

"""A suite: task files in graded tiers, with the workspaces they work in, all in one folder.

    my-suite/
      suite.yaml             # optional: name, description, titles of the tiers
      tier1/create-hello.yaml
      tier2/fix-calc.yaml    # workspace: ../workspaces/calc  (relative to the task file)
      tier3/plan-pack.yaml   # plan: ../plans/pack.yaml, mode: agentic
      workspaces/calc/...
      plans/pack.yaml

Each task file is an ordinary task file (``localhand run --task-file`` takes it), found in a
``tier<N>`` folder, which gives its tier. Its id is its ``id`` or its file name; the first word
of the id is its kind (``fix-calc`` is a ``fix``). A task the model carries out must have
checks (``verify``): a task without them would pass on any final answer. A plan task's steps
are its checks. Workspaces and plan files must be inside the suite folder, since the suite is
copied before it runs. The built-in suite is ``localhand/evals/suite/`` in the package.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from localhand.config.datafile import read_data
from localhand.errors import ConfigError
from localhand.run.task import Task
from localhand.taskfile import task_from_dict

BUILTIN = "builtin"
TASK_SUFFIXES = (".yaml", ".yml", ".json")
_TIER_DIR = re.compile(r"tier(\d+)")
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


@dataclass(frozen=True, slots=True)
class SuiteTask:
    """One task of a suite."""

    id: str
    tier: int
    kind: str
    """The first word of the id: ``create``, ``fix``, ``plan``..."""
    file: Path
    data: dict[str, Any]
    """The task file as written (relative paths relative to ``file``'s folder)."""
    task: Task
    """The task as localhand reads it (paths resolved)."""

    @property
    def is_plan(self) -> bool:
        return self.task.is_plan

    def summary(self) -> dict[str, Any]:
        """What a report says about the task."""
        return {
            "id": self.id,
            "tier": self.tier,
            "kind": self.kind,
            "mode": "plan" if self.is_plan else "loop",
            "description": self.task.description,
        }


@dataclass(frozen=True, slots=True)
class Suite:
    name: str
    root: Path
    tasks: tuple[SuiteTask, ...]
    description: str = ""
    tier_titles: dict[int, str] | None = None

    @property
    def tiers(self) -> list[int]:
        return sorted({task.tier for task in self.tasks})

    def select(self, tiers: list[int] | None = None, ids: list[str] | None = None) -> Suite:
        """The suite with only the tasks of ``tiers`` and ``ids`` (None: all); ``ConfigError``
        naming what matched nothing."""
        tasks = self.tasks
        if tiers:
            missing = sorted(set(tiers) - set(self.tiers))
            if missing:
                have = ", ".join(str(t) for t in self.tiers)
                raise ConfigError(f"suite {self.name} has no tier {missing[0]}; it has {have}")
            tasks = tuple(t for t in tasks if t.tier in tiers)
        if ids:
            known = {t.id for t in self.tasks}
            unknown = [i for i in ids if i not in known]
            if unknown:
                raise ConfigError(
                    f"suite {self.name} has no task {unknown[0]!r}; its tasks: "
                    + ", ".join(sorted(known))
                )
            tasks = tuple(t for t in tasks if t.id in ids)
        if not tasks:
            raise ConfigError(f"no task of suite {self.name} is in the tiers and tasks asked for")
        return Suite(self.name, self.root, tasks, self.description, self.tier_titles)

    def digest(self) -> str:
        """A hash of every file of the suite: two reports with the same digest ran the same
        tasks on the same workspaces."""
        digest = hashlib.sha256()
        files = (p for p in self.root.rglob("*") if p.is_file())
        for path in sorted(p for p in files if _kept(p.relative_to(self.root))):
            digest.update(str(path.relative_to(self.root)).encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
        return digest.hexdigest()[:16]

    def summary(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "path": str(self.root),
            "description": self.description,
            "digest": self.digest(),
            "tiers": {str(t): (self.tier_titles or {}).get(t, "") for t in self.tiers},
            "tasks": [task.summary() for task in self.tasks],
        }


def builtin_root() -> Path:
    """Where the built-in suite is installed."""
    return Path(str(resources.files("localhand.evals") / "suite"))


def load_suite(ref: str | Path | None = None) -> Suite:
    """The suite ``ref`` names: ``builtin`` (or None), or a suite folder. ``ConfigError``
    says what is wrong, with the file and the field."""
    if ref is None or str(ref) == BUILTIN:
        root, name = builtin_root(), BUILTIN
    else:
        root = Path(ref).expanduser()
        if not root.is_dir():
            raise ConfigError(
                f"unknown suite {str(ref)!r}: give '{BUILTIN}' (the default) or a suite folder "
                "with tier1/, tier2/... folders of task files (see docs/eval.md)"
            )
        root, name = root.resolve(), root.resolve().name
    meta = _manifest(root)
    name = str(meta.get("name") or name)
    tasks = _tasks(root)
    if not tasks:
        raise ConfigError(
            f"suite {root} has no task files: put them in tier1/, tier2/... folders "
            f"({', '.join(TASK_SUFFIXES)})"
        )
    titles = {int(k): str(v) for k, v in (meta.get("tiers") or {}).items()}
    return Suite(name, root, tuple(tasks), str(meta.get("description") or ""), titles)


def read_task_data(path: Path) -> dict[str, Any]:
    """A task file's mapping, as written."""
    data = read_data(path, "task file")
    if not isinstance(data, dict):
        raise ConfigError(f"task file {path} must hold a mapping with 'description' or 'plan'")
    return data


def _manifest(root: Path) -> dict[str, Any]:
    path = root / "suite.yaml"
    if not path.is_file():
        return {}
    data = read_task_data(path)
    unknown = set(data) - {"name", "description", "tiers"}
    if unknown:
        raise ConfigError(
            f"{path}: unknown field(s) {', '.join(sorted(unknown))}; allowed: name, "
            "description, tiers"
        )
    return data


def _tasks(root: Path) -> list[SuiteTask]:
    tasks: list[SuiteTask] = []
    seen: dict[str, Path] = {}
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        match = _TIER_DIR.fullmatch(folder.name)
        if not match:
            continue
        for path in sorted(folder.iterdir()):
            if path.suffix not in TASK_SUFFIXES or not path.is_file():
                continue
            task = _task(path, int(match.group(1)), root)
            if task.id in seen:
                raise ConfigError(f"{path}: task id {task.id!r} is already used by {seen[task.id]}")
            seen[task.id] = path
            tasks.append(task)
    return sorted(tasks, key=lambda t: (t.tier, t.id))


def _task(path: Path, tier: int, root: Path) -> SuiteTask:
    data = read_task_data(path)
    task_id = str(data.get("id") or path.stem)
    if not _ID.fullmatch(task_id):
        raise ConfigError(
            f"{path}: task id {task_id!r} must be letters, digits, '.', '_' or '-' (at most 64)"
        )
    # The eval chooses the model and the server; a task file naming one is run with the
    # models asked for, so those fields are dropped rather than obeyed.
    data = {k: v for k, v in data.items() if k not in ("model", "backend")}
    try:
        task = task_from_dict(data, base=path.parent, root=Path("/"))  # _inside checks it below
    except ConfigError as exc:
        detail = "\n  ".join(line.strip() for line in str(exc).splitlines())
        raise ConfigError(f"task file {path}:\n  {detail}") from None
    where = f"task file {path}"
    if not task.is_plan and not task.checks:
        raise ConfigError(
            f"{where} has no checks: a suite task needs 'verify' entries that decide without "
            "a model whether the work was done"
        )
    _inside(task.workspace, root, where, "workspace")
    if not task.workspace.is_dir():
        raise ConfigError(f"{where}: workspace {task.workspace} is not a directory")
    if isinstance(task.plan, str):
        _inside(Path(task.plan), root, where, "plan")
        if not Path(task.plan).is_file():
            raise ConfigError(f"{where}: plan file {task.plan} does not exist")
    kind = task_id.split("-")[0]
    return SuiteTask(task_id, tier, kind, path, data, task.with_changes(id=task_id))


def _inside(path: Path, root: Path, where: str, what: str) -> None:
    if not path.resolve().is_relative_to(root.resolve()):
        raise ConfigError(
            f"{where}: its {what} {path} is outside the suite folder {root}; a suite is copied "
            "before it runs, so everything it uses must be inside it"
        )


CACHES = ("__pycache__", ".ruff_cache", ".pytest_cache", ".mypy_cache")
"""Folders a check, a test or a linter leaves in a suite: not part of it."""


def _kept(path: Path) -> bool:
    """Files that belong to the suite."""
    return not any(part in CACHES for part in path.parts) and path.suffix != ".pyc"

"""A batch file: one task per JSONL line, with the fields of a task file.

    {"id": "fix-calc", "description": "Fix calc.py", "workspace": "calc", "verify": ["./t.sh"]}
    {"description": "Add a docstring to util.py", "workspace": "util", "model": "llama3.1:8b"}

Relative workspaces are resolved against the batch file's folder and stay near it (never a
folder that holds it), and context files in their workspace (``localhand.taskfile``). The
file is used as the user trusted it (``localhand.safety.trust.store``: at its first use, or
since). Blank lines are skipped.
A line without an ``id`` gets one from its content (``task-<hash>``), so the same line keeps
its id when lines are added or removed around it; that is what resume matches on.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localhand.errors import ConfigError
from localhand.run.task import Task
from localhand.safety.trust.store import use_named
from localhand.taskfile import task_from_dict


@dataclass(frozen=True, slots=True)
class BatchTask:
    """One line of a batch file."""

    task: Task
    line: int
    """1-based line number in the batch file, for messages."""
    key: str
    """Hash of the line's content: a finished task is skipped on resume only if it is unchanged."""

    @property
    def id(self) -> str:
        return self.task.id


def load_batch(path: str | Path) -> list[BatchTask]:
    """Read and validate a batch file; ``ConfigError`` names the line and the field."""
    path = Path(path)
    try:
        text = use_named(path, "batch file").text
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read batch file {path}: {exc}") from None
    tasks: list[BatchTask] = []
    seen: dict[str, int] = {}
    occurrences: Counter[str] = Counter()
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        where = f"{path}:{number}"
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ConfigError(
                f"{where}: not valid JSON ({exc.msg} at column {exc.colno}); "
                "each line must be one JSON object"
            ) from None
        try:
            task = task_from_dict(data, base=path.parent)
        except ConfigError as exc:
            detail = "\n  ".join(line.strip() for line in str(exc).splitlines())
            raise ConfigError(f"{where}: {detail}") from None
        key = _key(data)
        if "id" not in data or not data["id"]:
            occurrences[key] += 1
            count = occurrences[key]
            task = task.with_changes(id=f"task-{key[:10]}" + (f"-{count}" if count > 1 else ""))
        if task.id in seen:
            raise ConfigError(
                f"{where}: task id {task.id!r} is already used on line {seen[task.id]}; "
                "ids must be unique within a batch"
            )
        seen[task.id] = number
        tasks.append(BatchTask(task=task, line=number, key=key))
    if not tasks:
        raise ConfigError(f"batch file {path} has no tasks: write one JSON object per line")
    return tasks


def with_output_schema(
    items: list[BatchTask], schema: dict[str, Any] | None
) -> tuple[list[BatchTask], list[BatchTask]]:
    """The tasks with ``schema`` (``batch --output-schema``) given to each the model carries
    out that names none of its own, and the plan tasks it was not given to (a plan's answer
    is localhand's summary of its steps). A task given it is a changed task: its resume key
    says so, so a result from before the schema is not taken for one that follows it."""
    if schema is None:
        return items, []
    given, plans = [], []
    for item in items:
        if item.task.is_plan:
            plans.append(item)
        elif item.task.output_schema is None:
            task = item.task.with_changes(output_schema=schema)
            item = BatchTask(task, item.line, _key({"line": item.key, "output_schema": schema}))
        given.append(item)
    return given, plans


def _key(data: dict) -> str:
    canonical = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()

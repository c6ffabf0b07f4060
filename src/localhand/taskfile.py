"""Task files (JSON or YAML): read with errors that name the bad field, written for follow-ups.

    id: fix-calc                    # optional; a fresh id otherwise
    description: Fix the bug in calc.py so check_calc.py passes
    workspace: ./calc               # the file's folder, one under it or beside it
    tier: standard                  # trivial | standard | complex
    agentic: true                   # omit to let localhand decide
    limits: {iterations: 10, timeout: 1800, token_budget: 50000}
    verify:
      - python3 check_calc.py       # a command that must exit 0
      - {file_exists: out.txt}
      - {file_contains: {path: calc.py, text: "a + b"}}
    model: qwen3:8b
    backend: ollama
    context_files: [calc.py]        # inside the workspace; no keys, .env or .ssh/
    output_schema: answer.schema.json  # the final answer as JSON (or the schema itself)

A plan task runs plan mode instead of the tool loop: it names a plan, or a mode alone (the
model then drafts a plan for the description, and it runs without asking):

    plan: plans/release.yaml        # or the plan itself: {goal: ..., steps: [...]}
    mode: agentic                   # teacher | planner | agentic; else the plan's, else default
    workspace: ./app

The file is used as the user trusted it (``localhand.safety.trust.store``: at its first use, or
since), and what it names stays where it lies: ``workspace`` is the task file's folder, one
under it or beside it (never one that holds it: ``..``, ``$HOME``, ``/``), and
``context_files`` (read by localhand outside the sandbox, and sent to the model) may not
leave the workspace nor name files that hold credentials.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from localhand.config.datafile import described, read_data
from localhand.config.files import inside
from localhand.config.options import BACKENDS
from localhand.config.schema import checked_schema, load_schema
from localhand.errors import ConfigError
from localhand.evidence.verify import Check, CommandCheck, FileContains, FileExists
from localhand.paths import data_dir, write_private
from localhand.run.task import Task
from localhand.safety.risk.paths import is_secret_file
from localhand.safety.trust.store import use_named


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=False)


class _Limits(_Strict):
    iterations: int | None = Field(None, ge=1)
    timeout: float | None = Field(None, gt=0)
    token_budget: int | None = Field(None, ge=1)


class _Contains(_Strict):
    path: str
    text: str


class _CheckSpec(_Strict):
    command: str | None = None
    file_exists: str | None = None
    file_contains: _Contains | None = None


class _TaskFile(_Strict):
    description: str | None = Field(None, min_length=1)
    id: str | None = None
    workspace: str | None = None
    tier: Literal["trivial", "standard", "complex"] = "standard"
    agentic: bool | None = None
    limits: _Limits = _Limits()
    verify: list[str | _CheckSpec] = []
    model: str | None = None
    backend: str | None = None
    context_files: list[str] = []
    plan: str | dict[str, Any] | None = None
    mode: Literal["teacher", "planner", "agentic"] | None = None
    output_schema: str | dict[str, Any] | None = None

    @field_validator("backend")
    @classmethod
    def _known_backend(cls, value: str | None) -> str | None:
        if value is not None and value not in BACKENDS:
            raise ValueError(f"must be one of {', '.join(BACKENDS)}")
        return value


def load_task_file(path: str | Path, *, pin: bool = True) -> Task:
    """Read and validate a task file; ``ConfigError`` says which field is wrong and why.
    ``pin``: use it only as the user trusted it (``localhand.safety.trust.store.use_named``). A
    file in localhand's data directory (a follow-up localhand wrote, where commands cannot
    write) is its own: neither pinned nor held to its folder."""
    path = Path(path)
    own = inside(path, data_dir())
    if pin and not own:
        data = read_data(path, "task file", lambda p: use_named(p, "task file").text)
    else:
        data = read_data(path, "task file")
    if not isinstance(data, dict):
        raise ConfigError(
            f"task file {path} must hold a mapping with at least 'description' (or 'plan')"
        )
    try:
        spec = _TaskFile.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"task file {path}:\n{described(exc, _SECTIONS)}") from None
    try:
        return _to_task(spec, base=path.parent, root=Path("/") if own else None)
    except ConfigError as exc:
        raise ConfigError(f"task file {path}: {exc}") from None


def task_from_dict(data: Any, base: str | Path, root: str | Path | None = None) -> Task:
    """One task from a mapping with the task-file fields (``localhand batch`` reads one per JSONL
    line); a relative ``workspace`` is resolved against ``base`` and stays near it
    (``_within``), or inside ``root`` when given. ``ConfigError``'s message names each bad
    field, one per line, without saying where the mapping came from."""
    if not isinstance(data, dict):
        raise ConfigError("must be a JSON object with at least 'description' (or 'plan')")
    try:
        spec = _TaskFile.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(described(exc, _SECTIONS).strip()) from None
    return _to_task(spec, base=Path(base), root=Path(root) if root is not None else None)


def write_task_file(task: Task, directory: Path) -> Path:
    """Write ``task`` as ``<directory>/<id>.json``, atomically (``write_private``); returns the
    path."""
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / f"{task.id}.json"
    text = json.dumps(task.to_dict(), indent=2, ensure_ascii=False) + "\n"
    write_private(target, text.encode("utf-8"))
    return target


def _to_task(spec: _TaskFile, base: Path, root: Path | None = None) -> Task:
    workspace = (base / spec.workspace).resolve() if spec.workspace else base.resolve()
    _within(workspace, base.resolve(), root.resolve() if root else None, spec.workspace or ".")
    for name in spec.context_files:
        _context_file(name, workspace)
    fields: dict[str, Any] = {
        "description": _description(spec),
        "workspace": workspace,
        "tier": spec.tier,
        "agentic": spec.agentic,
        "max_iterations": spec.limits.iterations,
        "timeout_s": spec.limits.timeout,
        "token_budget": spec.limits.token_budget,
        "checks": tuple(_check(item) for item in spec.verify),
        "model": spec.model,
        "backend": spec.backend,
        "context_files": tuple(spec.context_files),
        "plan": str((base / spec.plan).resolve()) if isinstance(spec.plan, str) else spec.plan,
        "mode": spec.mode,
        "output_schema": _output_schema(spec.output_schema, base),
    }
    if spec.id:
        fields["id"] = spec.id
    return Task(**fields)


def _within(workspace: Path, base: Path, root: Path | None, given: str) -> None:
    """A task file's workspace stays near the file: its folder, one under it, or one beside
    it (``../calc``), never a folder that holds it (``..``, ``$HOME``, ``/``), so that a file
    the model could write cannot send a run over the user's files. With ``root``: anywhere
    inside ``root`` instead."""
    if root is not None:
        if workspace != root and root not in workspace.parents:
            raise ConfigError(f"workspace: {given} is {workspace}, outside {root}")
        return
    holds_the_file = workspace != base and workspace in base.parents
    near = workspace == base or base.parent in workspace.parents
    if holds_the_file or not near or workspace == Path.home().resolve():
        raise ConfigError(
            f"workspace: {given} is {workspace}, outside the task file's folder {base} and "
            "the folders beside it; name one of those, or keep the task file next to its "
            "workspace"
        )


def _context_file(name: str, workspace: Path) -> None:
    """A context file is read by localhand, outside the sandbox, and sent to the model: it
    must be a relative path inside the workspace (symlinks resolved) and not a credential."""
    path = Path(name)
    if not name.strip() or path.is_absolute() or ".." in path.parts or name.startswith("~"):
        raise ConfigError(
            f"context_files: {name!r} must be a path inside the workspace, relative to it "
            "(no absolute path, ~ or ..)"
        )
    real = (workspace / path).resolve()
    if real != workspace and workspace not in real.parents:
        raise ConfigError(f"context_files: {name} leads outside the workspace (to {real})")
    if is_secret_file(str(path)) or is_secret_file(str(real.relative_to(workspace))):
        raise ConfigError(
            f"context_files: {name} looks like it holds credentials (a key, .env, .ssh/...); "
            "localhand does not send such a file to the model from a task file"
        )


def _output_schema(given: str | dict[str, Any] | None, base: Path) -> dict[str, Any] | None:
    """A task's ``output_schema``: the schema itself, or a JSON file of it near the task file
    (in its folder, under it or in one beside it, as ``workspace``). The schema is sent to
    the model, so it is never a file that looks like it holds credentials."""
    if given is None:
        return None

    if isinstance(given, dict):
        return checked_schema(given, "output_schema")
    path, base = (base / given).resolve(), base.resolve()
    if path.parent != base and base.parent not in path.parent.parents:
        raise ConfigError(
            f"output_schema: {given} is {path}, outside the task file's folder {base} and "
            "the folders beside it; keep the schema next to the task file"
        )
    if is_secret_file(given) or is_secret_file(path.name):
        raise ConfigError(f"output_schema: {given} looks like it holds credentials, not a schema")
    return load_schema(path)


def _description(spec: _TaskFile) -> str:
    """What the task is: its description; for a plan task, the plan's goal if none is given."""
    if spec.description is None and spec.plan is None:
        raise ConfigError(
            "description: required field is missing (say what the task is, or name a 'plan')"
        )
    if spec.plan is None and spec.mode is None:
        return str(spec.description)
    if spec.output_schema is not None:
        raise ConfigError(
            "output_schema: a plan task's answer is localhand's summary of its steps, not the "
            "model's; give the schema to a task the model carries out (no 'plan' or 'mode')"
        )
    if spec.verify or spec.context_files or spec.agentic is not None:
        raise ConfigError(
            "a plan task runs the plan's steps: 'verify', 'context_files' and 'agentic' are "
            "for tasks the model carries out; make the checks steps of the plan"
        )
    if spec.description is not None:
        return spec.description
    if isinstance(spec.plan, dict) and isinstance(spec.plan.get("goal"), str):
        return spec.plan["goal"]
    return f"plan {spec.plan}"


def _check(item: str | _CheckSpec) -> Check:
    if isinstance(item, str):
        return CommandCheck(item)
    given = [name for name in ("command", "file_exists", "file_contains") if getattr(item, name)]
    if len(given) != 1:
        raise ConfigError(
            "each verify entry needs exactly one of: command, file_exists, file_contains"
        )
    if item.command:
        return CommandCheck(item.command)
    if item.file_exists:
        return FileExists(item.file_exists)
    assert item.file_contains is not None
    return FileContains(item.file_contains.path, item.file_contains.text)


_SECTIONS: dict[str, type[BaseModel]] = {"": _TaskFile, "limits": _Limits, "verify": _CheckSpec}
"""The model of each table of a task file, for the fields allowed where an unknown one stands."""

"""Replay: run a recorded run's model replies through the current loop, and compare.

The model is replaced by the replies the run recorded (``model_reply`` events: content, native
tool calls in wire shape, thinking, token counts), in order; everything else is today's code:
runner wiring, parser, guardrails, tools, verification. So a recorded run is a regression
test: if a change to the loop alters what happens with the same replies, the report says where.

Where the replay runs: never in the original workspace, which the run has changed since.
- ``workspace=DIR`` given: in a fresh temporary copy of DIR.
- otherwise: in a temporary directory restored from the copy of the workspace the store kept
  when the run started (workspaces up to a few MiB are kept; see ``localhand.store.archive``);
- failing that: in a temporary copy of the original workspace as it is now, with a note that
  the run may have changed it, so differences may come from the files rather than the loop.
The temporary directory is deleted afterwards unless ``keep=True``.

The recorded replies name the replay's workspace where they named the original, and both
timelines write the workspace path ``<workspace>``; a summary is cut as if it were written so
(``events.summarize``), so a run whose output holds its workspace path replays equal from a
folder of any length. Compared, in order: tool calls (name, arguments, ok, short result),
nudges, guardrail stops, verification checks and the Result's status, termination reason,
iterations and files modified. Timings and tokens are not.
"""

from __future__ import annotations

import difflib
import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from localhand.config.settings import Settings
from localhand.errors import ModelError
from localhand.events import WORKSPACE, EventBus, EventLog
from localhand.models.base import ChatOptions, Tools
from localhand.models.scripted import ScriptedModel, reply_from_message
from localhand.run.task import Task
from localhand.store import Store, StoredEvent, StoreError
from localhand.store.archive import unpack
from localhand.taskfile import load_task_file
from localhand.types import Message, Reply, Result, Usage


class ReplayExhausted(ModelError):
    """The current loop asked the model more often than the recorded run did."""


class ReplayModel(ScriptedModel):
    """Hands out recorded replies in order; asking for one more is a model error, not a crash,
    so the replay still ends with a Result that can be compared."""

    def chat(
        self, messages: Sequence[Message], tools: Tools = None, options: ChatOptions | None = None
    ) -> Reply:
        if self.remaining <= 0:
            raise ReplayExhausted(
                f"the loop asked for model reply {len(self.calls) + 1}, but the run recorded "
                f"only {len(self.calls)}"
            )
        return super().chat(messages, tools, options)


def recorded_replies(
    events: Sequence[StoredEvent], moved: tuple[str, str] | None = None
) -> list[Reply]:
    """The run's model replies, as the loop received them (usage included). ``moved``: (the
    recorded workspace, the replay's), so that a path the model wrote into its tool calls
    (``read_file /home/me/proj/a.py``) names the same file in the replay's workspace."""
    replies = []
    for event in events:
        if event.type == "model_reply":
            data = _moved(event.data, moved) if moved else event.data
            usage = Usage(int(data.get("tokens_in") or 0), int(data.get("tokens_out") or 0))
            message = {**data, "done_reason": data.get("done_reason")}
            replies.append(reply_from_message(message, usage))
    return replies


def with_helpers(store: Store, events: Sequence[StoredEvent]) -> list[StoredEvent]:
    """``events`` with each helper's (``delegate``) model replies where it ran: the order in
    which the model gave them."""
    spliced: list[StoredEvent] = []
    for event in events:
        spliced.append(event)
        if event.type == "delegate_started" and event.data.get("helper_run"):
            spliced += store.events(event.data["helper_run"], types=("model_reply",))
    return spliced


def _moved(data: dict[str, Any], moved: tuple[str, str]) -> dict[str, Any]:
    """``data`` with every string's ``moved[0]`` written as ``moved[1]``."""
    old, new = (json.dumps(path)[1:-1] for path in moved)  # as the path is spelled in JSON
    text = json.dumps(data)
    return data if old not in text else dict(json.loads(text.replace(old, new)))


@dataclass(frozen=True, slots=True)
class Difference:
    """One place where the replay's timeline departs from the recording (None: missing)."""

    index: int
    recorded: str | None
    replayed: str | None


@dataclass(slots=True)
class ReplayReport:
    run_id: str
    """The recorded run."""
    replay_run_id: str
    """The replay's own run in the store."""
    workspace: Path
    workspace_source: str
    """``snapshot``, ``copy of DIR`` or ``copy of the current workspace DIR``."""
    recorded: dict[str, Any]
    """The recorded Result."""
    result: Result
    """The replay's Result."""
    differences: list[Difference] = field(default_factory=list)
    replies_recorded: int = 0
    replies_used: int = 0
    notes: list[str] = field(default_factory=list)
    kept: bool = False

    @property
    def ok(self) -> bool:
        """True when the replay did exactly what the recording did."""
        return not self.differences

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "replay_run_id": self.replay_run_id,
            "ok": self.ok,
            "workspace": str(self.workspace) if self.kept else None,
            "workspace_source": self.workspace_source,
            "replies_recorded": self.replies_recorded,
            "replies_used": self.replies_used,
            "differences": [asdict(d) for d in self.differences],
            "notes": self.notes,
            "recorded": self.recorded,
            "result": self.result.to_dict(),
        }


def replay_run(
    store: Store,
    ref: str,
    *,
    workspace: str | Path | None = None,
    keep: bool = False,
) -> ReplayReport:
    """Replay run ``ref`` (an id, a unique prefix or ``last``) and compare it with the recording.

    Raises ``StoreError`` when the run cannot be replayed (unknown, no model replies, no
    workspace to start from)."""
    from localhand.session.api import run_task  # the runner imports the whole loop: import late

    info = store.run(ref)
    events = store.events(info.id)
    started = next((e.data for e in events if e.type == "task_started"), None)
    if started is None or not recorded_replies(events):
        raise StoreError(f"run {info.id} recorded no model replies, so there is nothing to replay")
    original = Path(str(started.get("workspace") or info.workspace))
    top = Path(os.path.realpath(tempfile.mkdtemp(prefix="localhand-replay-")))
    target = top / "replay" / (original.name or "workspace")  # its name kept; beside it, ours
    replies = recorded_replies(with_helpers(store, events), moved=(str(original), str(target)))
    notes: list[str] = []
    try:
        source = _prepare(store, info.id, original, workspace, target, notes)
        task = _task(store, info.task_id, started, events, target, notes)
        bus = EventBus()
        log = EventLog()
        bus.subscribe(log)
        replay_id = store.begin_run(task, model=info.model, kind="replay", replay_of=info.id)
        bus.subscribe(store.recorder())
        model = ReplayModel(replies, name=str(started.get("model") or info.model or "replay"))
        follow_ups = top / "follow-ups"  # not the user's data directory
        result = run_task(
            task, Settings(model=model.name), bus=bus, model=model, follow_up_dir=follow_ups
        )
    except BaseException:
        shutil.rmtree(top, ignore_errors=True)
        raise
    if model.remaining:
        notes.append(f"{model.remaining} recorded replies were not asked for")
    if regraded(info.result or {}, result.status):
        notes.append(REGRADED_NOTE)
    recorded = [e.data for e in events]
    replayed = [e.to_dict() for e in log.events]
    report = ReplayReport(
        run_id=info.id,
        replay_run_id=replay_id,
        workspace=target,
        workspace_source=source,
        recorded=info.result or {},
        result=result,
        differences=compare(
            timeline(recorded, str(original)), timeline(replayed, str(target.resolve()))
        ),
        replies_recorded=len(replies),
        replies_used=len(model.calls),
        notes=notes,
        kept=keep,
    )
    if not keep:
        shutil.rmtree(top, ignore_errors=True)
    return report


def _prepare(
    store: Store,
    run_id: str,
    original: Path,
    given: str | Path | None,
    target: Path,
    notes: list[str],
) -> str:
    if given is not None:
        source = Path(given).expanduser().resolve()
        if not source.is_dir():
            raise StoreError(f"--workspace {source} is not a directory")
        shutil.copytree(source, target, symlinks=True)
        return f"copy of {source}"
    kept = store.archive(run_id)
    if kept is not None and kept.data is not None:
        unpack(kept.data, target)
        return "snapshot"
    if not original.is_dir():
        raise StoreError(
            f"the run's workspace {original} is gone and the store kept no copy of it; "
            "pass --workspace DIR with the files the run started from"
        )
    notes.append(
        (kept.note if kept is not None and kept.note else "the store kept no copy of the workspace")
        + f"; replaying in a copy of {original} as it is now, which the run may have changed"
    )
    shutil.copytree(original, target, symlinks=True)
    return f"copy of the current workspace {original}"


def _task(
    store: Store,
    task_id: str,
    started: dict[str, Any],
    events: Sequence[StoredEvent],
    workspace: Path,
    notes: list[str],
) -> Task:
    """The recorded task in task-file form, read back as a task file would be, with a fresh id
    and the replay workspace. Without a stored spec, the events tell what they can."""
    spec = store.task_spec(task_id)
    if not spec.get("description"):
        checks: list[Any] = next(
            (e.data.get("checks") or [] for e in events if e.type == "verification"), []
        )
        routing = started.get("routing") or {}
        spec = {
            "description": str(started.get("description", "")),
            "limits": {"iterations": started.get("max_iterations") or None},
            "agentic": routing.get("agentic"),
            "verify": [str(check.get("name", "")) for check in checks or []],
        }
        notes.append("the task's spec was not stored; its checks are taken to be commands")
    if spec.pop("verify_incomplete", False):
        notes.append("some of the task's checks could not be stored and are left out")
    spec = {**spec, "workspace": str(workspace)}
    spec.pop("id", None)
    path = workspace.parent / "task.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    return load_task_file(path, pin=False)  # written here, from the store: nothing to trust


def timeline(events: Sequence[dict[str, Any]], workspace: str) -> list[str]:
    """The comparable steps of a run, one line each, the workspace path written
    ``<workspace>`` (``written``)."""
    steps = []
    for event in events:
        kind = event.get("type")
        if kind == "tool_call":
            mark = "ok" if event.get("ok") else "error"
            args, result = (
                written(event.get(k), workspace) for k in ("args_summary", "result_summary")
            )
            steps.append(f"tool {event.get('tool_name')} {args} → {mark}: {result}")
        elif kind == "nudge":
            message = written(event.get("message"), workspace)
            steps.append(f"nudge {event.get('nudge_number')}: {message}")
        elif kind == "guardrail":
            steps.append(
                f"guardrail {event.get('guardrail')}: {written(event.get('reason'), workspace)}"
            )
        elif kind == "verification":
            for check in event.get("checks") or []:
                outcome = "pass" if check.get("passed") else "fail"
                steps.append(f"verify {written(check.get('name'), workspace)}: {outcome}")
        elif kind == "task_finished":
            r = event.get("result") or {}
            line = (
                f"result {r.get('status')} ({r.get('termination_reason')}), "
                f"{r.get('iterations_used')} iterations, files {r.get('files_modified')}"
            )
            steps.append(written(line, workspace))
    return steps


def written(text: Any, workspace: str) -> str:
    """``text`` with ``workspace`` written ``<workspace>``."""
    return str(text).replace(workspace, WORKSPACE) if workspace else str(text)


REGRADED_NOTE = (
    "the recording passed with no checks, before such a run was graded `unverified` (a final "
    "answer with nothing to show it right): the status differs by that rule, not by the loop"
)


def regraded(recorded: dict[str, Any], status: str) -> bool:
    """Whether a recorded ``pass`` without checks replays as ``unverified``: the status rule
    changed (no pass without evidence), which the report says rather than leaving it to look
    like a change in the loop. The statuses still differ, and the difference is reported."""
    return (
        status == "unverified"
        and recorded.get("status") == "pass"
        and not recorded.get("verification")
    )


def compare(recorded: Sequence[str], replayed: Sequence[str]) -> list[Difference]:
    """Where two timelines differ, aligned so one extra step shows as one difference."""
    differences = []
    matcher = difflib.SequenceMatcher(a=recorded, b=replayed, autojunk=False)
    for op, a1, a2, b1, b2 in matcher.get_opcodes():
        if op == "equal":
            continue
        for offset in range(max(a2 - a1, b2 - b1)):
            old = recorded[a1 + offset] if a1 + offset < a2 else None
            new = replayed[b1 + offset] if b1 + offset < b2 else None
            differences.append(Difference(min(a1, b1) + offset, old, new))
    return differences

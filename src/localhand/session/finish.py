"""How every run ends, whichever door it came in by and whichever mode ran it (the tool loop,
the simple path, plan mode): the loop hands back its ``Outcome`` (``localhand.run.lifecycle``),
unchecked and unannounced, and ``finish`` makes it the Result, in this order:

1. **The checks** run on the workspace as the run left it (their own files as they were before
   it: ``localhand.evidence.checkguard``) and are announced (``verification``); the loop makes
   its Result of them (its grade, what changed, the git diff); given none, the check the model
   ran, if it ran the project's (``adopted_check``: ``localhand.evidence.adopt``).
2. **The conversation is kept** in the store, while the run is still open there, so that it can
   be continued (``--continue``); a run the model never answered in leaves nothing to continue.
   On llama-server with ``--slot-save-path`` its cache is kept too (``kept_cache``).
3. **The answer as JSON** (``--output-schema``, ``localhand.session.structured``): one more
   request, after the answer; a run whose JSON does not follow the schema fails.
4. **What is left to do**: an ``unverified`` run says which command would check it
   (``suggested_check``); one that did not pass gets a follow-up task file (``follow_up_task``).
5. **The sandbox** the run's commands ran in, reported in the Result.
6. **The stop hooks** get the Result as it will be announced (their ``hook_ran`` events).
7. **The announcement**: ``task_finished``, with the Result.

Steps 2 and 3, 4's follow-up task and 6 need the door's parts (``Prepared``: its store, schema,
follow-up folder and hooks); a loop run without a door (``localhand.Agent``) gets the others.
A plan's Result (``PlanResult``) gets 1 (a plan has no checks), 6 and 7 only. The loop knows
none of this: it hands back what happened (``Outcome``); a run's data goes down once and comes
back up once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from localhand.events import TaskFinished
from localhand.evidence.adopt import adopt
from localhand.evidence.project_checks import detect_check
from localhand.evidence.verify import CommandCheck
from localhand.paths import data_dir
from localhand.run.lifecycle import Outcome, R, Run
from localhand.safety.box.sandbox import current_sandbox
from localhand.session.kept_cache import keep
from localhand.session.runner import hooks_for
from localhand.types import Result

if TYPE_CHECKING:
    from localhand.run.task import Task
    from localhand.session.prepared import Prepared
    from localhand.types import Message


def finish(outcome: Outcome[R], ready: Prepared | None = None) -> R:
    """The announced Result of ``outcome``, finished in the module docstring's order; with
    ``ready``, the door's parts of it too."""
    life = outcome.life
    adopted = _adopt(life)
    result = outcome.settle(life.verify() if life.checks else [])
    if isinstance(result, Result):  # a plan's result has no conversation, nothing left to do
        result.adopted_check = adopted
        _finish_run(result, outcome, ready)
    hooks = hooks_for(ready) if ready is not None else None  # None without [hooks]
    if hooks is not None:
        hooks.at_stop(result)
    life.emit(TaskFinished(task_id=life.task_id, result=result.to_dict()))
    return result


def _adopt(life: Run) -> str | None:
    """Given no check, the project's check the model ran becomes the run's; why one it ran
    was not adopted is a warning."""
    ran, workspace = life.state.commands, life.workspace
    if life.checks or life.guard is None or not ran or not workspace.is_dir():
        return None  # (a workspace removed mid-run has nothing to check)
    adopted, refused = adopt(ran, workspace, life.description, life.guard)
    if refused is not None:
        life.warn(refused)
    if adopted is not None:
        life.checks = [CommandCheck(adopted)]
    return adopted


def _finish_run(result: Result, outcome: Outcome[Any], ready: Prepared | None) -> None:
    """Steps 2 to 5 for the Result of the tool loop or the simple path."""
    if ready is not None:
        _keep_for_continuing(ready, outcome)
        if ready.output_schema is not None and outcome.model is not None:
            from localhand.session.structured import answer_as_json  # off the first request's path

            answer_as_json(result, outcome.messages, outcome.model, ready.output_schema, ready.bus)
    if result.status == "unverified":
        found = detect_check(outcome.life.workspace, outcome.life.description)
        result.suggested_check = found.command if found else None
    elif result.status != "pass" and ready is not None:
        result.follow_up_task = _write_follow_up(ready, result)
    if result.sandbox is None:
        result.sandbox = current_sandbox().report()


def _tests_collected(outcome: Outcome[Any]) -> dict[str, Any] | None:
    """What the run's checks collected at the start of its chain, for a run that continues it."""
    guard = outcome.life.guard
    kept = {c: t.record() for c, t in guard.collected.items() if t.names} if guard else {}
    return kept or None


def _keep_for_continuing(ready: Prepared, outcome: Outcome[Any]) -> None:
    """The run's conversation, in the store the run is open in (whichever door opened it), and
    on llama-server its cache; a run the model never answered in leaves nothing to continue."""
    store, messages = ready.store, outcome.messages
    if store is None or not _answered(messages):
        return
    try:
        from localhand.store.lineage import save_conversation  # off the first request's path

        if (run_id := store.open_run_for(ready.task.id)) is not None:
            save_conversation(store, run_id, messages, _tests_collected(outcome))
    except Exception as exc:  # a store that fails here must not cost the run its Result
        ready.warn(f"the conversation was not kept, so this run cannot be continued: {exc}")
    if outcome.model is not None:
        keep(ready, outcome.model)


def _answered(messages: Sequence[Message]) -> bool:
    """Whether the model said anything: a run that ended before it did leaves nothing to
    continue (``continuation`` then says so, rather than carry on a bare question)."""
    return any(
        m.get("role") == "assistant" and (m.get("content") or m.get("tool_calls")) for m in messages
    )


def _write_follow_up(ready: Prepared, result: Result) -> str:
    """The follow-up task file of a run that did not pass (default folder: ``tasks/`` in
    localhand's data directory)."""
    from localhand.taskfile import write_task_file  # pydantic models: load when needed

    task = ready.task
    remaining = task.with_changes(
        id=f"{task.id}-followup", description=follow_up_description(task, result)
    )
    return str(write_task_file(remaining, ready.follow_up_dir or data_dir() / "tasks"))


def follow_up_description(task: Task, result: Result) -> str:
    """The original task, restated with what the last run left undone."""
    lines = [task.description.strip(), ""]
    lines.append(
        f"A previous attempt stopped ({result.termination_reason}) after "
        f"{result.iterations_used} iterations."
    )
    if result.files_modified:
        lines.append("It modified: " + ", ".join(result.files_modified) + ".")
    if result.completed:
        lines.append("Already passing: " + "; ".join(result.completed) + ".")
    if result.remaining:
        lines.append("Still failing, to finish now: " + "; ".join(result.remaining) + ".")
    return "\n".join(lines)

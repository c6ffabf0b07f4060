"""The tool loop's wiring behind the door: a model, the tools, the loop or the simple path.

``localhand.session.door.Session`` calls ``run_loop`` once the prologue is done, and finishes
the ``Outcome`` it returns (``localhand.session.finish``); the public ``run_task`` is in
``localhand.session.api``."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from localhand.config.settings import Settings
from localhand.errors import ConfigError
from localhand.models.base import declared
from localhand.prompt.tool_text import known_window
from localhand.run.agent import ToolLoop
from localhand.run.ledger import Ledger
from localhand.run.routing import route
from localhand.run.task import Task
from localhand.safety.approval.approver import check_policy
from localhand.safety.box.limits import configured
from localhand.safety.box.sandbox import run_sandbox
from localhand.session import delegating
from localhand.session.backend import select_backend
from localhand.session.kept_cache import restore, run_tools
from localhand.skills import find_skills
from localhand.telemetry import backend_chosen

if TYPE_CHECKING:
    from localhand.hooks.hookset import Hooks
    from localhand.run.lifecycle import Outcome
    from localhand.session.prepared import Prepared
    from localhand.store import Store
    from localhand.types import Result


def sandbox_of(settings: Settings, warn: Callable[[str], None]) -> AbstractContextManager[Any]:
    """The command sandbox that ``settings`` ask for, in force for the block."""
    return run_sandbox(
        settings.sandbox,
        network=not settings.isolate_network,
        read=settings.sandbox_read,
        warn=warn,
        limits=configured(settings.sandbox_limits),
        network_setting=settings.sandbox_network,
        allow_hosts=settings.sandbox_allow_hosts,
        env=settings.sandbox_env,
    )


def run_loop(ready: Prepared) -> Outcome[Result]:
    """The tool loop (or the simple path, one streamed answer) for the task the door
    prepared, with its model, approver, store and cancel switch, to its Outcome."""
    task, settings, store, bus = ready.task, ready.settings, ready.store, ready.bus
    decision = route(task.description, True if ready.continuing else task.agentic)
    _link_parent(task, store, ready)
    model = ready.model or select_backend(settings, ready.warn, on_status=ready.status)
    backend_chosen(declared(model).server_kind)  # auto may have fallen back: traces say which
    ledger = _ledger(settings, store)
    if not decision.agentic:  # one streamed answer, no tools: see localhand.run.simple
        from localhand.run.simple import run_simple, simple_messages  # off the first request's path

        return run_simple(
            model,
            task,
            bus=bus,
            routing=decision,
            ledger=ledger,
            cancellation=ready.cancellation,
            messages=simple_messages(task, model, ready.warn, settings.instruction_files),
        )
    skills = find_skills(task.workspace, ready.warn, bus=bus, task_id=task.id)
    delegation = delegating.delegation_for(ready, declared(model))
    tools = run_tools(
        settings,
        task.workspace,
        skills,
        delegation,
        policy=check_policy(settings.approve),
        approver=ready.announced,
        isolate_network=settings.isolate_network,
        checkpoint=checkpoint_hook(task, store),
    )
    with ExitStack() as lifetime:
        if settings.mcp_servers:  # only then: the SDK takes half a second to import
            from localhand.mcp.tools import mcp_registry  # off the first request's path

            tools = lifetime.enter_context(  # the servers stop when the run ends
                mcp_registry(
                    tools,
                    settings.mcp_servers,
                    policy=check_policy(settings.approve),
                    approver=ready.approver,
                    bus=bus,
                    task_id=task.id,
                    window=lambda: known_window(model),  # past a tenth: behind find_tools
                )
            )
        hooks = hooks_for(ready)
        if hooks is not None:  # inside a door's wrapper: an editor sees what the model reads
            from localhand.hooks.tools import HookedTools  # off the first request's path

            tools = HookedTools(tools, hooks)
        if ready.wrap_tools is not None:
            tools = ready.wrap_tools(tools)
        delegation.parent = loop = ToolLoop(  # the loop a helper forks from
            model,
            task.workspace,
            tools=skills.guarding(tools),  # last: no wrapper's call goes round allowed-tools
            skill_list=skills.listing(),
            limits=replace(task.limits(decision.agentic), nudges_per=settings.nudge_limit_per),
            checks=task.checks,
            bus=bus,
            task_id=task.id,
            routing=decision,
            ledger=ledger,
            context_files=task.context_files,
            instruction_files=settings.instruction_files,
            cancellation=ready.cancellation,
            history=ready.continuing.history if ready.continuing else (),
            tests_before=ready.continuing.collected if ready.continuing else None,
        )
        restored = restore(ready, declared(model))  # a continued run's cache, before it asks
        outcome = loop.play(task.description)
        loop.state.prefill.restored_tokens = restored  # the Result's, settled later
        return outcome


def hooks_for(ready: Prepared) -> Hooks | None:
    """The user's hooks for this run (``[hooks]`` in their config.toml), or None."""
    if not ready.settings.hooks:
        return None
    from localhand.hooks.hookset import Hooks  # off the first request's path

    task = ready.task
    return Hooks(
        ready.settings.hooks,
        task.workspace,
        bus=ready.bus,
        task_id=task.id,
        run_id=lambda: run_id_of(task, ready.store),
        isolate_network=ready.settings.isolate_network,
        approver=ready.announced,
    )


def run_id_of(task: Task, store: Store | None) -> str | None:
    """The store's id of ``task``'s run, once it opened one; None without (a store that fails
    here must not stop a hook or a command: they go by the task id)."""
    try:
        return store.open_run_for(task.id) if store is not None else None
    except Exception:  # see above: never fatal
        return None


def _link_parent(task: Task, store: Store | None, ready: Prepared) -> None:
    """Name the run this one continues, in the store the run is open in."""
    if store is None or ready.continuing is None:
        return
    run_id = store.open_run_for(task.id)
    if run_id is not None:
        from localhand.store.lineage import link_parent  # off the first request's path

        link_parent(store, run_id, ready.continuing.parent)


def checkpoint_hook(task: Task, store: Store | None) -> Callable[[str], str | None]:
    """What copies ``task``'s workspace before a dangerous command (``localhand undo RUN``
    restores it), filed under the store's run id: the run ``RUN`` names is the store's, and a
    task id can be shared by several runs (a task file run twice, a replay). Without a store,
    or before it opened the run, the copy is filed by task id and ``undo`` finds it by time."""

    def take(command: str) -> str | None:
        from localhand.safety.undo.checkpoint import checkpoint_note  # only when one is needed

        run_id = run_id_of(task, store)
        return checkpoint_note(task.workspace, command, task_id=task.id, run_id=run_id)

    return take


def _ledger(settings: Settings, store: Store | None) -> Ledger | None:
    if store is None:
        if settings.daily_token_budget is not None:
            raise ConfigError(
                "a daily token budget needs the run store to count what all tasks spent; "
                "check LOCALHAND_DB or unset the budget"
            )
        return None
    return Ledger(store, settings.daily_token_budget, settings.price_in, settings.price_out)

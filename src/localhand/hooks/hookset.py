"""The hooks of one run: which run for a call, what the model reads of them, and a
``hook_ran`` event for each."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import KW_ONLY, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from localhand.events import HookRan, summarize
from localhand.hooks.command import HookOutcome, run_hook
from localhand.hooks.config import EDIT_TOOLS, Hook
from localhand.safety.secrets.scrub import scrub_text
from localhand.types import ToolCall, ToolResult

if TYPE_CHECKING:
    from localhand.events import EventBus
    from localhand.safety.approval.approver import Approver


class Announced(Protocol):
    """A run's Result (``Result``, plan mode's ``PlanResult``): what a ``stop`` hook reads."""

    def to_dict(self) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True)
class Hooks:
    """The user's hooks for one run in ``workspace``.

    ``before`` runs the ``pre_tool`` hooks of a call (the first that exits 2 blocks it);
    ``after`` runs its ``post_tool`` hooks, and its ``post_edit`` hooks when it was a
    successful edit or write, adding what they said to the result the model reads; ``at_stop``
    runs the ``stop`` hooks with the run's Result. Each hook's run is a ``hook_ran`` event on
    ``bus``. ``run_id`` gives the store's id of the run (it returns None: the task id is used).
    """

    hooks: Sequence[Hook]
    workspace: Path
    _: KW_ONLY
    bus: EventBus
    task_id: str
    run_id: Callable[[], str | None]
    isolate_network: bool
    approver: Approver

    def of(self, kind: str, tool: str | None = None, path: str | None = None) -> list[Hook]:
        """The hooks of ``kind`` that apply to a call of ``tool`` on ``path``."""
        return [h for h in self.hooks if h.kind == kind and (tool is None or h.applies(tool, path))]

    def before(self, call: ToolCall) -> ToolResult | None:
        """The result that tells the model a ``pre_tool`` hook blocked ``call``, or None when
        it may run."""
        path = _path_of(call)
        for hook in self.of("pre_tool", call.name, path):
            done = self._run(hook, self._event("pre_tool", call), call.name, path)
            if done.blocks:
                reason = done.stderr.strip() or "(the hook gave no reason on its stderr)"
                return ToolResult(
                    "Blocked by the user's pre_tool hook: the call did not run. The hook's "
                    f"reason:\n{scrub_text(reason)}",
                    ok=False,
                )
        return None

    def after(self, call: ToolCall, result: ToolResult) -> ToolResult:
        """``result`` with what the ``post_tool`` (and, after a successful edit or write,
        ``post_edit``) hooks said added, so the model reads it in the same turn."""
        path = _path_of(call)
        kinds = ["post_tool"]
        if call.name in EDIT_TOOLS and result.ok:
            kinds.append("post_edit")
        notes = []
        for kind in kinds:
            for hook in self.of(kind, call.name, path):
                done = self._run(hook, self._event(kind, call, result), call.name, path)
                note = _note(done)
                if note:
                    notes.append(note)
        if not notes:
            return result
        return replace(result, content="\n\n".join([result.content, *notes]))

    def at_stop(self, result: Announced) -> None:
        """Run the ``stop`` hooks with ``result`` on their stdin; their output is recorded only."""
        for hook in self.of("stop"):
            self._run(hook, {**self._event("stop"), "result": result.to_dict()}, None, None)

    def _event(
        self, kind: str, call: ToolCall | None = None, result: ToolResult | None = None
    ) -> dict[str, Any]:
        """What a hook reads on its stdin."""
        run_id = self.run_id()
        event: dict[str, Any] = {
            "hook": kind,
            "run_id": run_id or self.task_id,
            "task_id": self.task_id,
            "workspace": str(self.workspace),
        }
        if call is not None:
            event.update(tool=call.name, path=_path_of(call), args=call.arguments)
        if result is not None:
            event["result"] = {"content": result.content, "ok": result.ok}
        return event

    def _run(
        self, hook: Hook, event: dict[str, Any], tool: str | None, path: str | None
    ) -> HookOutcome:
        done = run_hook(
            hook,
            event,
            self.workspace,
            tool=tool,
            path=path,
            isolate_network=self.isolate_network,
            approver=self.approver,
        )
        self.bus.emit(
            HookRan(
                task_id=self.task_id,
                hook=hook.kind,
                command=done.command,
                exit_code=done.exit_code,
                duration_ms=done.duration_ms,
                blocked=done.blocks,
                timed_out=done.timed_out,
                output_summary=summarize(scrub_text(done.output)),
                tool_name=tool,
            )
        )
        return done


def _path_of(call: ToolCall) -> str | None:
    path = call.arguments.get("path")
    return path if isinstance(path, str) and path else None


def _note(done: HookOutcome) -> str:
    """What the model reads of a post hook: its output, and its status when it failed; nothing
    for a hook that passed in silence."""
    output = scrub_text(done.output.strip())
    if not output and not done.failed:
        return ""
    head = f"[{done.hook.kind} hook `{summarize(done.command, 100)}`: {done.status()}]"
    return f"{head}\n{output}" if output else head


__all__ = ["Hooks"]

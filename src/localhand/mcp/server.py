"""``localhand mcp``: localhand as an MCP server, so that Claude Code, Codex, Goose or an editor
can hand a task to a local model.

Tools: ``run_task`` (the Result as structured content and as JSON text), ``plan`` (a plan
file or a goal), ``list_runs`` and ``show_run`` (the run store). A run sends a progress
notification per iteration (per step for a plan); a client's cancellation stops it as Ctrl-C
does (``jobs``). Runs are recorded like any other, so ``localhand runs`` and the dashboard
show them too.

A workspace, and a plan file, must lie under a root: one the client declares (MCP roots,
asked for when the client has the capability) or one given with ``--root`` (default: the
directory ``localhand mcp`` was started in, unless that is ``/``). Nobody sits at a
terminal here, so whatever the approval policy says needs a yes is refused, and the model is
told so.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal
from urllib.parse import unquote, urlparse

from mcp.server.mcpserver import Context, ListRoots, MCPServer, Resolve
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ListRootsResult, TextContent
from pydantic import Field

from localhand.errors import ConfigError
from localhand.mcp.jobs import RunJob, run_job

if TYPE_CHECKING:
    from localhand.config import Settings
    from localhand.events import EventBus
    from localhand.store import Store

INSTRUCTIONS = (
    "localhand runs a task with a local model (Ollama, llama.cpp, ...) that reads, edits and "
    "runs code in a workspace, and reports a Result: status pass/partial_pass/fail/error, or "
    "unverified (the model said done but no check ran: not a pass; suggested_check names the "
    "command that would check it), the files it changed and the checks that passed. Give "
    "small, well-defined tasks with a verify command that proves them done ('auto': the "
    "command the project is tested with)."
)
MAX_EVENTS = 500

Backend = Literal["auto", "ollama", "openai", "embedded"]
PlanMode = Literal["teacher", "planner", "agentic"]


def client_roots(ctx: Context) -> ListRoots | None:
    """Ask the client for its roots when it has said it can answer (the capability)."""
    capabilities = ctx.client_capabilities
    return ListRoots() if capabilities is not None and capabilities.roots is not None else None


Roots = Annotated[ListRootsResult | None, Resolve(client_roots)]


def build_server(
    settings: Settings, *, roots: Sequence[Path] = (), db: Path | None = None
) -> MCPServer:
    """The MCP server; runs take ``settings``, overridden by each call's arguments."""
    from localhand import __version__

    configured = [Path(root).expanduser().resolve() for root in roots] or _default_roots()
    app: MCPServer = MCPServer(
        "localhand", instructions=INSTRUCTIONS, version=__version__, log_level="WARNING"
    )

    @app.tool()
    async def run_task(
        task: Annotated[str, Field(description="What to do, in plain words.")],
        workspace: Annotated[str, Field(description="Absolute path of the directory to work in.")],
        roots: Roots,
        ctx: Context,
        model: Annotated[str | None, Field(description="Model name, e.g. qwen3:8b.")] = None,
        backend: Annotated[Backend | None, Field(description="Where the model runs.")] = None,
        host: Annotated[str | None, Field(description="The model server's URL.")] = None,
        max_iterations: Annotated[int | None, Field(ge=1, description="Model turns.")] = None,
        timeout: Annotated[float | None, Field(gt=0, description="Wall clock, seconds.")] = None,
        verify: Annotated[
            list[str] | None,
            Field(
                description="Shell commands that must exit 0 for the task to pass; 'auto' for "
                "the project's own test command. Without any, a finished run is 'unverified'."
            ),
        ] = None,
    ) -> CallToolResult:
        """Run a coding task with a local model in a workspace; returns localhand's Result."""
        from localhand.run.task import Task
        from localhand.run.verify import CommandCheck

        root = within(workspace, allowed(roots, configured), "workspace")
        spec = Task(description=task, workspace=root).with_changes(
            max_iterations=max_iterations,
            timeout_s=timeout,
            model=model,
            backend=backend,
            checks=tuple(CommandCheck(command) for command in verify or ()) or None,
        )
        job = RunJob(spec, settings.with_overrides(host=host), db=db)
        return answer(await _run(job, ctx))

    @app.tool()
    async def plan(
        workspace: Annotated[str, Field(description="Absolute path of the directory to work in.")],
        roots: Roots,
        ctx: Context,
        plan_file: Annotated[
            str | None, Field(description="A plan file (JSON or YAML), relative to workspace.")
        ] = None,
        goal: Annotated[str | None, Field(description="Or a goal to draft a plan for.")] = None,
        mode: Annotated[PlanMode | None, Field(description="How failures are handled.")] = None,
        model: Annotated[str | None, Field(description="Model name, e.g. qwen3:8b.")] = None,
        backend: Annotated[Backend | None, Field(description="Where the model runs.")] = None,
        host: Annotated[str | None, Field(description="The model server's URL.")] = None,
        timeout: Annotated[float | None, Field(gt=0, description="Wall clock, seconds.")] = None,
    ) -> CallToolResult:
        """Run a plan of shell commands step by step (agentic mode repairs failed steps)."""
        from localhand.run.task import Task

        limits = allowed(roots, configured)
        root = within(workspace, limits, "workspace")
        if (plan_file is None) == (goal is None):
            raise ToolError("give plan_file or goal, not both and not neither")
        path = None if plan_file is None else within(str(root / plan_file), limits, "plan_file")
        run_settings = settings.with_overrides(model=model, backend=backend, host=host)
        recorded = Task(description=goal or f"plan {plan_file}", workspace=root)

        def work(bus: EventBus, store: Store | None) -> Any:
            from localhand.run.plans import run_plan
            from localhand.safety.approval import DenyAll

            return run_plan(
                path,
                root,
                run_settings,
                goal=goal,
                mode=mode,
                bus=bus,
                approver=DenyAll(),
                policy=run_settings.approve,
                timeout_s=timeout,
                task_id=recorded.id,
            )

        return answer(await _run(RunJob(recorded, run_settings, db=db, work=work), ctx))

    @app.tool()
    def list_runs(
        limit: Annotated[int, Field(ge=1, le=200, description="How many, newest first.")] = 20,
    ) -> CallToolResult:
        """List recorded runs, newest first: id, status, termination reason, task."""
        runs = [info.to_dict() for info in _store(db).runs(limit)]
        for run in runs:
            run.pop("result", None)
        return answer({"runs": runs})

    @app.tool()
    def show_run(
        run: Annotated[str, Field(description="A run id (or prefix), 'last', or a task_id.")],
        events: Annotated[int, Field(ge=0, le=MAX_EVENTS, description="Latest events.")] = 100,
    ) -> CallToolResult:
        """Show a recorded run: its Result and its latest events (tool calls, stops, checks)."""
        from localhand.safety.scrub import scrub_data

        store = _store(db)
        try:
            match = store.find_run(run)
        except ConfigError as exc:
            raise ToolError(str(exc)) from None
        timeline = store.events(match.run.id)[-events:] if events else []
        return answer(
            {
                "run": scrub_data(match.run.to_dict()),
                "events": [scrub_data(event.to_dict()) for event in timeline],
                "note": match.note,
            }
        )

    return app


async def _run(job: RunJob, ctx: Context) -> Any:
    try:
        return await run_job(job, ctx.report_progress)
    except ConfigError as exc:
        raise ToolError(str(exc)) from None


def answer(result: Any) -> CallToolResult:
    """``result`` (a Result, a PlanResult or a dict) as structured content and JSON text."""
    data = result if isinstance(result, dict) else result.to_dict()
    text = json.dumps(data, ensure_ascii=False, default=str)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def allowed(client: ListRootsResult | None, configured: Sequence[Path]) -> list[Path]:
    """The roots a workspace may be under: the client's ``file://`` roots and ours."""
    roots = list(configured)
    for root in client.roots if client is not None else ():
        uri = urlparse(str(root.uri))
        if uri.scheme == "file":
            roots.append(Path(unquote(uri.path)).resolve())
    return roots


def within(path: str, roots: Sequence[Path], what: str) -> Path:
    """``path`` resolved (symlinks too), or a ``ToolError`` when it lies under no root."""
    given = Path(path).expanduser()
    if not given.is_absolute():
        raise ToolError(f"{what} must be an absolute path, not {path!r}")
    real = given.resolve()
    if not any(real == root or root in real.parents for root in roots):
        shown = ", ".join(str(root) for root in roots) or "none"
        raise ToolError(
            f"{what} {real} is outside the roots this server may work in ({shown}); declare "
            "it as a root in the client, or start localhand mcp with --root DIR"
        )
    if what == "workspace" and not real.is_dir():
        raise ToolError(f"workspace {real} is not a directory")
    return real


def _default_roots() -> list[Path]:
    """The directory the server was started in, unless that is ``/``: some clients start
    their servers there, and a root of ``/`` would let a workspace be anywhere."""
    here = Path.cwd().resolve()
    return [] if here == Path(here.anchor) else [here]


def _store(db: Path | None) -> Store:
    from localhand.store import open_store

    try:
        return open_store(db)
    except ConfigError as exc:
        raise ToolError(str(exc)) from None


__all__ = ["INSTRUCTIONS", "allowed", "answer", "build_server", "within"]

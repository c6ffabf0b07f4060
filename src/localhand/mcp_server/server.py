"""``localhand mcp``: localhand as an MCP server, so that Claude Code, Codex, Goose or an editor
can hand a task to a local model.

Tools: ``run_task`` (the Result as structured content and as JSON text), ``plan`` (a plan
file or a goal), ``list_runs`` and ``show_run`` (the run store). A run sends a progress
notification per iteration (per step for a plan); a client's cancellation stops it as Ctrl-C
does (``jobs``). Runs are recorded like any other, so ``localhand runs`` and the dashboard
show them too; ``list_runs`` and ``show_run`` show only runs whose workspace lies under the
roots.

A workspace, and a plan file, must lie under a root: one the client declares (MCP roots,
asked for when the client has the capability) or one given with ``--root`` (default: the
directory ``localhand mcp`` was started in, unless that is ``/``). A client cannot widen the
roots past what the user configured: a client root that is ``/``, the user's home, or an
ancestor of the start directory or of a ``--root`` is ignored (``too_wide``). Nobody sits at a
terminal here, so whatever the approval policy says needs a yes is refused, and the model is
told so.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal
from urllib.parse import unquote, urlparse

from mcp.server.mcpserver import Context, ListRoots, MCPServer, Resolve
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ListRootsResult, TextContent
from pydantic import Field

from localhand._version import __version__
from localhand.errors import ConfigError
from localhand.evidence.verify import CommandCheck
from localhand.mcp_server.jobs import run_job
from localhand.run.task import Task
from localhand.safety.approval.approver import DenyAll
from localhand.safety.secrets.scrub import scrub_data
from localhand.session.continuing import continued_from_store
from localhand.session.door import Session
from localhand.session.plans import PlanRequest
from localhand.store import open_store

if TYPE_CHECKING:
    from localhand.config.settings import Settings

INSTRUCTIONS = (
    "localhand runs a task with a local model (Ollama, llama.cpp, ...) that reads, edits and "
    "runs code in a workspace, and reports a Result: status pass/partial_pass/fail/error, or "
    "unverified (the model said done but no check was given, run or adopted: not a pass; "
    "suggested_check names the "
    "command that would check it), the files it changed and the checks that passed. Give "
    "small, well-defined tasks with a verify command that proves them done ('auto': the "
    "command the project is tested with)."
)
MAX_EVENTS = 500
SCAN_RUNS = 2000
"""How many of the newest runs ``list_runs`` looks through for ones under the roots."""

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
        continue_from: Annotated[
            str | None,
            Field(
                description="A recorded run's id (or 'last') to carry on with `task` as the new "
                "instructions: its conversation, model and settings unless given. The run "
                "must have worked in `workspace`."
            ),
        ] = None,
    ) -> CallToolResult:
        """Run a coding task with a local model in a workspace; returns localhand's Result."""
        root = within(workspace, allowed(roots, configured), "workspace")
        spec = Task(description=task, workspace=root).with_changes(
            max_iterations=max_iterations,
            timeout_s=timeout,
            model=model,
            backend=backend,
            checks=tuple(CommandCheck(command) for command in verify or ()) or None,
        )
        # Nobody is at a terminal here: what needs a person's yes (a dangerous verify command
        # included) is refused, with a reason.
        parent = None
        if continue_from is not None:
            spec, parent = _continued(continue_from, spec, db)
        session = Session(
            spec, settings.with_overrides(host=host), approver=DenyAll(), continuing=parent
        )
        return answer(await _run(session, db, ctx))

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
        limits = allowed(roots, configured)
        root = within(workspace, limits, "workspace")
        if (plan_file is None) == (goal is None):
            raise ToolError("give plan_file or goal, not both and not neither")
        path = None if plan_file is None else within(str(root / plan_file), limits, "plan_file")
        run_settings = settings.with_overrides(model=model, backend=backend, host=host)
        recorded = Task(
            description=goal or f"plan {plan_file}", workspace=root, mode=mode, timeout_s=timeout
        )
        request = PlanRequest(path)  # no path: a plan drafted for the goal
        session = Session(recorded, run_settings, approver=DenyAll(), plan=request)
        return answer(await _run(session, db, ctx))

    @app.tool()
    def list_runs(
        roots: Roots,
        limit: Annotated[int, Field(ge=1, le=200, description="How many, newest first.")] = 20,
    ) -> CallToolResult:
        """List recorded runs in workspaces under the roots, newest first: id, status,
        termination reason, task."""
        limits = allowed(roots, configured)
        with _told():
            store = open_store(db)
        found: list[dict[str, Any]] = []
        for batch in (limit * 4, SCAN_RUNS):  # most runs are usually ours: one short read
            found = [info.to_dict() for info in store.runs(batch) if inside(info.workspace, limits)]
            if len(found) >= limit or batch >= SCAN_RUNS:
                break
        runs = found[:limit]
        for run in runs:
            run.pop("result", None)
        return answer({"runs": runs})

    @app.tool()
    def show_run(
        run: Annotated[str, Field(description="A run id (or prefix), 'last', or a task_id.")],
        roots: Roots,
        events: Annotated[int, Field(ge=0, le=MAX_EVENTS, description="Latest events.")] = 100,
    ) -> CallToolResult:
        """Show a recorded run (in a workspace under the roots): its Result and its latest
        events (tool calls, stops, checks)."""
        with _told():
            store = open_store(db)
            match = store.find_run(run)
        if not inside(match.run.workspace, allowed(roots, configured)):
            raise ToolError(  # the same answer as for a run that does not exist
                f"no run {run!r} in a workspace under this server's roots"
            )
        timeline = store.events(match.run.id)[-events:] if events else []
        return answer(
            {
                "run": scrub_data(match.run.to_dict()),
                "events": [scrub_data(event.to_dict()) for event in timeline],
                "note": match.note,
            }
        )

    return app


def _continued(ref: str, given: Any, db: Path | None) -> tuple[Any, Any]:
    """``continue_from``: the earlier run, which must have worked in the workspace the call
    names (the roots were checked against that one), and the task that carries it on."""
    with _told():
        spec, parent = continued_from_store(ref, given, db)
    if spec.workspace != given.workspace:
        raise ToolError(
            f"run {parent.parent} worked in {spec.workspace}, not in {given.workspace}: "
            "pass its workspace to continue it"
        )
    return spec, parent


async def _run(session: Session, db: Path | None, ctx: Context) -> Any:
    with _told():
        return await run_job(session, ctx.report_progress, db=db)


def answer(result: Any) -> CallToolResult:
    """``result`` (a Result, a PlanResult or a dict) as structured content and JSON text."""
    data = result if isinstance(result, dict) else result.to_dict()
    text = json.dumps(data, ensure_ascii=False, default=str)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def allowed(client: ListRootsResult | None, configured: Sequence[Path]) -> list[Path]:
    """The roots a workspace may be under: ours, and the client's ``file://`` roots except
    those that would widen them past what the user configured (``too_wide``)."""
    roots = list(configured)
    for root in client.roots if client is not None else ():
        uri = urlparse(str(root.uri))
        if uri.scheme == "file":
            path = Path(unquote(uri.path)).resolve()
            if not too_wide(path, configured):
                roots.append(path)
    return roots


def too_wide(root: Path, configured: Sequence[Path]) -> bool:
    """Whether a client's root would reach past what the user configured: ``/``, the user's
    home, or an ancestor of the server's start directory or of a configured root (a client
    that declares ``/home/me`` for a server started in ``/home/me/project`` would otherwise
    see every project of the user's). A root the user gave with ``--root`` is never dropped."""
    if root in configured:
        return False
    home = Path.home().resolve()
    here = Path.cwd().resolve()
    return (
        root == Path(root.anchor)
        or root == home
        or root in here.parents
        or any(root in mine.parents for mine in configured)
    )


def inside(workspace: str, roots: Sequence[Path]) -> bool:
    """Whether a recorded run's ``workspace`` lies under one of ``roots``."""
    if not workspace:
        return False
    path = Path(workspace)
    return any(path == root or root in path.parents for root in roots)


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


@contextmanager
def _told() -> Iterator[None]:
    """Bad input (a ``ConfigError``: a store that cannot be opened, no such run) as the tool's
    error, whose message says what to do."""
    try:
        yield
    except ConfigError as exc:
        raise ToolError(str(exc)) from None


__all__ = ["INSTRUCTIONS", "allowed", "answer", "build_server", "inside", "too_wide", "within"]

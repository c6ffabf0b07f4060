"""The dashboard's FastAPI app: a JSON API over the store, a WebSocket per run, a static page.

    GET  /                       the page (plain HTML/JS/CSS from ``static/``, no build step)
    GET  /api/runs?limit=N       runs, newest first, each with ``waiting``: its approvals
                                 nobody has answered yet (``Store.waiting_approvals``)
    GET  /api/waiting            those approvals per running run, and their ``total``
    GET  /api/runs/{run}         one run and its events (``?after=SEQ``: only later ones;
                                 ``?events=false``: none)
    GET  /api/runs/{run}/diff    what the run changed: files with +/- lines, the diff (scrubbed),
                                 the whole undo command (``localhand.store.run_diff``)
    POST /api/runs               start a task (JSON body: ``StartRequest``) → ``{"run_id"}``
    POST /api/runs/{run}/cancel  Stop: the run ends ``cancelled`` with its partial Result,
                                 also one started elsewhere (409 when it is not running)
    GET  /api/config             defaults for the page's form, and the workspace roots
    GET  /api/approvals?run=RUN  commands of page-started runs waiting for a yes or no, oldest
                                 first: ``RUN``'s (id or prefix, 404 if none), else all
    POST /api/approvals/{id}     answer one (JSON body ``{"approve": true|false, "reason":
                                 "..."}``, the reason optional, kept with a denial: the model
                                 reads it) → 200, 404 when it is not pending (unknown,
                                 decided, timed out)
    WS   /ws/runs/{run}?after=N  the run's events with ``seq > N``, then live (see ``live``)

Every request needs the token (see ``security``); request bodies are capped (see ``limits``)
and errors never send them back (see ``errors``).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI, HTTPException, Query, WebSocket
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr

from localhand.config.settings import Settings
from localhand.dashboard.approvals import PageApprovals
from localhand.dashboard.errors import install_error_handlers
from localhand.dashboard.launcher import Launcher, StartRequest
from localhand.dashboard.limits import BodyLimit
from localhand.dashboard.live import Doorbell, stream_run
from localhand.dashboard.security import Guard
from localhand.dashboard.settings import load_dashboard_settings
from localhand.errors import ConfigError
from localhand.store import Store, StoreError
from localhand.store.run_diff import stored_change

STATIC = Path(__file__).parent / "static"


class Decision(BaseModel):
    """The page's answer to a pending approval."""

    model_config = ConfigDict(extra="forbid")

    approve: StrictBool
    reason: StrictStr = Field("", max_length=4000)
    """With a denial: why, in the person's words; the model reads it in the refusal (one
    line, cut at ``safety.approval.MAX_REASON`` characters)."""


def create_app(
    store: Store,
    *,
    token: str,
    settings: Settings | None = None,
    loopback_only: bool = True,
    workspaces: Sequence[Path] | None = None,
) -> FastAPI:
    """The dashboard over ``store``; every request must carry ``token``. Tasks started from
    the page use ``settings`` (model, host, approval policy) and must have their workspace
    inside one of ``workspaces`` (default: ``[dashboard] workspaces`` of localhand.toml, else
    the current directory).

    ``loopback_only`` refuses requests whose Host is not loopback (set it False only when
    listening elsewhere)."""
    roots = tuple(workspaces) if workspaces else load_dashboard_settings().workspaces
    bell = Doorbell()
    approvals = PageApprovals()
    launcher = Launcher(store, settings or Settings(), approvals, roots)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        bell.attach(store)
        yield
        approvals.close()  # refuse what still waits, so no run thread hangs on a closed page
        bell.detach()

    app = FastAPI(title="localhand", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.store = store
    app.state.launcher = launcher
    app.state.approvals = approvals

    @app.get("/", include_in_schema=False)
    def index() -> FileResponse:
        return FileResponse(STATIC / "index.html", headers={"cache-control": "no-store"})

    @app.get("/api/config")
    def config() -> dict[str, Any]:
        cwd = Path(os.getcwd()).resolve()
        inside = any(cwd.is_relative_to(root) for root in roots)
        return {
            "model": launcher.settings.model,
            "cwd": str(cwd if inside else roots[0]),
            "roots": [str(root) for root in roots],
            "db": store.path,
        }

    @app.get("/api/runs")
    def runs(limit: int = Query(50, ge=1, le=1000)) -> dict[str, Any]:
        waiting = store.waiting_approvals()
        listed = [_summary(store, info, waiting.get(info.id, 0)) for info in store.runs(limit)]
        return {"runs": listed, "waiting": sum(waiting.values())}

    @app.get("/api/waiting")
    def waiting() -> dict[str, Any]:
        """What waits for the user: the page's title counts it, on every view."""
        found = store.waiting_approvals()
        return {"total": sum(found.values()), "runs": found}

    @app.get("/api/runs/{ref}")
    def run(ref: str, after: int = Query(0, ge=0), events: bool = True) -> dict[str, Any]:
        info = _find(store, ref)
        found = store.events(info.id, after=after) if events else []
        return {"run": info.to_dict(), "events": [event.to_dict() for event in found]}

    @app.get("/api/runs/{ref}/diff")
    def diff(ref: str) -> dict[str, Any]:
        info = _find(store, ref)
        return {**(stored_change(store, info) or {"files": []}), "status": info.status}

    @app.post("/api/runs", status_code=201)
    def start(request: StartRequest) -> dict[str, str]:
        try:
            return {"run_id": launcher.start(request)}
        except ConfigError as exc:
            raise HTTPException(400, str(exc)) from None

    @app.post("/api/runs/{ref}/cancel")
    def cancel(ref: str) -> dict[str, Any]:
        """Stop: the run ends ``cancelled`` at its next check (see ``Launcher.cancel``)."""
        info = _find(store, ref)
        if info.status != "running":
            raise HTTPException(409, f"run {info.id} is not running ({info.status})")
        launcher.cancel(info.id)
        return {"run_id": info.id, "cancel": "requested"}

    @app.get("/api/approvals")
    def pending(run: str | None = None) -> dict[str, Any]:
        run_id = _find(store, run).id if run else None
        return {"approvals": [request.to_dict() for request in approvals.pending(run_id)]}

    @app.post("/api/approvals/{request_id}")
    def decide(request_id: str, decision: Decision) -> dict[str, Any]:
        if not approvals.decide(request_id, decision.approve, decision.reason):
            raise HTTPException(404, f"no pending approval {request_id}: decided or timed out")
        return {"id": request_id, "approved": decision.approve}

    @app.websocket("/ws/runs/{ref}")
    async def live(ws: WebSocket, ref: str, after: int = Query(0, ge=0)) -> None:
        await stream_run(ws, store, bell, ref, after)

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    install_error_handlers(app)
    app.add_middleware(BodyLimit)  # inside the Guard: nothing is read for a stranger
    app.add_middleware(Guard, token=token, loopback_only=loopback_only)
    return app


def _find(store: Store, ref: str) -> Any:
    try:
        return store.run(ref)
    except StoreError as exc:
        raise HTTPException(404, str(exc)) from None


def _summary(store: Store, info: Any, waiting: int) -> dict[str, Any]:
    """A run without its full Result (the list does not need the output), with how many of
    its approvals wait for an answer. Its status is its Result's: a run still marked running
    whose ``task_finished`` is in the store (closed by no one) shows how it ended."""
    run = info.to_dict()
    result = run.pop("result", None) or {}
    if run["status"] == "running":
        ended = store.events(info.id, types=("task_finished",))
        if ended:
            result = dict(ended[-1].data.get("result") or {})
            run["status"] = str(result.get("status") or "error")
            run["termination_reason"] = result.get("termination_reason")
            run["error"] = result.get("error")
            waiting = 0
    run["files_modified"] = result.get("files_modified", [])
    run["waiting"] = waiting
    return run

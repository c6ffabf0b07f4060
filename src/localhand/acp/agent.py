"""The ACP methods: ``initialize``, ``session/new``, ``session/load`` (a session recorded by
``localhand.acp.records`` reopened, its conversation replayed by ``localhand.acp.replay``),
``session/prompt`` (one recorded ``Session`` run per prompt, in a worker thread; a follow-up
carries the session's conversation on, as ``localhand run --continue`` does),
``session/set_mode`` (agent or plan) and ``session/cancel`` (``Session.cancel``: the run ends
``cancelled``, its partial Result recorded). Everything a run needs before its loop is the
Session's; nothing here decides what is allowed."""

from __future__ import annotations

import asyncio
import sys
import uuid
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, Client, RequestError
from acp.schema import (
    AgentCapabilities,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    SessionCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SessionMode,
    SessionModeState,
    SetSessionModeResponse,
    StopReason,
)

from localhand._version import __version__
from localhand.acp.editor import Editor, EditorApprover
from localhand.acp.presenter import Presenter
from localhand.acp.records import SessionRecord, listed, reopened, save_record, title_of
from localhand.acp.replay import replay
from localhand.acp.servers import editor_servers
from localhand.acp.tools import EditorTools
from localhand.config.settings import Settings
from localhand.errors import ConfigError
from localhand.events import EventBus
from localhand.mcp.config import McpServer, merge
from localhand.paths import db_path
from localhand.run.task import Task
from localhand.session.continuing import Continuation, continued_from_store
from localhand.session.door import Session
from localhand.session.kept_cache import warm_prefix
from localhand.session.plans import PlanRequest

AGENT_MODE, PLAN_MODE = "agent", "plan"
MODES = [
    SessionMode(id=AGENT_MODE, name="Agent", description="Reads, edits and runs commands"),
    SessionMode(id=PLAN_MODE, name="Plan", description="Drafts a plan of steps, then runs it"),
]
STOP_REASONS: dict[str, StopReason] = {
    "cancelled": "cancelled",
    "max_iterations": "max_turn_requests",
    "reply_too_long": "max_tokens",
}


@dataclass
class EditorSession:
    """One ACP session: its workspace, its MCP servers, its mode, the run going on."""

    editor: Editor
    workspace: Path
    servers: tuple[McpServer, ...]
    mode: str = AGENT_MODE
    title: str = ""
    """The first prompt's first line, as the editor's history names the session."""
    running: Session | None = None
    runs: list[str] = field(default_factory=list)
    """The session's runs (their ids in the store), one per prompt, oldest first."""


class LocalhandAgent:
    """localhand behind the Agent Client Protocol (see the module docstring)."""

    def __init__(self, settings: Settings, *, db: Path | None = None) -> None:
        self.settings = settings
        self.db = db
        self.client: Client | None = None
        self.reads = False
        self.sessions: dict[str, EditorSession] = {}

    def on_connect(self, conn: Client) -> None:
        self.client = conn

    async def initialize(
        self, protocol_version: int, client_capabilities: Any = None, **kwargs: Any
    ) -> InitializeResponse:
        fs = getattr(client_capabilities, "fs", None)
        self.reads = bool(getattr(fs, "read_text_file", False))
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(embedded_context=True),
                mcp_capabilities=McpCapabilities(http=True, sse=False),
                session_capabilities=SessionCapabilities(list=SessionListCapabilities()),
            ),
            agent_info=Implementation(name="localhand", title="localhand", version=__version__),
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> None:
        return None  # a local agent: nothing to sign in to

    async def new_session(
        self, cwd: str, mcp_servers: list[Any] | None = None, **kwargs: Any
    ) -> NewSessionResponse:
        session_id = uuid.uuid4().hex[:16]
        self._open(session_id, _workspace(cwd), mcp_servers)
        loop = asyncio.get_running_loop()  # warm while the user types the first prompt:
        loop.run_in_executor(None, warm_prefix, self.settings, _workspace(cwd))
        return NewSessionResponse(
            session_id=session_id,
            modes=SessionModeState(current_mode_id=AGENT_MODE, available_modes=MODES),
        )

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None, **kwargs: Any
    ) -> LoadSessionResponse:
        """A session recorded here before (by this process or an earlier one) opened again:
        its conversation replayed to the editor, then its prompts carry it on."""
        workspace = _workspace(cwd)
        record = reopened(session_id, workspace, self._store())
        live = self.sessions.get(session_id)
        if live is not None and live.running is not None:
            raise RequestError.invalid_params({"sessionId": "a prompt is running in it"})
        state = self._open(session_id, workspace, mcp_servers)
        state.mode = record.mode if record.mode in (AGENT_MODE, PLAN_MODE) else AGENT_MODE
        state.runs = list(record.runs)
        state.title = record.title
        await asyncio.to_thread(replay, state.editor, record.runs, self.db)
        return LoadSessionResponse(
            modes=SessionModeState(current_mode_id=state.mode, available_modes=MODES)
        )

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
        """The sessions that ``session/load`` can reopen (in ``cwd``, when given): the
        editor's history of this agent."""
        records = listed(Path(cwd).expanduser().resolve() if cwd else None, self._store())
        return ListSessionsResponse(
            sessions=[
                SessionInfo(
                    session_id=record.session_id,
                    cwd=record.workspace,
                    title=record.title or None,
                    updated_at=_iso(record.updated),
                )
                for record in records
            ]
        )

    def _open(
        self, session_id: str, workspace: Path, mcp_servers: list[Any] | None
    ) -> EditorSession:
        servers, skipped = editor_servers(mcp_servers)
        for note in skipped:
            print(f"localhand acp: {note}", file=sys.stderr)
        if servers and not _has_mcp_sdk():
            print(
                "localhand acp: the editor's MCP servers need the MCP SDK "
                "(pip install 'localhand[mcp]'); running without them",
                file=sys.stderr,
            )
            servers = ()
        assert self.client is not None, "on_connect comes first"
        editor = Editor(self.client, asyncio.get_running_loop(), session_id, reads=self.reads)
        state = EditorSession(editor, workspace, servers)
        self.sessions[session_id] = state
        return state

    async def set_session_mode(
        self, mode_id: str, session_id: str, **kwargs: Any
    ) -> SetSessionModeResponse:
        state = self._session(session_id)
        if mode_id not in (AGENT_MODE, PLAN_MODE):
            raise RequestError.invalid_params({"modeId": f"{mode_id}: use agent or plan"})
        state.mode = mode_id
        if state.runs:
            self._keep(session_id, state)
        return SetSessionModeResponse()

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
        state = self._session(session_id)
        if state.running is not None:
            raise RequestError.invalid_params({"sessionId": "a prompt is already running"})
        text = prompt_text(prompt)
        if not text.strip():
            raise RequestError.invalid_params({"prompt": "the prompt has no text"})
        state.title = state.title or title_of(text)
        session = self._run_session(state, text)
        state.running = session
        try:
            result, run_id = await asyncio.to_thread(self._run, session)
        finally:
            state.running = None
        if run_id is not None:
            state.runs.append(run_id)
            self._keep(session_id, state)
        if session.cancellation.requested:
            return PromptResponse(stop_reason="cancelled")
        reason = str(getattr(result, "termination_reason", ""))
        return PromptResponse(stop_reason=STOP_REASONS.get(reason, "end_turn"))

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        state = self.sessions.get(session_id)
        if state is None or state.running is None:
            return
        state.running.cancel("cancelled in the editor")
        state.editor.cancel_pending()

    def _run_session(self, state: EditorSession, text: str) -> Session:
        editor = state.editor
        settings = self.settings
        if state.servers:
            settings = replace(settings, mcp_servers=merge(settings.mcp_servers, state.servers))
        plan = state.mode == PLAN_MODE
        if plan and settings.source_of("plan_mode") == "default":
            # The editor's Plan mode repairs a failed step, as `localhand plan --mode agentic`
            # does: an editor has no flag to ask for it; a mode the user configured still wins.
            settings = replace(settings, plan_mode="agentic")
        task = Task(description=text, workspace=state.workspace)
        task, parent = (task, None) if plan else self._follow_up(state, task)
        bus = EventBus()
        bus.subscribe(Presenter(editor))
        return Session(
            task,
            settings,
            bus=bus,
            approver=EditorApprover(editor),
            plan=PlanRequest(None) if plan else None,
            continuing=parent,
            wrap_tools=lambda tools: EditorTools(tools, editor),
        )

    def _follow_up(self, state: EditorSession, given: Task) -> tuple[Task, Continuation | None]:
        """A prompt in agent mode carries the session's conversation on: it continues the
        latest of the session's runs that left one, as ``run --continue`` does (the messages
        sent again unchanged, so the server reuses its cached prefix; the run names its parent
        in the store). Runs that left none (a plan; one cancelled or failed before the model
        answered) are passed over; with none left, the prompt starts afresh."""
        for run_id in reversed(state.runs):
            try:
                return continued_from_store(run_id, given, self.db)
            except ConfigError as exc:
                print(f"localhand acp: not carrying on run {run_id}: {exc}", file=sys.stderr)
        return given, None

    def _run(self, session: Session) -> tuple[Any, str | None]:
        recording = session.recording(db=self.db)
        with recording:
            result = session.outcome()
        return result, recording.run_id

    def _store(self) -> str:
        """The run store's path, resolved, as a session's record names it."""
        return str(Path(self.db or db_path()).expanduser().resolve())

    def _keep(self, session_id: str, state: EditorSession) -> None:
        """Write the session's record (``localhand.acp.records``) so it can be reopened."""
        record = SessionRecord(
            session_id,
            str(state.workspace),
            state.mode,
            self._store(),
            tuple(state.runs),
            title=state.title,
        )
        try:
            save_record(record)
        except OSError as exc:  # the prompt ran and is recorded; only reopening it is lost
            print(f"localhand acp: session {session_id} not kept: {exc}", file=sys.stderr)

    def _session(self, session_id: str) -> EditorSession:
        state = self.sessions.get(session_id)
        if state is None:
            raise RequestError.invalid_params({"sessionId": f"no session {session_id}"})
        return state


def _workspace(cwd: str) -> Path:
    """The session's directory, resolved; an ``invalid_params`` error if it is none."""
    workspace = Path(cwd).expanduser()
    if not workspace.is_absolute() or not workspace.is_dir():
        raise RequestError.invalid_params({"cwd": f"{cwd} is not an absolute directory"})
    return workspace.resolve()


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="seconds")


def prompt_text(blocks: list[Any]) -> str:
    """The prompt's text: its text blocks, and the files the user attached (embedded text
    resources in full, links by their URI) so the model knows which files are meant."""
    parts: list[str] = []
    for block in blocks:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource":
            resource = block.resource
            if getattr(resource, "text", None) is not None:
                parts.append(f"\n<file uri={resource.uri!r}>\n{resource.text}\n</file>")
        elif kind == "resource_link":
            parts.append(f"[{block.name}]({block.uri})")
    return "\n".join(parts)


def _has_mcp_sdk() -> bool:
    try:
        import mcp  # noqa: F401
    except ImportError:
        return False
    return True

"""The ACP methods: ``initialize``, ``session/new``, ``session/prompt`` (one recorded
``Session`` run per prompt, in a worker thread), ``session/set_mode`` (agent or plan) and
``session/cancel`` (``Session.cancel``: the run ends ``cancelled``, its partial Result
recorded). Everything a run needs before its loop is the Session's; nothing here decides
what is allowed."""

from __future__ import annotations

import asyncio
import sys
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, Client, RequestError, update_agent_message_text
from acp.schema import (
    AgentCapabilities,
    Implementation,
    InitializeResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    SessionMode,
    SessionModeState,
    SetSessionModeResponse,
    StopReason,
)

from localhand._version import __version__
from localhand.acp.editor import Editor, EditorApprover
from localhand.acp.presenter import Presenter
from localhand.acp.servers import editor_servers
from localhand.acp.tools import EditorTools
from localhand.config import Settings
from localhand.events import EventBus
from localhand.mcp.config import McpServer, merge
from localhand.run.task import Task
from localhand.session.door import Session
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
    running: Session | None = None
    runs: list[str] = field(default_factory=list)


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
                load_session=False,
                prompt_capabilities=PromptCapabilities(embedded_context=True),
                mcp_capabilities=McpCapabilities(http=True, sse=False),
            ),
            agent_info=Implementation(name="localhand", title="localhand", version=__version__),
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> None:
        return None  # a local agent: nothing to sign in to

    async def new_session(
        self, cwd: str, mcp_servers: list[Any] | None = None, **kwargs: Any
    ) -> NewSessionResponse:
        workspace = Path(cwd).expanduser()
        if not workspace.is_absolute() or not workspace.is_dir():
            raise RequestError.invalid_params({"cwd": f"{cwd} is not an absolute directory"})
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
        session_id = uuid.uuid4().hex[:16]
        editor = Editor(self.client, asyncio.get_running_loop(), session_id, reads=self.reads)
        self.sessions[session_id] = EditorSession(editor, workspace.resolve(), servers)
        return NewSessionResponse(
            session_id=session_id,
            modes=SessionModeState(current_mode_id=AGENT_MODE, available_modes=MODES),
        )

    async def set_session_mode(
        self, mode_id: str, session_id: str, **kwargs: Any
    ) -> SetSessionModeResponse:
        state = self._session(session_id)
        if mode_id not in (AGENT_MODE, PLAN_MODE):
            raise RequestError.invalid_params({"modeId": f"{mode_id}: use agent or plan"})
        state.mode = mode_id
        return SetSessionModeResponse()

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
        state = self._session(session_id)
        if state.running is not None:
            raise RequestError.invalid_params({"sessionId": "a prompt is already running"})
        text = prompt_text(prompt)
        if not text.strip():
            raise RequestError.invalid_params({"prompt": "the prompt has no text"})
        session = self._run_session(state, text)
        state.running = session
        try:
            result = await asyncio.to_thread(self._run, session)
        finally:
            state.running = None
        state.runs.append(session.task.id)
        if session.cancellation.requested:
            return PromptResponse(stop_reason="cancelled")
        error = getattr(result, "error", None)
        if getattr(result, "status", "") == "error" and error:
            state.editor.update(update_agent_message_text(f"\n\nlocalhand: {error}"))
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
        task = Task(
            description=text,
            workspace=state.workspace,
            mode=settings.plan_mode if plan else None,
        )
        bus = EventBus()
        bus.subscribe(Presenter(editor))
        return Session(
            task,
            settings,
            bus=bus,
            approver=EditorApprover(editor),
            plan=PlanRequest(None) if plan else None,
            wrap_tools=lambda tools: EditorTools(tools, editor),
        )

    def _run(self, session: Session) -> Any:
        with session.recording(db=self.db):
            return session.outcome()

    def _session(self, session_id: str) -> EditorSession:
        state = self.sessions.get(session_id)
        if state is None:
            raise RequestError.invalid_params({"sessionId": f"no session {session_id}"})
        return state


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

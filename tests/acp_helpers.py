"""Talking to ``localhand acp`` as an editor does: the ACP SDK's own client, the agent a child
process spoken to over its stdin and stdout."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    FileSystemCapabilities,
    ReadTextFileResponse,
    RequestPermissionResponse,
)


@dataclass
class Editor:
    """An ACP client: it keeps every update, answers permission requests with ``answer``
    (``allow``, ``reject``, or a coroutine function for anything else) and serves
    ``fs/read_text_file`` from ``buffers`` (its unsaved files), else from the disk."""

    answer: str | Callable[[Any], Awaitable[RequestPermissionResponse]] = "reject"
    buffers: dict[str, str] = field(default_factory=dict)
    updates: list[Any] = field(default_factory=list)
    asked: list[Any] = field(default_factory=list)
    reads: list[str] = field(default_factory=list)
    on_update: Callable[[Any], Awaitable[None]] | None = None

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)
        if self.on_update is not None:
            await self.on_update(update)

    async def read_text_file(self, session_id: str, path: str, **kwargs: Any) -> Any:
        self.reads.append(path)
        text = self.buffers.get(path)
        return ReadTextFileResponse(content=Path(path).read_text() if text is None else text)

    async def request_permission(
        self, session_id: str, tool_call: Any, options: Any, **kwargs: Any
    ) -> RequestPermissionResponse:
        self.asked.append(tool_call)
        if callable(self.answer):
            return await self.answer(tool_call)
        if self.answer in ("allow", "reject"):
            chosen = next(o for o in options if o.kind.startswith(self.answer))
            return RequestPermissionResponse(
                outcome=AllowedOutcome(outcome="selected", option_id=chosen.option_id)
            )
        return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))

    def of(self, kind: str) -> list[Any]:
        """The updates of one kind (``tool_call``, ``agent_message_chunk``...)."""
        return [u for u in self.updates if u.session_update == kind]

    def text(self, kind: str = "agent_message_chunk") -> str:
        return "".join(u.content.text for u in self.of(kind))


Conversation = Callable[[Any, str], Awaitable[Any]]


def talk(
    editor: Editor,
    workspace: Path,
    conversation: Conversation,
    *args: str,
    host: str | None = None,
    model: str | None = "qwen3:8b",
    reads: bool = True,
    mcp_servers: list[Any] | None = None,
    timeout: float = 90,
    opens: bool = True,
) -> tuple[Any, Any]:
    """Start ``localhand acp ARGS``, initialize, open a session in ``workspace``, then run
    ``conversation(conn, session_id)``; return initialize's answer and the conversation's.
    With ``opens=False`` no session is opened: ``conversation(conn, "")`` opens or loads
    its own."""
    env = dict(os.environ, NO_COLOR="1")
    if host is not None:
        env["OLLAMA_HOST"] = host
    if model is not None:
        env["LOCALHAND_MODEL"] = model

    async def run() -> tuple[Any, Any]:
        client: Any = editor  # a Client by its methods, not by the SDK Protocol's types
        async with spawn_agent_process(
            client, sys.executable, "-m", "localhand", "acp", *args, env=env
        ) as (conn, _process):
            capabilities = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=reads))
            hello = await conn.initialize(
                protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities
            )
            if not opens:
                return hello, await conversation(conn, "")
            session = await conn.new_session(cwd=str(workspace), mcp_servers=mcp_servers or [])
            return hello, await conversation(conn, session.session_id)

    return asyncio.run(asyncio.wait_for(run(), timeout))


def prompt(text: str) -> Conversation:
    """The conversation of one prompt."""

    async def conversation(conn: Any, session_id: str) -> Any:
        return await conn.prompt(session_id=session_id, prompt=[text_block(text)])

    return conversation


def call(name: str, **arguments: Any) -> dict[str, Any]:
    """A script item for the fake server: the model calls one tool."""
    return {"tool_calls": [{"function": {"name": name, "arguments": arguments}}]}

"""The editor as the run's thread sees it: the run is synchronous and runs in a worker thread,
the protocol lives on the event loop, so every call to the editor is handed to the loop and
waited for (in order, so the updates arrive in the order the run made them)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import sys
import threading
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from acp import Client, start_tool_call, update_tool_call
from acp.schema import (
    AllowedOutcome,
    PermissionOption,
    ToolCallUpdate,
)

from localhand.safety.approval.approver import BaseApprover, escape, headline
from localhand.safety.risk.classify import Risk

READ_TIMEOUT_S = 30.0
"""How long a read of the editor's buffer may take before the file is read from disk."""

ALLOW = "allow"
REJECT = "reject"
OPTIONS = [
    PermissionOption(option_id=ALLOW, name="Allow once", kind="allow_once"),
    PermissionOption(option_id=REJECT, name="Reject", kind="reject_once"),
]


class Editor:
    """One ACP session's client, callable from the run's thread."""

    def __init__(
        self, client: Client, loop: asyncio.AbstractEventLoop, session_id: str, *, reads: bool
    ) -> None:
        self.client = client
        self.loop = loop
        self.session_id = session_id
        self.reads = reads
        """Whether the client offered ``fs/read_text_file`` (its unsaved buffers)."""
        self.current_call: str | None = None
        """The tool call running now, which a permission request belongs to."""
        self._pending: set[concurrent.futures.Future[Any]] = set()
        self._lock = threading.Lock()
        self._approvals = itertools.count(1)
        self._calls = itertools.count(1)

    def next_call_id(self) -> str:
        """A tool call's id, unique in the session across its prompts (and the calls a
        ``session/load`` replays): an editor files each update under its call's id, so a
        second prompt's ``call_1`` would overwrite the first prompt's."""
        return f"call_{next(self._calls)}"

    def _call(self, coroutine: Coroutine[Any, Any, Any], timeout: float | None = None) -> Any:
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        with self._lock:
            self._pending.add(future)
        try:
            return future.result(timeout)
        finally:
            with self._lock:
                self._pending.discard(future)

    def update(self, update: Any) -> None:
        """Send one ``session/update`` from the run's thread; an editor gone away must not
        stop the run."""
        try:
            self._call(self.client.session_update(session_id=self.session_id, update=update))
        except Exception as exc:  # the run goes on and is recorded whatever the editor does
            print(f"localhand acp: could not send an update: {exc}", file=sys.stderr)

    def read_text(self, path: Path) -> str | None:
        """The editor's text of ``path`` (its buffer, saved or not), or None when it has none
        to give (not offered, refused, too slow): the caller reads the disk."""
        if not self.reads:
            return None
        try:
            reply = self._call(
                self.client.read_text_file(session_id=self.session_id, path=str(path)),
                READ_TIMEOUT_S,
            )
        except Exception as exc:  # the file on disk is still there to read
            print(f"localhand acp: the editor could not read {path}: {exc}", file=sys.stderr)
            return None
        return str(reply.content)

    def permit(self, title: str, raw: dict[str, Any]) -> bool:
        """Ask the editor's user; anything but "Allow" (reject, cancel, an error) is a no."""
        if self.current_call is not None:
            return self._ask(self.current_call, title, raw)
        # asked outside a tool call (a verify command before the run): shown as a call of its own
        call_id = f"approval_{next(self._approvals)}"
        self.update(start_tool_call(call_id, title, kind="execute", status="pending"))
        allowed = self._ask(call_id, title, raw)
        self.update(update_tool_call(call_id, status="completed" if allowed else "failed"))
        return allowed

    def _ask(self, call_id: str, title: str, raw: dict[str, Any]) -> bool:
        call = ToolCallUpdate(
            tool_call_id=call_id, title=title, kind="execute", status="pending", raw_input=raw
        )
        try:
            reply = self._call(
                self.client.request_permission(
                    session_id=self.session_id, tool_call=call, options=OPTIONS
                )
            )
        except (Exception, concurrent.futures.CancelledError) as exc:
            print(f"localhand acp: permission request ended: {exc!r}", file=sys.stderr)
            return False
        outcome = reply.outcome
        return isinstance(outcome, AllowedOutcome) and outcome.option_id == ALLOW

    def cancel_pending(self) -> None:
        """Stop waiting for the editor (``session/cancel``): a question still open is a no."""
        with self._lock:
            pending = list(self._pending)
        for future in pending:
            future.cancel()


class EditorApprover(BaseApprover):
    """localhand's approvals, answered in the editor: asked only where the approval policy and
    the risk rules would have asked a person at the terminal; the editor cannot widen them."""

    refusal = "the user refused it in the editor"
    decided_by = "editor"

    def __init__(self, editor: Editor) -> None:
        self.editor = editor

    def approve(self, command: str, risk: Risk) -> bool:
        reasons = "; ".join(risk.reasons) or "needs approval"
        # The title is one inert line, as the terminal shows it; the command whole in raw_input.
        return self.editor.permit(
            f"{headline(command)}  ({escape(risk.level)}: {escape(reasons)})",
            {"command": command, "risk": risk.level, "reasons": list(risk.reasons)},
        )

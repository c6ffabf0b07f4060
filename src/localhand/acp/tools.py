"""The run's tools as the editor sees them: each call a ``tool_call`` (in progress) and its
``tool_call_update`` (completed or failed, with its output, and for a write or an edit its diff
as ACP diff content); ``read_file`` reads through the editor (``fs/read_text_file``), so the
model sees the unsaved buffer. Writes go to disk as before, so commands, checks and ``undo``
see the same files; the tools themselves are localhand's, unchanged (same jail, same limits)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import IO, Any, cast

from acp import start_tool_call, text_block, tool_content, tool_diff_content, update_tool_call
from acp.schema import ToolCallLocation, ToolKind

from localhand.acp.editor import Editor
from localhand.errors import ToolError
from localhand.safety.approval.approver import escape, headline
from localhand.tools.files import FileTools
from localhand.tools.registry import ToolRegistry, WrappedRegistry
from localhand.types import ToolCall, ToolResult

KINDS: dict[str, ToolKind] = {
    "read_file": "read",
    "write_file": "edit",
    "edit_file": "edit",
    "list_directory": "search",
    "search_files": "search",
    "run_command": "execute",
}
EDITS = ("write_file", "edit_file")
OUTPUT_CHARS = 4000
"""Of a tool's output, shown in the editor (the model gets all of it)."""


class BufferFiles(FileTools):
    """``read_file`` as localhand's, opening the editor's text of the file instead of the disk's
    when the editor gives one (same checks on the path, same line numbers and limits)."""

    def __init__(self, files: FileTools, editor: Editor) -> None:
        super().__init__(
            files.workspace, files.limits, policy=files.policy, approver=files.approver
        )
        self.editor = editor

    def _open(self, target: Path, rel: str) -> Any:
        text = self.editor.read_text(target)
        if text is None:
            return super()._open(target, rel)
        # a real file, as read_file fstat()s it; returned open: read_file's `with` closes it
        buffer = cast("IO[bytes]", tempfile.TemporaryFile())  # noqa: SIM115
        buffer.write(text.encode("utf-8", "surrogateescape"))
        buffer.seek(0)
        return buffer


class EditorTools(WrappedRegistry):
    """``inner`` (the run's registry, MCP tools included), each call shown in the editor."""

    def __init__(self, inner: ToolRegistry, editor: Editor) -> None:
        super().__init__(inner)
        self.editor = editor
        self._reader = _reader(inner, editor)

    def execute(self, call: ToolCall) -> ToolResult:
        call_id = self.editor.next_call_id()
        kind = KINDS.get(call.name, "other")
        target = self._target(call) if call.name in KINDS and call.name != "run_command" else None
        before = _text(target) if call.name in EDITS else None
        self.editor.update(
            start_tool_call(
                call_id,
                title_of(call),
                kind=kind,
                status="in_progress",
                locations=[ToolCallLocation(path=str(target))] if target else None,
                raw_input=call.arguments,
            )
        )
        self.editor.current_call = call_id
        try:
            if call.name == "read_file" and self._reader is not None:
                result = self._reader.execute(call)
            else:
                result = self.inner.execute(call)
        finally:
            self.editor.current_call = None
        content: list[Any] = []
        if call.name in EDITS and result.ok and target is not None:
            after = _text(target)
            if after is not None:
                content.append(tool_diff_content(str(target), after, before))
        content.append(tool_content(text_block(result.content[:OUTPUT_CHARS])))
        self.editor.update(
            update_tool_call(
                call_id,
                status="completed" if result.ok else "failed",
                content=content,
                raw_output={"ok": result.ok},
            )
        )
        return result

    def _target(self, call: ToolCall) -> Path | None:
        """The absolute path a file tool names, when it is one inside the workspace."""
        path = call.arguments.get("path", ".")
        files = _file_tools(self.inner)
        if files is None or not isinstance(path, str):
            return None
        try:
            return files.workspace.resolve(path)
        except (ToolError, OSError, ValueError):
            return None


def _reader(inner: ToolRegistry, editor: Editor) -> ToolRegistry | None:
    files = _file_tools(inner)
    if files is None or not editor.reads:
        return None
    return ToolRegistry([BufferFiles(files, editor).read_file])


def _file_tools(registry: ToolRegistry) -> FileTools | None:
    tool = registry.get("read_file")
    owner = getattr(tool.function, "__self__", None) if tool else None
    return owner if isinstance(owner, FileTools) else None


def _text(path: Path | None) -> str | None:
    if path is None or not path.is_file():
        return None
    try:
        return path.read_text("utf-8", "replace")
    except OSError:
        return None


def title_of(call: ToolCall) -> str:
    """A call's title in the editor: one inert line (``headline``), the model's text whole
    only in its raw input."""
    arguments = call.arguments
    for key in ("command", "path", "pattern"):
        value = arguments.get(key)
        if isinstance(value, str) and value:
            return f"{escape(call.name)} {headline(value)}"
    return escape(call.name)

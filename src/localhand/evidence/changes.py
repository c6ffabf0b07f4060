"""Which files a round of tool calls wrote, as cheaply as the tools allow.

The file tools report what they write, and reads write nothing: only a round with a call that
may write without saying so (``run_command``, custom or unknown tools) needs a walk of the
whole workspace, which takes milliseconds in a large one (``ChangeTracker``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from localhand.tools import ToolRegistry
from localhand.tools.files import FileTools, reports_writes
from localhand.types import ToolCall

READ_ONLY_TOOLS = frozenset({"read_file", "list_directory", "search_files", "read_skill"})
"""Built-in tools that cannot modify the workspace (run_command and any custom tool can)."""


class WrittenFiles:
    """What the file tools of one registry report writing."""

    def __init__(self, tools: ToolRegistry) -> None:
        reporting = [tool for tool in tools if reports_writes(tool.function)]
        self.reporting = frozenset(tool.name for tool in reporting)
        """Tools that report the files they write: no walk of the workspace after them."""
        self._owners: list[FileTools] = []
        for tool in reporting:
            owner: FileTools = tool.function.__self__  # type: ignore[attr-defined]  # a bound method
            if owner not in self._owners:
                self._owners.append(owner)

    def take(self) -> set[Path]:
        """The files the file tools wrote since the last call."""
        written: set[Path] = set()
        for owner in self._owners:
            written |= owner.take_written()
        return written

    def walk_needed(self, calls: Sequence[ToolCall]) -> bool:
        """Whether ``calls`` may have written files that no tool reported."""
        return not all(
            call.name in READ_ONLY_TOOLS or call.name in self.reporting for call in calls
        )

"""Caps on what the built-in tools read, list, search and capture.

Every cap protects the model's context window (a small model with an 8k context cannot take
a 1 MB log) and the process's memory (a command that floods its output must not exhaust it).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ToolLimits:
    """Limits for the built-in tools. Numbers are counts, bytes or milliseconds as named."""

    read_max_lines: int = 2000
    """Most lines read_file returns in one call; the rest is offered through start_line."""
    read_max_bytes: int = 100_000
    """Most characters read_file returns in one call."""
    read_max_line_chars: int = 2000
    """Longer lines (minified code, data) are cut in read_file's output."""
    read_count_max_bytes: int = 100_000_000
    """read_file counts a file's lines for its notes up to this many bytes, no further."""
    write_max_bytes: int = 10_000_000
    """Largest file write_file writes and edit_file changes."""
    list_max_entries: int = 200
    """Most entries list_directory shows."""
    search_max_results: int = 200
    """Upper bound on search_files' max_results argument."""
    search_max_line_chars: int = 200
    """Matched lines longer than this are cut in search_files' output."""
    search_max_file_bytes: int = 2_000_000
    """Larger files are skipped by search_files (they are data, not code)."""
    search_timeout_ms: int = 5_000
    """Longest a search_files call may take, its regex included; less when the task's wall
    clock has less left. A pattern that backtracks past it gets an error telling the model to
    simplify it."""
    command_head_bytes: int = 4_000
    """Bytes kept from the start of a command's output."""
    command_tail_bytes: int = 12_000
    """Bytes kept from the end of a command's output (errors and summaries are at the end)."""
    command_min_timeout_ms: int = 1_000
    """Smaller run_command timeouts are raised to this (a model asking for 5 ms means 'short')."""
    command_max_timeout_ms: int = 600_000
    """Larger run_command timeouts are lowered to this (10 minutes)."""

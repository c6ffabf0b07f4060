"""Running the command line as a user does: ``python -m localhand ...`` in a child process;
``options_of`` parses a command's options in this one."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from localhand.cli import command_parser


def localhand(
    *args: str,
    cwd: Path | None = None,
    host: str | None = None,
    env: Mapping[str, str] | None = None,
    stdin: str = "",
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """``localhand ARGS``, its output captured: plain text (``NO_COLOR``), a wide terminal, the
    Ollama at ``host`` if given; ``env`` replaces the inherited environment entirely."""
    environment = dict(os.environ if env is None else env)
    if env is None:
        environment.update({"NO_COLOR": "1", "COLUMNS": "200"})
    if host is not None:
        environment["OLLAMA_HOST"] = host
    return subprocess.run(
        [sys.executable, "-m", "localhand", *args],
        cwd=cwd,
        env=environment,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        start_new_session=True,  # its own process group: nothing it leaves reaches the tests
    )


def in_a_terminal(
    args: list[str], cwd: Path, env: dict[str, str], answer: bytes
) -> tuple[int, str]:
    """``localhand ARGS`` with a pty as its terminal; ``answer`` typed once it asks."""
    master, slave = os.openpty()
    child = subprocess.Popen(
        [sys.executable, "-m", "localhand", *args],
        cwd=cwd, env=env, stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
    )  # fmt: skip
    os.close(slave)
    seen, typed = b"", False
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if select.select([master], [], [], 0.2)[0]:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
        if not typed and b"[y/N]" in seen:
            os.write(master, answer)
            typed = True
        if child.poll() is not None and not select.select([master], [], [], 0.2)[0]:
            break
    code = child.wait(timeout=30)
    os.close(master)
    return code, seen.decode(errors="replace")


def options_of(name: str, args: list[str]) -> dict[str, Any]:
    """Command ``name``'s options parsed from ``args``, as ``localhand NAME ARGS`` parses them
    (a usage error prints on stderr and raises ``SystemExit(2)``)."""
    return vars(command_parser(name)[1].parse_args(args))

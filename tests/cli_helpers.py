"""Running the command line as a user does: ``python -m localhand ...`` in a child process."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path


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

"""Running a check so that its test runner reports (docs/safety.md, "Evidence is a report").

The environment names a fresh folder outside the workspace (``LOCALHAND_REPORT_DIR``, bound
writable into the sandbox) and puts ``reporters/`` first on ``PYTHONPATH`` (pytest's plugin,
unittest's recorder through ``sitecustomize``) and node's reporter in ``NODE_OPTIONS``, so it
reaches the runner however the command starts it; jest, vitest and ``go test`` get flags.
``collect_before`` has a check only collect (``LOCALHAND_COLLECT_ONLY=1``), read-only, writing
nothing: the tests the workspace had before the run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

from localhand.evidence.checkfiles import package_scripts
from localhand.evidence.reports import Collected, Report, Verdict, judge, read
from localhand.safety.box.bound import Bound
from localhand.safety.box.sandbox import Sandbox, current_sandbox
from localhand.tools.shell import CommandOutput, run_shell

REPORTERS = Path(__file__).with_name("reporters")
PYTEST_PLUGIN = "report_to_localhand"
NODE_REPORTER = REPORTERS / "node_localhand_report.mjs"
COLLECT_TIMEOUT_S = 120
OUTPUT_TAIL_BYTES = 1_000_000
"""A check's output is kept this long: ``go test -json`` and cargo's lines are read from it."""
_PYTHON_RUNNER = re.compile(r"\b(?:pytest|py\.test|unittest|tox|nox)\b")


def environment(folder: str, *, collect_only: bool = False) -> dict[str, str]:
    """The variables that make the known runners report into ``folder``. Besides
    ``LOCALHAND_*``: ``PYTHONPATH``, ``PYTEST_PLUGINS``, ``NODE_OPTIONS`` (and, collecting,
    ``PYTEST_ADDOPTS`` and ``PYTHONDONTWRITEBYTECODE``), each added to the value in force."""
    env = {
        "LOCALHAND_REPORT_DIR": folder,
        "LOCALHAND_RECORDING": "",  # set by a recording runner for what it starts: none yet
        "PYTHONPATH": _joined(str(REPORTERS), os.environ.get("PYTHONPATH"), os.pathsep),
        "PYTEST_PLUGINS": _joined(PYTEST_PLUGIN, os.environ.get("PYTEST_PLUGINS"), ","),
    }
    if _node_reports():
        reporters = (
            "--test-reporter=spec --test-reporter-destination=stdout "
            f"--test-reporter={NODE_REPORTER} --test-reporter-destination=/dev/null"
        )
        env["NODE_OPTIONS"] = _joined(os.environ.get("NODE_OPTIONS", ""), reporters, " ")
    if collect_only:
        env["LOCALHAND_COLLECT_ONLY"] = "1"
        env["PYTHONDONTWRITEBYTECODE"] = "1"  # the workspace as it was: nothing written
        addopts = os.environ.get("PYTEST_ADDOPTS", "")
        env["PYTEST_ADDOPTS"] = _joined(addopts, "-p no:cacheprovider", " ")
    return env


def _joined(first: str | None, second: str | None, separator: str) -> str:
    return separator.join(part for part in (first, second) if part)


@functools.cache
def _node_reports() -> bool:
    """Whether the ``node`` on ``PATH`` takes test reporters in ``NODE_OPTIONS`` (18.15 on):
    an older one would refuse to start with them."""
    node = shutil.which("node")
    if node is None:
        return False
    try:
        said = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    found = re.match(r"v(\d+)\.(\d+)", said.stdout.strip())
    return found is not None and (int(found[1]), int(found[2])) >= (18, 15)


def _reporting(box: Sandbox, folder: str) -> Bound:
    """``box`` with the report folder bound writable into it, and the reporters read-only:
    localhand's install may be where the box shows nothing (under a hidden home, as pipx and
    uv put it, or under ``/tmp``)."""
    return Bound.over(
        box, [("--ro-bind", str(REPORTERS), str(REPORTERS)), ("--bind", folder, folder)]
    )


def run_reported(
    command: str,
    workspace: Path,
    *,
    timeout_s: float,
    sandbox: Sandbox | None = None,
    collect_only: bool = False,
) -> tuple[CommandOutput, Report | None]:
    """Run ``command`` with its runners reporting; its output and what they reported."""
    box = sandbox if sandbox is not None else current_sandbox()
    # In /tmp: where a command without network may still write (the supervisor's rules).
    tmp = "/tmp" if os.path.isdir("/tmp") else None
    with tempfile.TemporaryDirectory(prefix="localhand-report-", dir=tmp) as folder:
        ran = _reporting_command(command, workspace, folder)
        done = run_shell(
            ran, workspace, timeout_s=timeout_s, sandbox=_reporting(box, folder),
            env=environment(folder, collect_only=collect_only), tail_bytes=OUTPUT_TAIL_BYTES,
        )  # fmt: skip
        report = read(Path(folder), done.output, workspace)
    if ran != command:
        said = f"[localhand ran: {ran}]\n"
        done = dataclasses.replace(done, output=said + _readable(done.output))
    return done, report


def checked(
    command: str,
    workspace: Path,
    *,
    timeout_s: float,
    sandbox: Sandbox | None = None,
    before: Collected | None = None,
) -> tuple[CommandOutput, Verdict]:
    """Run a check and judge it against ``before``; a ``before`` with no tests listed takes
    those of this, its first, run."""
    if before is not None:
        before.done.wait(COLLECT_TIMEOUT_S)
    done, report = run_reported(command, workspace, timeout_s=timeout_s, sandbox=sandbox)
    if before is not None:
        before.take(report, "first_run")
    exit_code = None if done.timed_out else done.exit_code
    return done, judge(report, before, exit_code)


def collect_before(command: str, workspace: Path, collected: Collected) -> None:
    """Fill ``collected`` with the tests ``command`` collects now (the workspace before the
    run's first change), when it runs a Python test runner; ``done`` is set either way."""
    try:
        if _runs_python_tests(command, workspace):
            box = current_sandbox()
            box = dataclasses.replace(box, mode="read-only") if box.on else box
            _, report = run_reported(
                command, workspace, timeout_s=COLLECT_TIMEOUT_S, sandbox=box, collect_only=True
            )
            if report is not None and not report.unfinished:
                collected.take(report, "collected")
    finally:
        collected.done.set()


def _runs_python_tests(command: str, workspace: Path) -> bool:
    """Whether ``command``, or what it names (a script, the Makefile), says it runs Python's
    test runners: only those can list their tests without running them."""
    words = command.split()
    named = [w for w in words if "/" in w or "." in w]
    named += ["Makefile", "makefile", "GNUmakefile"] if "make" in words else []
    texts = [command]
    for path in (workspace / name for name in named):
        with contextlib.suppress(OSError):
            if path.is_file() and path.stat().st_size < 256_000:
                texts.append(path.read_text(encoding="utf-8", errors="replace"))
    return any(_PYTHON_RUNNER.search(text) for text in texts)


_NPM_TEST = re.compile(r"^\s*npm\s+(?:test|t|run\s+test|run-script\s+test)\s*$")
_DIRECT = re.compile(r"^\s*(?:npx\s+)?(jest|vitest)\b")


def _reporting_command(command: str, workspace: Path, folder: str) -> str:
    """``command`` with the flags that make jest, vitest or ``go test`` report, where it (or
    the ``npm test`` script it runs) starts them directly; else ``command`` as it is."""
    if command.lstrip().startswith("go test") and "-json" not in command:
        return command.replace("go test", "go test -json", 1)
    direct = _DIRECT.match(command)
    script = _npm_test_script(workspace) if _NPM_TEST.match(command) else None
    started = direct or (_DIRECT.match(script) if script else None)
    if started is None:
        return command
    runner = started[1]
    target = shlex.quote(os.path.join(folder, f"{runner}-report.json"))
    flags = (
        f"--json --outputFile={target}"
        if runner == "jest"
        else f"--reporter=default --reporter=json --outputFile.json={target}"
    )
    return f"{command} {flags}" if direct else f"{command.rstrip()} -- {flags}"


def _npm_test_script(workspace: Path) -> str | None:
    try:
        test = package_scripts((workspace / "package.json").read_bytes()).get("test")
    except OSError:
        return None
    return None if test is None else str(test)


def _readable(output: str) -> str:
    """``go test -json``'s events as the text they carry."""
    if '{"' not in output:
        return output
    lines = []
    for line in output.splitlines(keepends=True):
        if line.startswith('{"') and '"Action"' in line:
            try:
                lines.append(json.loads(line).get("Output") or "")
                continue
            except ValueError:
                pass
        lines.append(line)
    return "".join(lines)

"""Start-up: the import time of ``localhand`` and the time from ``localhand run`` to the first
request reaching the server.

- ``import``: wall time of ``python -c "import localhand"`` (and of ``localhand.cli``, what
  the console script imports before it parses its arguments) minus ``python -c "pass"``
  (median of ``--runs``), and the slowest imports by ``python -X importtime``.
- ``run_to_first_request_in_git_repository`` (the headline): ``localhand run TASK --host URL
  --json`` is started as a user would start it (the console script, a fresh process, recording
  to its store in a temporary ``LOCALHAND_HOME``) against the fake server, in a git repository
  of ``--files`` files (2,000 by default: a Python project's tree, generated in a temporary
  directory and committed); the time is from just before the process starts to the arrival of
  the first request, of any kind, and of the first ``/api/chat`` (when the model gets the
  task: what a user waits for). Measured with ``--backend auto`` (the default: it probes
  Ollama first) and ``--backend ollama``. What the repository adds is localhand's work before
  the first chat request: the git snapshot of the workspace (``evidence/gitstate.py``) and the
  change tracker's first walk.
- ``run_to_first_request``: the same in a workspace of one file, not a git repository (the
  figure of earlier editions: the least a start can cost).
- ``cpu_to_first_request_ms``: the CPU time the ``localhand run`` process has used when it
  opens its first connection (the interpreter's start included), read in the process by an
  audit hook (``python -c``, the console script's ``main``), which then exits. On a machine
  shared with other work the wall times above move with its load (on 2 cores at a load of 5
  they double); this figure moves much less, so it is the one to compare two versions by.

Python caches compiled modules (``__pycache__``); an installed package has them from the
first run on. ``PYTHONDONTWRITEBYTECODE=1`` (set in some sandboxes, this one included) stops
that, so every start compiles localhand's modules again. The headline numbers are with the
cache warm (``PYTHONPYCACHEPREFIX`` points it at a temporary directory, warmed by one run);
``--cold`` adds the same measurements without it.

``dependency_floor_ms`` is the import time of the packages the run path loads before its
first request (``DEPENDENCIES``): no start-up of ``localhand run`` can be shorter.

Prints one JSON object. Target: first request within 0.3 s.

    python benchmarks/startup_bench.py [--runs 7] [--files 2000] [--cold]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import MODEL, FakeServer, emit, machine, ms, summary

TARGET_S = 0.3
DEPENDENCIES = (
    # All of it is the standard library now: argparse for the command line, http.client and
    # ssl for the server, sqlite3 for the run store. pydantic loads at the first tool call.
    "import argparse, http.client, ssl, json, sqlite3"
)


def timed_python(code: str, env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
    return time.perf_counter() - started


def import_times(runs: int, env: dict[str, str]) -> dict[str, Any]:
    bare = [timed_python("pass", env) for _ in range(runs)]
    output: dict[str, Any] = {"python_startup_ms": summary([ms(x) for x in bare])}
    for module in ("localhand", "localhand.cli"):
        full = [timed_python(f"import {module}", env) for _ in range(runs)]
        key = module.replace(".", "_")
        output[f"import_{key}_ms"] = summary([ms(f - b) for f, b in zip(full, bare, strict=True)])
        total, top = importtime(module, env)
        output[f"importtime_{key}_cumulative_ms"] = total
        output[f"slowest_imports_of_{key}_cumulative_ms"] = top
    return output


def importtime(module: str, env: dict[str, str]) -> tuple[float | None, list[dict[str, Any]]]:
    """``module``'s cumulative import time by ``-X importtime``, and its 15 slowest imports."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    rows = []
    for line in done.stderr.splitlines():
        match = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)", line)
        if match:
            rows.append((int(match.group(2)), len(match.group(3)), match.group(4)))
    total = next((cum for cum, _, name in rows if name == module), None)
    top = sorted((r for r in rows if r[2] != module), reverse=True)[:15]
    slowest = [{"module": name, "ms": round(cum / 1000, 1)} for cum, _, name in top]
    return (round(total / 1000, 1) if total else None), slowest


CPU_AT_FIRST_CONNECT = """
import os, sys, time
def hook(event, args):
    if event == "socket.connect":
        print(time.process_time(), flush=True)
        os._exit(0)
sys.addaudithook(hook)
sys.argv = ["localhand", *sys.argv[1:]]
from localhand.cli import main
main()
"""


def cpu_to_first_request(
    server: FakeServer, backend: str, root: Path, env: dict[str, str], count: int
) -> dict[str, float]:
    """Median CPU milliseconds of ``localhand run`` up to its first connection (see the
    module docstring), in a workspace of one file."""
    workspace = root / f"ws-cpu-{backend}"
    workspace.mkdir()
    (workspace / "README.md").write_text("# demo\n")
    command = [sys.executable, "-c", CPU_AT_FIRST_CONNECT, "run", "List the files.", "--agentic"]
    command += ["--workspace", str(workspace), "--model", MODEL, "--host", server.url]
    command += ["--backend", backend, "--json"]
    seconds = []
    for _ in range(count + 1):  # the first warms the page cache
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
        seconds.append(float(done.stdout.split()[0]))
    return summary([ms(x) for x in seconds[1:]])


def localhand_command() -> list[str]:
    script = Path(sys.executable).parent / "localhand"
    return [str(script)] if script.exists() else [sys.executable, "-m", "localhand"]


GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@localhost",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@localhost",
}


def make_repository(path: Path, files: int) -> Path:
    """A git repository of ``files`` files shaped like a Python project (packages of modules
    of 20-60 lines, their tests, some docs), committed."""
    path.mkdir(parents=True)
    (path / "README.md").write_text("# project\n\nA generated repository for the benchmark.\n")
    (path / "pyproject.toml").write_text('[project]\nname = "project"\nversion = "1.0"\n')
    made = 2
    for n in range(files - made):
        package, kind = n % 40, n % 10
        if kind == 9:
            rel = f"docs/section_{package:02d}/page_{n:04d}.md"
            text = f"# Page {n}\n\n" + f"Paragraph about part {n} of the project.\n" * (n % 7 + 3)
        elif kind == 8:
            rel = f"tests/pkg_{package:02d}/test_mod_{n:04d}.py"
            text = f"from pkg_{package:02d}.mod_{n - 1:04d} import f_{n - 1}\n\n\n"
            text += f"def test_f_{n}():\n    assert f_{n - 1}(1) == {n}\n"
        else:
            rel = f"src/pkg_{package:02d}/mod_{n:04d}.py"
            body = "".join(f"    value = value + {i}  # step {i}\n" for i in range(n % 40 + 10))
            text = f'"""Module {n}."""\n\n\ndef f_{n}(value):\n{body}    return value\n'
        target = path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    # Files written a moment ago are "racily clean" (within RACY_NS of the snapshot): the change
    # tracker must hash every one at the start, as git does. A user's repository is older than
    # two seconds, so the files are dated a day back, as they would be after a checkout.
    day_ago = time.time() - 86_400
    for file in path.rglob("*"):
        if file.is_file():
            os.utime(file, (day_ago, day_ago))
    env = {**os.environ, **GIT_ENV}
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "start"]):
        subprocess.run(["git", *command], cwd=path, env=env, check=True)
    return path


def first_request(
    server: FakeServer,
    backend: str,
    root: Path,
    env: dict[str, str],
    workspace: Path | None = None,
) -> dict:
    if workspace is None:
        workspace = root / f"ws-{backend}-{time.monotonic_ns()}"
        workspace.mkdir()
        (workspace / "README.md").write_text("# demo\n")
    call = {"function": {"name": "list_directory", "arguments": {"path": "."}}}
    server.load({"mode": "replay", "items": [{"content": "", "tool_calls": [call]}, "Done."]})
    command = [
        *localhand_command(),
        "run",
        "Create notes.txt listing the files.",
        "--agentic",
        "--workspace",
        str(workspace),
        "--model",
        MODEL,
        "--host",
        server.url,
        "--backend",
        backend,
        "--json",
    ]
    started_at = time.time()
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    total = time.perf_counter() - started
    log = server.log()["requests"]
    chats = [r for r in log if r["path"] == "/api/chat"]
    return {
        "exit_code": done.returncode,
        "first_request_s": log[0]["t"] - started_at if log else None,
        "first_request_path": log[0]["path"] if log else None,
        "first_chat_s": chats[0]["t"] - started_at if chats else None,
        "requests_before_first_chat": [r["path"] for r in log[: log.index(chats[0])]]
        if chats
        else [r["path"] for r in log],
        "whole_run_s": total,
        "stderr_tail": done.stderr[-300:] if done.returncode else "",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--cold", action="store_true", help="also measure without bytecode cache")
    parser.add_argument("--files", type=int, default=2000, help="files in the git repository")
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="lh-startup-"))
    base = {**os.environ, "LOCALHAND_HOME": str(root / "home"), "NO_COLOR": "1"}
    base.pop("OLLAMA_HOST", None)
    warm = {k: v for k, v in base.items() if k != "PYTHONDONTWRITEBYTECODE"}
    warm["PYTHONPYCACHEPREFIX"] = str(root / "pycache")
    cold = {**base, "PYTHONDONTWRITEBYTECODE": "1"}
    cold.pop("PYTHONPYCACHEPREFIX", None)
    output: dict[str, Any] = {
        "benchmark": "startup",
        "machine": machine(),
        "load_average": os.getloadavg(),
        "runs": args.runs,
        "git_repository_files": args.files,
    }
    repository = make_repository(root / "repository", args.files)
    try:
        with FakeServer() as server:
            for label, env in [("warm_bytecode", warm)] + ([("cold", cold)] if args.cold else []):
                timed_python("import localhand.cli, localhand.session.backend", env)  # compile once
                output[label] = {
                    "run_to_first_request_in_git_repository": {
                        backend: startup(server, backend, root, env, args.runs, repository)
                        for backend in ("auto", "ollama")
                    },
                    "run_to_first_request": {
                        backend: startup(server, backend, root, env, args.runs)
                        for backend in ("auto", "ollama")
                    },
                    "cpu_to_first_request_ms": {
                        backend: cpu_to_first_request(server, backend, root, env, args.runs)
                        for backend in ("auto", "ollama")
                    },
                    "import": import_times(args.runs, env),
                }
            output["dependency_floor_ms"] = summary(
                [
                    ms(timed_python(DEPENDENCIES, warm)) - ms(timed_python("pass", warm))
                    for _ in range(args.runs)
                ]
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    output["target_ms"] = TARGET_S * 1000
    emit(output)
    return 0


def startup(
    server: FakeServer,
    backend: str,
    root: Path,
    env: dict[str, str],
    count: int,
    workspace: Path | None = None,
) -> dict[str, Any]:
    first_request(server, backend, root, env, workspace)  # warm the page cache
    runs = [first_request(server, backend, root, env, workspace) for _ in range(count)]
    firsts = [r["first_request_s"] for r in runs if r["first_request_s"] is not None]
    chats = [r["first_chat_s"] for r in runs if r["first_chat_s"] is not None]
    return {
        "exit_codes": sorted({r["exit_code"] for r in runs}),
        "first_request_ms": summary([ms(x) for x in firsts]) if firsts else None,
        "first_request_path": runs[0]["first_request_path"],
        "first_chat_ms": summary([ms(x) for x in chats]) if chats else None,
        "requests_before_first_chat": runs[0]["requests_before_first_chat"],
        "whole_run_ms": summary([ms(r["whole_run_s"]) for r in runs]),
        "meets_target": bool(firsts) and statistics.median(firsts) <= TARGET_S,
        "stderr_tail": runs[0]["stderr_tail"],
    }


if __name__ == "__main__":
    sys.exit(main())

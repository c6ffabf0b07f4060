"""Per-iteration overhead: what localhand adds to each loop iteration, first as a user runs it
(``localhand run``), then broken down in process.

**The headline** (``file_tool_iteration_beyond_bare_client_ms``, first in the JSON): the time
an iteration with a file tool (read, write, edit, list, search) takes in ``localhand run``
beyond what a bare client takes for the same request and the same file work, measured side by
side in each round (``cli`` below: the mean over the task's 21 file-tool iterations after the
first, 8 of them writes, then the median, min and max over ``--runs`` rounds; ``cli``'s
``iteration_with_a_file_tool_ms`` is their median, which the reads decide, and
``iteration_with_a_write_ms`` the writes' median). Target: ``TARGET_MS`` (2 ms);
``meets_target`` compares the median with it. ``null`` with ``--no-cli``.

**The command line** (``cli``, the headline). ``localhand run TASK --agentic --backend ollama
--json`` is started as a user starts it (the console script, a fresh process, compiled modules
cached as in an installed package, recording to its SQLite store in a temporary
``LOCALHAND_HOME``, commands in its default sandbox) on the scripted 30-step task (29 tool
calls and a final answer over a small Python package; ``_tasks.thirty_step_task``), in a real
git repository (the task's files committed), against the fake Ollama server in another
process, answering at once. The server stamps each request's arrival. Then a bare baseline
does the same work without localhand, in a fresh copy of the repository: a bare client
(``http.client``, one kept-alive connection) sends the same 30 chat requests, and between
them the same tool calls are done as plainly as a program can (each command run with
``bash -c`` in the environment ``localhand run`` had, files read and written with
``pathlib``, the search with ``re``). The commands run ``python`` from this virtual
environment, first on ``PATH`` (see ``cli_env`` and ``PYCACHE``). For each iteration,
localhand's time is

    (time from its request's arrival to the next request's arrival, or to the process's exit
     after the last one) - (the bare round trip + the bare tool work)

so it counts everything localhand adds, its tools' own machinery included: the command
supervisor and sandbox, argument checking, events and their recording, the git snapshot and
diff, the workspace change tracker, the end of the run. ``localhand_ms_per_iteration`` is the
sum over the 30 iterations / 30 (median of ``--runs``); then its parts: an iteration with a
file tool, one with a command (compare ``sandbox_bench.py``'s ``localhand_adds_ms``), the
first tool call of the run and its first command (one-off costs: imports, the sandbox probe),
and the end of the run (from the final answer to the process's exit). Start-up (process start
to the first chat request) is not in the per-iteration figure; it is reported beside it
(``startup_bench.py`` measures it in detail). There is no CPU-time figure for the command
line: the kernel does not pass the CPU time of the sandboxed commands up to their parents
(bubblewrap's PID namespace), so the process tree's CPU time would leave the commands out
while the baseline's counts them.

**In process** (the breakdown). The same task runs through ``Agent.run`` in this process,
with ``OllamaModel`` and the real tools, without recording (no store, no CLI) and outside git;
localhand's time per iteration is

    (wall time of Agent.run - time inside the tools - bare client's time) / iterations

where "time inside the tools" is the tools' whole time, localhand's own work in them included
(the command supervisor, about 11 ms a command: see ``sandbox_bench.py``): this figure is the
loop alone; what the command line's figure has beyond it is recording, git and the tools'
machinery. The first run is a warm-up and is not counted. It counts building messages, the
HTTP layer, parsing, guardrails, events, the workspace change tracker, and the ``/api/show``
and ``/api/ps`` requests.

The bare client runs twice. Back to back, its requests find the server and both processes' CPU
caches hot. In the loop, every request follows a tool (for this task often a
``python -m unittest`` in a child process), after which the same request takes longer, for
the bare client as much as for localhand. So the baseline (``bare_client_ms``) replays the
requests with the same tool calls run between them, untimed, in a workspace of its own;
``bare_back_to_back_ms`` is the other one, and ``localhand_ms_per_iteration_vs_back_to_back``
the overhead measured against it.

The same difference in CPU time of this process (``localhand_cpu_ms_per_iteration``: the fake
server is another process, the tools' commands are children) is much less disturbed by whatever
else the machine runs. The official ``ollama`` client replays the requests back to back too
(``ollama_client_ms``: what localhand used before it spoke the wire itself). And the same task
runs with the in-process ScriptedModel (no HTTP; that model deep-copies every request it
records, which the loop then pays for). Prints one JSON object, the command line's figures
first. ``--profile FILE`` writes a pyinstrument text profile of one in-process run
(``pip install pyinstrument``); ``--no-cli`` skips the command line (``patch_gains.py``).

    python benchmarks/overhead_bench.py [--runs 5] [--filler-files 12] [--profile FILE]
                                        [--no-cli | --cli-only]

``--cli-only`` measures the command line alone, all that ``publish.py`` keeps (``cli``): the
in-process figures are left out.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import (
    BENCH,
    MODEL,
    BareClient,
    FakeServer,
    bare_replay,
    chat_requests,
    emit,
    machine,
    ms,
    summary,
)
from _noisy import clean_replies
from _tasks import check_workspace, thirty_step_task, write_workspace
from startup_bench import localhand_command

from localhand import Agent
from localhand.models.ollama import OllamaModel
from localhand.models.scripted import ScriptedModel
from localhand.run.guardrails import Limits
from localhand.tools import ToolRegistry, default_tools
from localhand.types import Reply, ToolCall

TARGET_MS = 2.0
"""What an iteration with a file tool may add to a bare client's (issue 37)."""


class TimedTools:
    """Wraps a registry's ``execute`` to add up the time spent inside the tools."""

    def __init__(self, registry: ToolRegistry) -> None:
        self.seconds = 0.0
        self.cpu_seconds = 0.0
        original = registry.execute

        def execute(call: ToolCall) -> Any:
            started, cpu = time.perf_counter(), time.process_time()
            try:
                return original(call)
            finally:
                self.seconds += time.perf_counter() - started
                self.cpu_seconds += time.process_time() - cpu

        registry.execute = execute  # type: ignore[method-assign]


def run_once(
    server: FakeServer, trajectory: dict[str, Any], root: Path, profiler: Any = None
) -> dict[str, Any]:
    workspace = write_workspace(Path(tempfile.mkdtemp(dir=root)), trajectory)
    server.load({"mode": "replay", "items": clean_replies(trajectory, "tools")})
    model = OllamaModel(MODEL, host=server.url)
    tools = default_tools(workspace)
    timer = TimedTools(tools)
    agent = Agent(model, workspace, tools=tools, limits=Limits(max_iterations=40))
    if profiler is not None:
        profiler.start()
    started, cpu = time.perf_counter(), time.process_time()
    result = agent.run(trajectory["task"])
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    if profiler is not None:
        profiler.stop()
    model.close()
    log = server.log()
    failed = check_workspace(workspace, trajectory["checks"])
    return {
        "wall": wall,
        "cpu": cpu,
        "tools": timer.seconds,
        "tools_cpu": timer.cpu_seconds,
        "iterations": result.iterations_used,
        "status": result.status,
        "termination": result.termination_reason,
        "checks_failed": failed,
        "log": log,
    }


def scripted_once(trajectory: dict[str, Any], root: Path) -> dict[str, float]:
    """The loop with no HTTP at all: localhand's ScriptedModel replays the same replies."""
    workspace = write_workspace(Path(tempfile.mkdtemp(dir=root)), trajectory)
    steps: list[Any] = []
    for step in trajectory["steps"]:
        if "final" in step:
            steps.append(step["final"])
        else:
            steps.append(Reply(tool_calls=(ToolCall(step["tool"], dict(step["args"])),)))
    tools = default_tools(workspace)
    timer = TimedTools(tools)
    agent = Agent(ScriptedModel(steps), workspace, tools=tools, limits=Limits(max_iterations=40))
    started = time.perf_counter()
    result = agent.run(trajectory["task"])
    wall = time.perf_counter() - started
    return {"wall": wall, "tools": timer.seconds, "iterations": result.iterations_used}


def bare_replay_between_tools(
    server: FakeServer,
    requests: list[dict[str, Any]],
    replies: list[Any],
    trajectory: dict[str, Any],
    root: Path,
) -> float:
    """The bare client's time for the same requests, each sent after the tool call that comes
    before it in the loop (run untimed, in a fresh workspace), as localhand's requests are."""
    workspace = write_workspace(Path(tempfile.mkdtemp(dir=root)), trajectory)
    tools = default_tools(workspace)
    calls = [ToolCall(s["tool"], dict(s["args"])) for s in trajectory["steps"] if "tool" in s]
    server.load({"mode": "replay", "items": replies})
    seconds = 0.0
    with BareClient(server.url) as client:
        for number, request in enumerate(requests):
            if 0 < number <= len(calls):
                tools.execute(calls[number - 1])
            started = time.perf_counter()
            client.post(request["path"], request["body"])
            seconds += time.perf_counter() - started
    return seconds


def ollama_client_replay(server: FakeServer, requests: list[dict], replies: list) -> float:
    """The official ``ollama`` client alone sending the same requests (what localhand used
    before it spoke the wire itself)."""
    import ollama

    server.load({"mode": "replay", "items": replies})
    client = ollama.Client(host=server.url)
    started = time.perf_counter()
    for request in requests:
        body = dict(request["body"])
        client.chat(**body)
    return time.perf_counter() - started


# -- the command line -----------------------------------------------------------------------

GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@localhost",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@localhost",
}
FILE_TOOLS = ("read_file", "write_file", "edit_file", "list_directory", "search_files")
WRITES = ("write_file", "edit_file")


def git_workspace(root: Path, trajectory: dict[str, Any]) -> Path:
    """The task's files in a new git repository, committed."""
    workspace = write_workspace(Path(tempfile.mkdtemp(dir=root)), trajectory)
    env = {**os.environ, **GIT_ENV}
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "start"]):
        subprocess.run(["git", *command], cwd=workspace, env=env, check=True)
    return workspace


PYCACHE = BENCH / ".pycache"
"""Where ``localhand run`` caches compiled modules here. Not under ``/tmp`` or ``$HOME``: the
commands inherit ``PYTHONPYCACHEPREFIX``, and the sandbox gives them a private ``/tmp`` and
hides ``$HOME``, so a prefix there would make every Python command compile the standard
library it imports again (hundreds of milliseconds a command, none of it localhand's)."""


def cli_env(root: Path) -> dict[str, str]:
    """The environment of ``localhand run``: its store in a temporary ``LOCALHAND_HOME``,
    compiled modules cached as in an installed package (see ``startup_bench.py``; ``PYCACHE``),
    for localhand and for the standard library the task's commands import."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(PYCACHE)
    # the task's commands run ``python``: this virtual environment's, as for a user working in
    # one (not a version manager's shim, a shell script that adds its own time and noise)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["LOCALHAND_HOME"] = str(root / "home")
    env["NO_COLOR"] = "1"
    env.pop("OLLAMA_HOST", None)
    return env


def cli_once(
    server: FakeServer, trajectory: dict[str, Any], root: Path, env: dict[str, str]
) -> dict[str, Any]:
    """One ``localhand run`` of the task, and the arrival time of each of its requests."""
    workspace = git_workspace(root, trajectory)
    server.load({"mode": "replay", "items": clean_replies(trajectory, "tools")})
    command = [
        *localhand_command(),
        "run",
        trajectory["task"],
        "--agentic",
        "--workspace",
        str(workspace),
        "--model",
        MODEL,
        "--host",
        server.url,
        "--backend",
        "ollama",
        "--max-iterations",
        "40",
        "--json",
    ]
    started_at = time.time()
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    ended_at = time.time()
    log = server.log()
    chats = [r["t"] for r in chat_requests(log)]
    intervals = [b - a for a, b in zip(chats, [*chats[1:], ended_at], strict=True)]
    try:
        result = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        result = {"status": "unreadable", "stderr": done.stderr[-1500:]}
    return {
        "exit_code": done.returncode,
        "status": result.get("status"),
        "iterations": result.get("iterations_used"),
        "git_snapshot": bool((result.get("git") or {}).get("before")),
        "checks_failed": check_workspace(workspace, trajectory["checks"]),
        "whole": ended_at - started_at,
        "to_first_request": log["requests"][0]["t"] - started_at if log["requests"] else None,
        "to_first_chat": chats[0] - started_at if chats else None,
        "intervals": intervals,
        "log": log,
        "events_recorded": recorded_events(Path(env["LOCALHAND_HOME"]), result.get("task_id")),
        "stderr": done.stderr[-1500:] if done.returncode else "",
    }


def recorded_events(home: Path, task_id: str | None) -> int | None:
    """How many events of the run the store holds (to show it recorded)."""
    database = home / "runs.db"
    if not task_id or not database.exists():
        return None
    with sqlite3.connect(database) as db:
        row = db.execute(
            "SELECT count(*) FROM events JOIN runs ON events.run_id = runs.id "
            "WHERE runs.task_id = ?",
            (task_id,),
        ).fetchone()
    return int(row[0]) if row else None


def bare_work(workspace: Path, step: dict[str, Any], env: dict[str, str]) -> None:
    """A tool call's work done as plainly as a program can, without localhand (a command in
    ``env``)."""
    tool, args = step["tool"], step["args"]
    path = workspace / str(args.get("path", "."))
    if tool == "run_command":
        command = ["bash", "-c", args["command"]]
        subprocess.run(command, cwd=workspace, capture_output=True, env=env)
    elif tool == "read_file":
        lines = path.read_text(encoding="utf-8").splitlines()
        start, end = args.get("start_line") or 1, args.get("end_line") or len(lines)
        _ = "\n".join(lines[start - 1 : end])
    elif tool == "write_file":
        path.write_text(args["content"], encoding="utf-8")
    elif tool == "edit_file":
        text = path.read_text(encoding="utf-8")
        path.write_text(text.replace(args["old_text"], args["new_text"], 1), encoding="utf-8")
    elif tool == "list_directory":
        _ = sorted(entry.name for entry in os.scandir(path))
    elif tool == "search_files":
        pattern, found = re.compile(args["pattern"]), []
        for folder, dirs, files in os.walk(path):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            for name in files:
                with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as f:
                    found += [line for line in f if pattern.search(line)]
    else:
        raise ValueError(tool)


def bare_cli_baseline(
    server: FakeServer,
    requests: list[dict[str, Any]],
    replies: list[Any],
    trajectory: dict[str, Any],
    root: Path,
    env: dict[str, str],
) -> tuple[list[float], list[float]]:
    """The bare client's round trip for each request and the bare work of the tool call that
    follows it (0 after the last), in a fresh copy of the repository. The commands get the
    environment ``localhand run`` had, writing no compiled modules (as in the sandbox, where the
    cache is read-only)."""
    env = {**env, "PYTHONDONTWRITEBYTECODE": "1"}
    workspace = git_workspace(root, trajectory)
    steps = [s for s in trajectory["steps"] if "tool" in s]
    server.load({"mode": "replay", "items": replies})
    trips, work = [], []
    with BareClient(server.url) as client:
        for number, request in enumerate(requests):
            started = time.perf_counter()
            client.post(request["path"], request["body"])
            trips.append(time.perf_counter() - started)
            started = time.perf_counter()
            if number < len(steps):
                bare_work(workspace, steps[number], env)
            work.append(time.perf_counter() - started)
    return trips, work


def cli_section(
    server: FakeServer, trajectory: dict[str, Any], root: Path, runs: int
) -> dict[str, Any]:
    env = cli_env(root)
    scratch = write_workspace(Path(tempfile.mkdtemp(dir=root)), trajectory)
    for step in trajectory["steps"]:  # cache what the commands import, as an installation has
        if step.get("tool") == "run_command":
            command = step["args"]["command"]
            subprocess.run(["bash", "-c", command], cwd=scratch, env=env, capture_output=True)
    cli_once(server, trajectory, root, env)  # warm-up: compiles and caches localhand
    tools = [s["tool"] for s in trajectory["steps"] if "tool" in s]
    first_command = tools.index("run_command")
    rows = []
    for _ in range(runs):
        run = cli_once(server, trajectory, root, env)
        requests = chat_requests(run["log"])
        trips, work = bare_cli_baseline(
            server, requests, run["log"]["replies"], trajectory, root, env
        )
        extra = [i - t - w for i, t, w in zip(run["intervals"], trips, work, strict=True)]
        files = [x for n, x in enumerate(extra[1 : len(tools)], 1) if tools[n] in FILE_TOOLS]
        writes = [x for n, x in enumerate(extra[1 : len(tools)], 1) if tools[n] in WRITES]
        commands = [x for n, x in enumerate(extra[: len(tools)]) if tools[n] == "run_command"][1:]
        rows.append(
            {
                **{k: run[k] for k in ("exit_code", "status", "iterations", "git_snapshot")},
                **{k: run[k] for k in ("checks_failed", "events_recorded", "stderr")},
                "whole": run["whole"],
                "to_first_request": run["to_first_request"],
                "to_first_chat": run["to_first_chat"],
                "from_first_chat": sum(run["intervals"]),
                "bare_round_trips": sum(trips),
                "bare_work": sum(work),
                "bare_commands": sum(
                    w for n, w in enumerate(work[: len(tools)]) if tools[n] == "run_command"
                ),
                "per_iteration": sum(extra) / len(extra),
                "file_tool_iteration": statistics.median(files),
                "file_tool_iteration_mean": statistics.fmean(files),
                "write_iteration": statistics.median(writes),
                "command_iteration": statistics.median(commands),
                "first_tool_call": extra[0] - statistics.median(files),
                "first_command": extra[first_command] - statistics.median(commands),
                "end_of_run": extra[-1],
                "chat_requests": len(requests),
            }
        )
    first = rows[0]

    def med(key: str) -> dict[str, float]:
        return summary([ms(r[key]) for r in rows])

    return {
        "what": "localhand run --agentic --backend ollama --json, 30-step task, git repository, "
        "recording to the store, commands in the default sandbox",
        "localhand_ms_per_iteration": med("per_iteration"),
        "iteration_with_a_file_tool_ms": med("file_tool_iteration"),
        "iteration_with_a_file_tool_mean_ms": med("file_tool_iteration_mean"),
        "iteration_with_a_write_ms": med("write_iteration"),
        "iteration_with_a_command_ms": med("command_iteration"),
        "first_tool_call_once_ms": med("first_tool_call"),
        "first_command_once_ms": med("first_command"),
        "end_of_run_once_ms": med("end_of_run"),
        "start_to_first_request_ms": med("to_first_request"),
        "start_to_first_chat_ms": med("to_first_chat"),
        "whole_run_ms": med("whole"),
        "first_chat_to_exit_ms": med("from_first_chat"),
        "bare_round_trips_ms": med("bare_round_trips"),
        "bare_tool_work_ms": med("bare_work"),
        "bare_commands_ms": med("bare_commands"),
        "commands": tools.count("run_command"),
        "file_tool_calls": sum(t in FILE_TOOLS for t in tools),
        "run": {
            k: first[k]
            for k in (
                "exit_code",
                "status",
                "iterations",
                "chat_requests",
                "git_snapshot",
                "events_recorded",
                "checks_failed",
                "stderr",
            )
        },
    }


def in_process_section(
    server: FakeServer, trajectory: dict[str, Any], root: Path, runs: int, profile: Path | None
) -> dict[str, Any]:
    """The task through ``Agent.run`` in this process: localhand's time per iteration beside the
    bare client's, the official client's and the ScriptedModel's."""
    measured: list[dict[str, Any]] = []
    run_once(server, trajectory, root)  # warm-up: imports, the server's first load
    for _ in range(runs):
        run = run_once(server, trajectory, root)
        requests = chat_requests(run["log"])
        run["chat_requests"] = len(requests)
        run["other_requests"] = len(run["log"]["requests"]) - len(requests)
        cpu = time.process_time()
        run["bare_back_to_back"] = bare_replay(server, requests, run["log"]["replies"])
        run["bare_cpu"] = time.process_time() - cpu
        run["bare"] = bare_replay_between_tools(
            server, requests, run["log"]["replies"], trajectory, root
        )
        run["ollama_client"] = ollama_client_replay(server, requests, run["log"]["replies"])
        measured.append(run)
    if profile:
        from pyinstrument import Profiler

        profiler = Profiler(interval=0.0005)
        run_once(server, trajectory, root, profiler)
        profile.write_text(profiler.output_text(unicode=True, color=False, show_all=False))
    scripted = [scripted_once(trajectory, root) for _ in range(runs)]

    per_iter = [(r["wall"] - r["tools"] - r["bare"]) / r["iterations"] for r in measured]
    vs_back_to_back = [
        (r["wall"] - r["tools"] - r["bare_back_to_back"]) / r["iterations"] for r in measured
    ]
    client_per_iter = [
        (r["ollama_client"] - r["bare_back_to_back"]) / r["chat_requests"] for r in measured
    ]
    cpu_per_iter = [(r["cpu"] - r["tools_cpu"] - r["bare_cpu"]) / r["iterations"] for r in measured]
    loop_per_iter = [(s["wall"] - s["tools"]) / s["iterations"] for s in scripted]
    first = measured[0]
    return {
        "task": {
            "iterations": statistics.median(r["iterations"] for r in measured),
            "tool_calls": sum(1 for s in trajectory["steps"] if "tool" in s),
            "workspace_files": len(trajectory["files"]),
            "status": first["status"],
            "termination": first["termination"],
            "checks_failed": first["checks_failed"],
            "chat_requests": first["chat_requests"],
            "other_requests": first["other_requests"],
        },
        "runs": runs,
        "wall_ms": summary([ms(r["wall"]) for r in measured]),
        "tools_ms": summary([ms(r["tools"]) for r in measured]),
        "bare_client_ms": summary([ms(r["bare"]) for r in measured]),
        "bare_back_to_back_ms": summary([ms(r["bare_back_to_back"]) for r in measured]),
        "ollama_client_ms": summary([ms(r["ollama_client"]) for r in measured]),
        "localhand_ms_per_iteration": summary([ms(x) for x in per_iter]),
        "localhand_ms_per_iteration_vs_back_to_back": summary([ms(x) for x in vs_back_to_back]),
        "localhand_cpu_ms_per_iteration": summary([ms(x) for x in cpu_per_iter]),
        "ollama_client_extra_ms_per_request": summary([ms(x) for x in client_per_iter]),
        "loop_only_ms_per_iteration_scripted_model": summary([ms(x) for x in loop_per_iter]),
        "profile": str(profile) if profile else None,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="measured runs (after one warm-up)")
    parser.add_argument("--filler-files", type=int, default=12, help="extra files in the workspace")
    parser.add_argument("--profile", type=Path, help="write a pyinstrument profile here")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--no-cli", action="store_true", help="only the in-process figures")
    which.add_argument("--cli-only", action="store_true", help="only the command line's figures")
    args = parser.parse_args(argv)

    trajectory = thirty_step_task(args.filler_files)
    root = Path(tempfile.mkdtemp(prefix="lh-overhead-"))
    cli, in_process = None, {}
    try:
        with FakeServer() as server:
            if not args.no_cli:
                cli = cli_section(server, trajectory, root, args.runs)
            if not args.cli_only:
                in_process = in_process_section(server, trajectory, root, args.runs, args.profile)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    headline = cli["iteration_with_a_file_tool_mean_ms"] if cli else None
    emit(
        {
            "benchmark": "overhead",
            "file_tool_iteration_beyond_bare_client_ms": headline,
            "target_ms": TARGET_MS,
            "meets_target": headline["median"] <= TARGET_MS if headline else None,
            "machine": machine(),
            "load_average": os.getloadavg(),
            "cli": cli,
            **in_process,
        }
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

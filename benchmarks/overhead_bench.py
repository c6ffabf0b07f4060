"""Per-iteration overhead: localhand's own time per loop iteration, beyond the bare round trip.

The scripted 30-step task (29 tool calls and a final answer over a small Python package) runs
through the whole loop and the real tools, with ``OllamaModel`` against the fake Ollama server
in another process, answering at once. Then a bare client (``http.client``, one kept-alive
connection) sends the same 30 chat requests and gets the same replies. localhand's time per
iteration is

    (wall time of Agent.run - time inside the tools - bare client's time) / iterations

so it counts everything localhand adds: building messages, its HTTP layer, parsing,
guardrails, events, the workspace change tracker, and its ``/api/show`` and ``/api/ps`` requests.

The bare client runs twice. Back to back, its requests find the server and both processes' CPU
caches hot: 1.7 ms a round trip here. In the loop, every request follows a tool (for this task
often a ``python -m unittest`` in a child process), after which the same request takes about
3 ms, for the bare client as much as for localhand. So the headline baseline
(``bare_client_ms``) replays the requests with the same tool calls run between them, untimed,
in a workspace of its own; ``bare_back_to_back_ms`` is the other one, and
``localhand_ms_per_iteration_vs_back_to_back`` the overhead measured against it.

The same difference in CPU time of this process (``localhand_cpu_ms_per_iteration``: the fake
server is another process, the tools' commands are children) is much less disturbed by whatever
else the machine runs. The official ``ollama`` client replays the requests back to back too
(``ollama_client_ms``: what localhand used before it spoke the wire itself). And the same task
runs with the in-process ScriptedModel (no HTTP; that model deep-copies every request it
records, which the loop then pays for). Prints one JSON object. ``--profile FILE`` writes a
pyinstrument text profile of one run (``pip install pyinstrument``).

    python benchmarks/overhead_bench.py [--runs 5] [--filler-files 12] [--profile FILE]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import (
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

from localhand.models.ollama import OllamaModel
from localhand.models.scripted import ScriptedModel
from localhand.run.agent import Agent
from localhand.run.guardrails import Limits
from localhand.tools import ToolRegistry, default_tools
from localhand.types import Reply, ToolCall


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="measured runs (after one warm-up)")
    parser.add_argument("--filler-files", type=int, default=12, help="extra files in the workspace")
    parser.add_argument("--profile", type=Path, help="write a pyinstrument profile here")
    args = parser.parse_args(argv)

    trajectory = thirty_step_task(args.filler_files)
    root = Path(tempfile.mkdtemp(prefix="lh-overhead-"))
    runs: list[dict[str, Any]] = []
    try:
        with FakeServer() as server:
            run_once(server, trajectory, root)  # warm-up: imports, the server's first load
            for _ in range(args.runs):
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
                runs.append(run)
            profile_text = None
            if args.profile:
                from pyinstrument import Profiler

                profiler = Profiler(interval=0.0005)
                run_once(server, trajectory, root, profiler)
                profile_text = profiler.output_text(unicode=True, color=False, show_all=False)
                args.profile.write_text(profile_text)
        scripted = [scripted_once(trajectory, root) for _ in range(args.runs)]
    finally:
        shutil.rmtree(root, ignore_errors=True)

    n = statistics.median(r["iterations"] for r in runs)
    per_iter = [(r["wall"] - r["tools"] - r["bare"]) / r["iterations"] for r in runs]
    vs_back_to_back = [
        (r["wall"] - r["tools"] - r["bare_back_to_back"]) / r["iterations"] for r in runs
    ]
    client_per_iter = [
        (r["ollama_client"] - r["bare_back_to_back"]) / r["chat_requests"] for r in runs
    ]
    cpu_per_iter = [(r["cpu"] - r["tools_cpu"] - r["bare_cpu"]) / r["iterations"] for r in runs]
    loop_per_iter = [(s["wall"] - s["tools"]) / s["iterations"] for s in scripted]
    first = runs[0]
    emit(
        {
            "benchmark": "overhead",
            "machine": machine(),
            "task": {
                "iterations": n,
                "tool_calls": sum(1 for s in trajectory["steps"] if "tool" in s),
                "workspace_files": len(trajectory["files"]),
                "status": first["status"],
                "termination": first["termination"],
                "checks_failed": first["checks_failed"],
                "chat_requests": first["chat_requests"],
                "other_requests": first["other_requests"],
            },
            "runs": args.runs,
            "wall_ms": summary([ms(r["wall"]) for r in runs]),
            "tools_ms": summary([ms(r["tools"]) for r in runs]),
            "bare_client_ms": summary([ms(r["bare"]) for r in runs]),
            "bare_back_to_back_ms": summary([ms(r["bare_back_to_back"]) for r in runs]),
            "ollama_client_ms": summary([ms(r["ollama_client"]) for r in runs]),
            "localhand_ms_per_iteration": summary([ms(x) for x in per_iter]),
            "localhand_ms_per_iteration_vs_back_to_back": summary([ms(x) for x in vs_back_to_back]),
            "localhand_cpu_ms_per_iteration": summary([ms(x) for x in cpu_per_iter]),
            "ollama_client_extra_ms_per_request": summary([ms(x) for x in client_per_iter]),
            "loop_only_ms_per_iteration_scripted_model": summary([ms(x) for x in loop_per_iter]),
            "target_ms_per_iteration": 2.0,
            "meets_target": statistics.median(per_iter) * 1000 <= 2.0,
            "profile": str(args.profile) if args.profile else None,
        }
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

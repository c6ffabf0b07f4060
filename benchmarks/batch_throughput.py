"""Batch throughput: tasks per minute against ``--concurrency``, and how close to the ideal.

The fake Ollama server (real sockets, in this process) generates ``--slots`` replies at once
and takes ``--latency`` seconds for each, like a GPU box with ``OLLAMA_NUM_PARALLEL`` slots.
Each task takes ``--steps`` model turns (tool calls writing files, then a final answer) in a
fresh copy of a small workspace. With N tasks at once the best possible rate is

    ideal tasks/minute = min(N, slots) / (steps × latency) × 60

(what is left is localhand's own overhead: workspaces, the loop, the store, verification).
Prints one JSON object; takes about a minute with the defaults.

    python benchmarks/batch_throughput.py [--slots 4] [--latency 0.5] [--steps 3]
        [--tasks 16] [--concurrency 1 2 4 8]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from _common import emit, machine
from rich.console import Console

from localhand.batch import BatchOptions, run_batch
from localhand.config.settings import Settings
from localhand.testing import FakeOllama

MODEL = "qwen3:8b"


def model(steps: int):
    """A model that writes ``steps - 1`` files, one per turn, then answers."""

    def reply(body: dict[str, Any]) -> Any:
        done = sum(1 for m in body["messages"] if m.get("role") == "tool")
        if done >= steps - 1:
            return "Done."
        call = {"name": "write_file", "arguments": {"path": f"out{done}.txt", "content": "x"}}
        return {"content": "", "tool_calls": [{"function": call}]}

    return reply


def write_batch(folder: Path, tasks: int, steps: int) -> Path:
    workspace = folder / "ws"
    workspace.mkdir()
    (workspace / "README.md").write_text("a small workspace\n")
    lines = [
        {
            "id": f"t{i}",
            "description": f"Write the files, task {i}",
            "workspace": "ws",
            "agentic": True,
            "verify": [{"file_exists": f"out{steps - 2}.txt"}],
        }
        for i in range(tasks)
    ]
    path = folder / "tasks.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def measure(args: argparse.Namespace, concurrency: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="localhand-bench-") as tmp:
        folder = Path(tmp)
        tasks = write_batch(folder, args.tasks, args.steps)
        replies = [model(args.steps)] * (args.tasks * args.steps + 10)
        with FakeOllama(
            replies, models={MODEL: {}}, slots=args.slots, latency=args.latency
        ) as server:
            report = run_batch(
                tasks,
                Settings(model=MODEL),
                BatchOptions(
                    concurrency=concurrency,
                    hosts=[server.url],
                    slots=args.slots,
                    workdir=folder / "work",
                    db=folder / "runs.db",
                ),
                console=Console(file=open("/dev/null", "w"), stderr=False),  # noqa: SIM115
                live=False,
            )
            peak = server.peak_requests
    passed = sum(1 for row in report.rows if row.result["status"] == "pass")
    per_minute = len(report.rows) / report.elapsed_s * 60
    ideal = min(concurrency, args.slots) / (args.steps * args.latency) * 60
    return {
        "concurrency": concurrency,
        "tasks": len(report.rows),
        "passed": passed,
        "seconds": round(report.elapsed_s, 2),
        "tasks_per_minute": round(per_minute, 1),
        "ideal_tasks_per_minute": round(ideal, 1),
        "efficiency": round(per_minute / ideal, 3),
        "peak_requests_at_server": peak,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--slots", type=int, default=4)
    parser.add_argument("--latency", type=float, default=0.5, help="seconds per model reply")
    parser.add_argument("--steps", type=int, default=3, help="model turns per task (>= 2)")
    parser.add_argument("--tasks", type=int, default=16)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 2, 4, 8])
    args = parser.parse_args()
    if args.steps < 2:
        sys.exit("--steps must be at least 2: one file written, then the answer")
    results = [measure(args, n) for n in args.concurrency]
    emit(
        {
            "benchmark": "batch_throughput",
            "machine": machine(),
            "params": {
                "slots": args.slots,
                "latency_s": args.latency,
                "steps_per_task": args.steps,
                "tasks": args.tasks,
            },
            "ideal": "min(concurrency, slots) / (steps * latency) tasks per second",
            "results": results,
        }
    )


if __name__ == "__main__":
    main()

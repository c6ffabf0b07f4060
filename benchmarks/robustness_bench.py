"""Robustness under small-model noise: correct trajectories replayed through a noisy model,
for localhand and for the peers, on the same replays.

60 scripted trajectories of correct tasks (six kinds: fix a failing test, add a function from
a spec, rename across files, change a config value, write a new script, resolve a docs TODO;
5 to 7 steps each, see ``_tasks.robustness_trajectories``) are answered by ``_noisy.NoisyModel``,
which corrupts replies at the rates in ``_noisy.DEFAULT_RATES`` times ``--scale``: the call
moved into the text in another model family's format, numbers and booleans as strings, double
encoded arguments, the call only inside the thinking, an empty reply, a truncated reply, the
previous call repeated, a transient HTTP 500. Corruption decisions are keyed by (seed,
trajectory, reply number), so every agent meets the same corruption at the same point.

Per agent: the fraction of tasks completed (the agent ended by itself, the noisy model had
reached the final step, and the workspace passes the task's checks), "false finishes" (the
agent ended as if done but the work was not), the extra iterations (model replies beyond the
trajectory's length, over completed tasks and in all), and the completion rate of the tasks
in which each kind of corruption occurred at least once. Every agent gets the same step cap
(three times the trajectory's length).

``--per-kind N`` also replays N trajectories with one kind of corruption at a time (rate 0.3).

    python benchmarks/robustness_bench.py [--count 60] [--scale 1.0] [--seed 1]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from _agents import AGENTS, AgentSpec, run_jobs
from _common import FakeServer, chat_requests, emit, machine
from _noisy import DEFAULT_RATES, KINDS
from _tasks import check_workspace, robustness_trajectories, write_workspace

from localhand.tools import default_tools


def replay(
    agent: AgentSpec,
    server: FakeServer,
    trajectories: list[dict[str, Any]],
    rates: dict[str, float],
    seed: int,
    root: Path,
    definitions: list[dict[str, Any]],
    label: str,
) -> dict[str, Any]:
    jobs = []
    for trajectory in trajectories:
        job_id = f"{agent.name}-{label}-{trajectory['id']}"
        workspace = write_workspace(root / job_id, trajectory)
        jobs.append(
            {
                "id": job_id,
                "task": trajectory["task"],
                "workspace": str(workspace),
                "max_steps": 3 * len(trajectory["steps"]),
                "load": {
                    "job": job_id,
                    "mode": "noisy",
                    "trajectory": trajectory,
                    "dialect": agent.dialect,
                    "workspace": str(workspace),
                    "rates": rates,
                    "seed": seed,
                },
            }
        )
    output, logs = run_jobs(agent, server, jobs, definitions, timeout=1800)
    tasks = []
    for job, trajectory, result in zip(jobs, trajectories, output["results"], strict=True):
        log = logs.get(job["id"]) or {"requests": [], "noisy": None}
        noisy = log["noisy"] or {}
        failed = check_workspace(Path(job["workspace"]), trajectory["checks"])
        completed = result["finished"] and noisy.get("reached_final", False) and not failed
        tasks.append(
            {
                "id": trajectory["id"],
                "completed": bool(completed),
                "finished": result["finished"],
                "false_finish": result["finished"] and not completed,
                "replies": noisy.get("replies", 0),
                "steps": len(trajectory["steps"]),
                "extra_iterations": noisy.get("replies", 0) - len(trajectory["steps"]),
                "http_500": noisy.get("faults", 0),
                "chat_requests": len(chat_requests(log)),
                "corruptions": noisy.get("corruptions", {}),
                "error": result["error"],
                "wall_s": result["wall_s"],
            }
        )
    return summarize(tasks)


def summarize(tasks: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(tasks)
    done = [t for t in tasks if t["completed"]]
    by_kind: dict[str, dict[str, Any]] = {}
    for kind in KINDS:
        hit = [t for t in tasks if t["corruptions"].get(kind)]
        if hit:
            by_kind[kind] = {
                "tasks_hit": len(hit),
                "completed_fraction": round(sum(t["completed"] for t in hit) / len(hit), 3),
            }
    failures: dict[str, int] = {}
    for t in tasks:
        if not t["completed"]:
            why = (t["error"] or ("false finish" if t["false_finish"] else "stopped")).split(":")[0]
            failures[why] = failures.get(why, 0) + 1
    return {
        "tasks": n,
        "completed": len(done),
        "completed_fraction": round(len(done) / n, 3) if n else None,
        "false_finishes": sum(t["false_finish"] for t in tasks),
        "extra_iterations_per_completed_task": round(
            statistics.mean(t["extra_iterations"] for t in done), 2
        )
        if done
        else None,
        "extra_iterations_total": sum(t["extra_iterations"] for t in tasks),
        "corruptions_met": sum(sum(t["corruptions"].values()) for t in tasks),
        "http_500_met": sum(t["http_500"] for t in tasks),
        "by_corruption": by_kind,
        "why_not_completed": failures,
        "failed_examples": [
            {k: t[k] for k in ("id", "corruptions", "error", "replies", "finished")}
            for t in tasks
            if not t["completed"]
        ][:5],
        "wall_s_total": round(sum(t["wall_s"] for t in tasks), 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=60, help="trajectories (at least 50)")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every rate")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--agents", default=",".join(AGENTS))
    parser.add_argument("--per-kind", type=int, default=0, help="trajectories per single kind")
    args = parser.parse_args(argv)
    trajectories = robustness_trajectories(args.count)
    rates = {kind: rate * args.scale for kind, rate in DEFAULT_RATES.items()}
    definitions = default_tools(tempfile.gettempdir()).definitions()
    root = Path(tempfile.mkdtemp(prefix="lh-robust-"))
    results: dict[str, Any] = {}
    per_kind: dict[str, Any] = {}
    try:
        with FakeServer() as server:
            for name in args.agents.split(","):
                agent = AGENTS[name]
                if not agent.available():
                    results[name] = {"unavailable": "run python benchmarks/peers/setup_venvs.py"}
                    continue
                clean = replay(
                    agent, server, trajectories[:12], {}, args.seed, root, definitions, "clean"
                )
                noisy = replay(
                    agent, server, trajectories, rates, args.seed, root, definitions, "noisy"
                )
                results[name] = {
                    "version": agent.version(),
                    "clean_12": {
                        "completed_fraction": clean["completed_fraction"],
                        "extra_iterations_total": clean["extra_iterations_total"],
                    },
                    "noisy": noisy,
                }
                if args.per_kind:
                    per_kind[name] = {}
                    for kind in KINDS:
                        only = replay(
                            agent,
                            server,
                            trajectories[: args.per_kind],
                            {kind: 0.3},
                            args.seed,
                            root,
                            definitions,
                            f"only-{kind}",
                        )
                        per_kind[name][kind] = {
                            k: only[k]
                            for k in (
                                "completed_fraction",
                                "false_finishes",
                                "extra_iterations_per_completed_task",
                                "corruptions_met",
                                "why_not_completed",
                            )
                        }
    finally:
        shutil.rmtree(root, ignore_errors=True)
    table = [
        {
            "agent": name,
            "completed_fraction": row["noisy"]["completed_fraction"],
            "false_finishes": row["noisy"]["false_finishes"],
            "extra_iterations_per_completed_task": row["noisy"][
                "extra_iterations_per_completed_task"
            ],
            "extra_iterations_total": row["noisy"]["extra_iterations_total"],
            "clean_completed_fraction": row["clean_12"]["completed_fraction"],
        }
        for name, row in results.items()
        if "noisy" in row
    ]
    emit(
        {
            "benchmark": "robustness",
            "machine": machine(),
            "trajectories": len(trajectories),
            "seed": args.seed,
            "rates": rates,
            "table": table,
            "agents": results,
            "per_kind": per_kind or None,
        }
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

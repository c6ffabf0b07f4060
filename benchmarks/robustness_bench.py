"""Robustness under small-model noise: correct trajectories replayed through a noisy model,
for localhand and for the peers, on the same replays.

60 scripted trajectories of correct tasks (six kinds: fix a failing test, add a function from
a spec, rename across files, change a config value, write a new script, resolve a docs TODO;
5 to 7 steps each, see ``_tasks.robustness_trajectories``) are answered by ``_noisy.NoisyModel``
under two noise profiles (``_noisy.PROFILES``):

- ``format``: format noise only, at the rates in ``_noisy.DEFAULT_RATES`` times ``--scale``,
  independent per reply: the call moved into the text in another model family's format,
  numbers and booleans as strings, double encoded arguments, the call only inside the
  thinking, an empty reply, a truncated reply, the previous call repeated, a transient HTTP
  500. The figures of earlier editions of this benchmark are this profile's, and reproduce.
- ``format+behaviour``: the same, plus what a small model does wrong in well-formed replies
  (``_noisy.BEHAVIOUR_RATES``): a premature final answer, a false claim of success instead of
  the last piece of work, wrong content in a well-formed call; and errors correlated: after a
  corrupted reply the same kind comes again with probability ``--correlation`` (0.5).

Corruption decisions are keyed by (seed, trajectory, reply number), so every agent meets the
same corruption at the same point.

Per agent and profile: the fraction of tasks **completed** (the agent ended by itself, the
noisy model had reached the final step, and the workspace passes the task's checks), **false
finishes** (the agent ended as if done and the task is not completed) and, of those, the ones
whose workspace fails the checks (the work is not done; the others stopped before the model's
own last steps with the checks passing), what the model's last reply was in each false finish,
the extra iterations (model replies beyond the trajectory's length), and the completion rate
of the tasks in which each kind of corruption occurred at least once. Every agent gets the
same step cap (three times the trajectory's length).

localhand runs once more per profile with the task's checks given to it as verification
(``FileContains``, ``CommandCheck``: what ``--verify`` does), on the same replays:
``caught_by_verification`` counts the false finishes whose Result is not ``pass``. The peers
have no such mechanism; their false finishes stand as they are. localhand's act-first nudge
(``Agent(require_action=True)``, on by default) is counted too: early final answers it refused.

``--per-kind N`` also replays N trajectories with one kind of corruption at a time (rate 0.3
where the kind applies, no correlation).

    python benchmarks/robustness_bench.py [--count 60] [--scale 1.0] [--seed 1]
        [--profiles format,format+behaviour] [--correlation 0.5] [--per-kind 12]
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
from _noisy import DEFAULT_CORRELATION, EARLY_FINALS, KINDS, PROFILES
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
    correlation: float = 0.0,
    verify: bool = False,
) -> dict[str, Any]:
    jobs = []
    for trajectory in trajectories:
        job_id = f"{agent.name}-{label}-{trajectory['id']}"
        workspace = write_workspace(root / job_id, trajectory)
        job: dict[str, Any] = {
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
                "correlation": correlation,
            },
        }
        if verify:
            job["checks"] = trajectory["checks"]
        jobs.append(job)
    output, logs = run_jobs(agent, server, jobs, definitions, timeout=1800)
    tasks = []
    for job, trajectory, result in zip(jobs, trajectories, output["results"], strict=True):
        log = logs.get(job["id"]) or {"requests": [], "noisy": None}
        noisy = log["noisy"] or {}
        failed = check_workspace(Path(job["workspace"]), trajectory["checks"])
        completed = result["finished"] and noisy.get("reached_final", False) and not failed
        extra = result.get("extra") or {}
        early = noisy.get("early_finals", [])
        tasks.append(
            {
                "id": trajectory["id"],
                "completed": bool(completed),
                "finished": result["finished"],
                "false_finish": result["finished"] and not completed,
                "checks_failed": failed,
                "ending": noisy.get("last_reply"),
                "status": extra.get("status"),
                "act_first_nudges": extra.get("act_first_nudges", 0),
                "early_finals": len(early),
                "early_finals_refused": sum(1 for e in early if e["refused"]),
                "early_finals_refused_by_kind": {
                    kind: sum(1 for e in early if e["refused"] and e["kind"] == kind)
                    for kind in EARLY_FINALS
                },
                "wrong_content_landed": noisy.get("wrong_content_landed", 0),
                "wrong_content_repaired": noisy.get("wrong_content_repaired", 0),
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
    return summarize(tasks, verify)


def count(values: list[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for value in values:
        out[value] = out.get(value, 0) + 1
    return dict(sorted(out.items(), key=lambda item: -item[1]))


def summarize(tasks: list[dict[str, Any]], verify: bool = False) -> dict[str, Any]:
    n = len(tasks)
    done = [t for t in tasks if t["completed"]]
    false = [t for t in tasks if t["false_finish"]]
    by_kind: dict[str, dict[str, Any]] = {}
    for kind in KINDS:
        hit = [t for t in tasks if t["corruptions"].get(kind)]
        if hit:
            by_kind[kind] = {
                "tasks_hit": len(hit),
                "completed_fraction": round(sum(t["completed"] for t in hit) / len(hit), 3),
                "false_finishes": sum(t["false_finish"] for t in hit),
            }
    failures: dict[str, int] = {}
    for t in tasks:
        if not t["completed"]:
            why = (t["error"] or ("false finish" if t["false_finish"] else "stopped")).split(":")[0]
            failures[why] = failures.get(why, 0) + 1
    summary: dict[str, Any] = {
        "tasks": n,
        "completed": len(done),
        "completed_fraction": round(len(done) / n, 3) if n else None,
        "false_finishes": len(false),
        "false_finishes_work_not_done": sum(1 for t in false if t["checks_failed"]),
        "false_finishes_checks_pass": sum(1 for t in false if not t["checks_failed"]),
        "false_finish_last_reply": count([str(t["ending"]) for t in false]),
        "false_finish_work_not_done_last_reply": count(
            [str(t["ending"]) for t in false if t["checks_failed"]]
        ),
        "early_finals_sent": sum(t["early_finals"] for t in tasks),
        "early_finals_refused": sum(t["early_finals_refused"] for t in tasks),
        "early_finals_refused_by_kind": {
            kind: sum(t["early_finals_refused_by_kind"][kind] for t in tasks)
            for kind in EARLY_FINALS
        },
        "act_first_nudges": sum(t["act_first_nudges"] for t in tasks),
        "wrong_content_landed": sum(t["wrong_content_landed"] for t in tasks),
        "wrong_content_repaired_by_the_model": sum(t["wrong_content_repaired"] for t in tasks),
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
            {k: t[k] for k in ("id", "corruptions", "error", "replies", "finished", "ending")}
            for t in tasks
            if not t["completed"]
        ][:5],
        "wall_s_total": round(sum(t["wall_s"] for t in tasks), 2),
    }
    if verify:
        caught = [t for t in false if t["status"] != "pass"]
        summary["caught_by_verification"] = len(caught)
        summary["caught_by_verification_last_reply"] = count([str(t["ending"]) for t in caught])
        summary["not_caught_last_reply"] = count(
            [str(t["ending"]) for t in false if t["status"] == "pass"]
        )
        summary["statuses"] = count([str(t["status"]) for t in tasks])
        summary["status_of_completed"] = count([str(t["status"]) for t in done])
    return summary


HEADLINE = (
    "completed_fraction",
    "false_finishes",
    "false_finishes_work_not_done",
    "extra_iterations_per_completed_task",
    "extra_iterations_total",
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=60, help="trajectories (at least 50)")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every rate")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--agents", default=",".join(AGENTS))
    parser.add_argument(
        "--profiles", default=",".join(PROFILES), help="noise profiles, or 'none' (per-kind only)"
    )
    parser.add_argument(
        "--correlation",
        type=float,
        default=DEFAULT_CORRELATION,
        help="chance that a corrupted reply's kind comes again on the next reply "
        "(profiles with behaviour only)",
    )
    parser.add_argument("--no-verify", action="store_true", help="skip localhand + checks")
    parser.add_argument("--per-kind", type=int, default=0, help="trajectories per single kind")
    args = parser.parse_args(argv)
    trajectories = robustness_trajectories(args.count)
    profiles = [] if args.profiles == "none" else args.profiles.split(",")
    settings = {}
    for name in profiles:
        rates, correlated = PROFILES[name]
        settings[name] = {
            "rates": {kind: rate * args.scale for kind, rate in rates.items()},
            "correlation": args.correlation if correlated else 0.0,
        }
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
                row: dict[str, Any] = {"version": agent.version()}
                if profiles:
                    clean = replay(
                        agent, server, trajectories[:12], {}, args.seed, root, definitions, "clean"
                    )
                    row["clean_12"] = {
                        "completed_fraction": clean["completed_fraction"],
                        "extra_iterations_total": clean["extra_iterations_total"],
                    }
                for profile, setting in settings.items():
                    row[profile] = replay(
                        agent,
                        server,
                        trajectories,
                        setting["rates"],
                        args.seed,
                        root,
                        definitions,
                        profile,
                        setting["correlation"],
                    )
                    if name == "localhand" and not args.no_verify:
                        row[f"{profile} +verification"] = replay(
                            agent,
                            server,
                            trajectories,
                            setting["rates"],
                            args.seed,
                            root,
                            definitions,
                            f"{profile}-verify",
                            setting["correlation"],
                            verify=True,
                        )
                results[name] = row
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
                                "false_finishes_work_not_done",
                                "extra_iterations_per_completed_task",
                                "corruptions_met",
                                "early_finals_refused",
                                "why_not_completed",
                            )
                        }
    finally:
        shutil.rmtree(root, ignore_errors=True)
    table = []
    for profile in profiles:
        for name, row in results.items():
            for variant in (profile, f"{profile} +verification"):
                if variant not in row:
                    continue
                entry = {"profile": profile, "agent": name, "verification": variant != profile}
                entry.update({k: row[variant][k] for k in HEADLINE})
                if "caught_by_verification" in row[variant]:
                    entry["caught_by_verification"] = row[variant]["caught_by_verification"]
                entry["early_finals_refused"] = row[variant]["early_finals_refused"]
                table.append(entry)
    emit(
        {
            "benchmark": "robustness",
            "machine": machine(),
            "trajectories": len(trajectories),
            "seed": args.seed,
            "profiles": settings,
            "table": table,
            "agents": results,
            "per_kind": per_kind or None,
        }
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

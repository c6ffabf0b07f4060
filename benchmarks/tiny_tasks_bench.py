"""How often the embedded tiny model passes small tasks of the shapes held-back checks try
(``benchmarks/tiny_tasks/tasks.json``): no quoted check, multi-dot file names, repairing its
own writes. Each task runs in a fresh workspace through the tool loop, graded as
``--verify auto`` grades it (the command ``localhand.evidence.project_checks`` finds), over
several seeds. Prints one JSON object: per task the statuses, and the overall pass rate.

    python benchmarks/tiny_tasks_bench.py [--seeds 3] [--temperature 0.2] [--only NAME,...]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--temperature", type=float, default=0.2)
    parser.add_argument("--only", default="", help="comma-separated task names")
    args = parser.parse_args(argv)
    try:
        from localhand.models.embedded import EmbeddedModel
        from localhand.session.backend import default_gguf
    except ImportError as missing:
        print(json.dumps({"error": f"needs the embedded extra: {missing}"}))
        return 0
    from localhand import Agent
    from localhand.evidence.project_checks import detect_check
    from localhand.evidence.verify import CommandCheck
    from localhand.run.guardrails import Limits

    gguf = default_gguf()
    if gguf is None:
        print(json.dumps({"error": "needs the embedded extra: no tiny model installed"}))
        return 0
    tasks = json.loads((HERE / "tiny_tasks" / "tasks.json").read_text())["tasks"]
    only = {n for n in args.only.split(",") if n}
    model = EmbeddedModel(gguf, temperature=args.temperature)
    rows, passed, runs = [], 0, 0
    for task in tasks:
        if only and task["name"] not in only:
            continue
        statuses, seconds = [], []
        for seed in range(args.seeds):
            model.seed = seed
            with tempfile.TemporaryDirectory(prefix="lh-tiny-") as root:
                workspace = Path(root) / "ws"
                for name, text in task["files"].items():
                    (workspace / name).parent.mkdir(parents=True, exist_ok=True)
                    (workspace / name).write_text(text)
                found = detect_check(workspace, task["task"])
                checks = [CommandCheck(found.command)] if found else []
                agent = Agent(
                    model,
                    workspace,
                    limits=Limits(max_iterations=8, wall_clock_s=300),
                    checks=checks,
                )
                began = time.perf_counter()
                statuses.append(str(agent.run(task["task"]).status))
                seconds.append(round(time.perf_counter() - began, 1))
        passed += statuses.count("pass")
        runs += len(statuses)
        rows.append({"task": task["name"], "statuses": statuses, "seconds": seconds})
    out = {
        "benchmark": "tiny_tasks",
        "temperature": args.temperature,
        "seeds": args.seeds,
        "passed": passed,
        "runs": runs,
        "pass_rate": round(passed / runs, 2) if runs else None,
        "by_task": rows,
    }
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

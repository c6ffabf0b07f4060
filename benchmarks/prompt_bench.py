"""Prompt economy and prompt-cache friendliness of localhand on the scripted 30-step task.

- ``fixed_prompt``: tokens of the system prompt and of the default tools' schemas, counted
  with a real tokenizer (Gemma 3's, from the GGUF package the project already uses; see
  ``_common.Tokenizer``), both bare and as Qwen's chat template wraps the schemas;
  target: at most 1,200 tokens together.
- ``thirty_steps``: prompt tokens of each request of the 30-step task (as recorded by the
  fake server, rendered the way a Qwen-style template renders them), their growth, the total,
  the final context, "prefill amplification" (total prompt tokens sent / final context), and
  what a server with a warm prompt cache would have to prefill.
- ``cache``: the fraction of requests whose messages extend the previous request's messages
  byte for byte, with identical tools (target: 100% until compaction). Also run with a small
  context window (``num_ctx_max`` 4096), where localhand compacts the history: the first break
  should be the compaction.

Prints one JSON object.

    python benchmarks/prompt_bench.py
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from _common import (
    MODEL,
    QWEN_TOOLS_HEAD,
    QWEN_TOOLS_TAIL,
    FakeServer,
    Tokenizer,
    chat_requests,
    economy,
    emit,
    machine,
)
from _noisy import clean_replies
from _tasks import thirty_step_task, write_workspace

from localhand.events import EventLog, Warning
from localhand.models.ollama import OllamaModel
from localhand.run.agent import Agent
from localhand.run.guardrails import Limits
from localhand.run.prompt import SYSTEM_PROMPT
from localhand.run.tokens import estimate_prompt_tokens
from localhand.tools import default_tools

TARGET_FIXED = 1200


def fixed_prompt(tok: Tokenizer) -> dict[str, Any]:
    definitions = default_tools(tempfile.gettempdir()).definitions()
    schemas = "\n".join(json.dumps(d, ensure_ascii=False) for d in definitions)
    system = tok.count(SYSTEM_PROMPT)
    tools = tok.count(schemas)
    wrapper = tok.count(QWEN_TOOLS_HEAD + QWEN_TOOLS_TAIL)
    per_tool = {
        d["function"]["name"]: tok.count(json.dumps(d, ensure_ascii=False)) for d in definitions
    }
    return {
        "system_prompt_tokens": system,
        "system_prompt_chars": len(SYSTEM_PROMPT),
        "tool_schema_tokens": tools,
        "tool_schema_chars": len(schemas),
        "per_tool_tokens": per_tool,
        "system_plus_tools_tokens": system + tools,
        "with_qwen_template_wrapper_tokens": system + tools + wrapper,
        "target_tokens": TARGET_FIXED,
        "meets_target": system + tools <= TARGET_FIXED,
    }


def run_task(server: FakeServer, root: Path, num_ctx_max: int | None) -> dict[str, Any]:
    trajectory = thirty_step_task()
    workspace = write_workspace(Path(tempfile.mkdtemp(dir=root)), trajectory)
    server.load({"mode": "replay", "items": clean_replies(trajectory, "tools")})
    kwargs = (
        {"num_ctx_max": num_ctx_max, "num_ctx_min": min(8192, num_ctx_max)} if (num_ctx_max) else {}
    )
    model = OllamaModel(MODEL, host=server.url, **kwargs)
    log = EventLog()
    agent = Agent(model, workspace, limits=Limits(max_iterations=40))
    agent.bus.subscribe(log)
    result = agent.run(trajectory["task"])
    model.close()
    warnings = [e.message for e in log.events if isinstance(e, Warning)]
    return {"result": result, "log": server.log(), "warnings": warnings}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small-window", type=int, default=4096, help="num_ctx_max to compact")
    args = parser.parse_args(argv)
    tok = Tokenizer()
    root = Path(tempfile.mkdtemp(prefix="lh-prompt-"))
    try:
        with FakeServer() as server:
            normal = run_task(server, root, None)
            small = run_task(server, root, args.small_window)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    requests = chat_requests(normal["log"])
    stats = economy(requests, tok, normal["result"].output)
    last = requests[-1]["body"]
    estimate = estimate_prompt_tokens(last["messages"], last.get("tools"))
    small_requests = chat_requests(small["log"])
    small_stats = economy(small_requests, tok, small["result"].output)
    emit(
        {
            "benchmark": "prompt",
            "machine": machine(),
            "tokenizer": tok.name,
            "fixed_prompt": fixed_prompt(tok),
            "thirty_steps": {
                "status": normal["result"].status,
                "iterations": normal["result"].iterations_used,
                "server_reported_prompt_tokens_total": normal["result"].tokens_in,
                **{k: v for k, v in stats.items() if k != "cache_breaks"},
            },
            "cache": {
                "extends_fraction": stats["cache_extends_fraction"],
                "breaks": stats["cache_breaks"],
                "num_ctx_changes": stats["num_ctx_changes"],
                "note": "Ollama reloads the model, and so loses its prompt cache, whenever "
                "num_ctx changes between requests",
                "target": 1.0,
            },
            "estimate_vs_tokenizer": {
                "localhand_estimate_last_request": estimate,
                "tokenizer_last_request": stats["prompt_tokens_last"],
                "ratio": round(stats["prompt_tokens_last"] / estimate, 2) if estimate else None,
                "note": "localhand sizes num_ctx and decides compaction from its estimate "
                "(character classes, calibrated on this tokenizer; see localhand.run.tokens); "
                "a ratio above 1 means it underestimates",
            },
            "small_window": {
                "num_ctx_max": args.small_window,
                "status": small["result"].status,
                "iterations": small["result"].iterations_used,
                "compaction_warnings": [w for w in small["warnings"] if "compact" in w],
                "extends_fraction": small_stats["cache_extends_fraction"],
                "breaks": small_stats["cache_breaks"],
                "prompt_tokens_total": small_stats["prompt_tokens_total"],
                "prompt_tokens_last": small_stats["prompt_tokens_last"],
            },
        }
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

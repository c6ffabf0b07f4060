"""localhand driven by the shared harness (localhand's own virtual environment)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

_started = time.perf_counter()
from localhand.models.ollama import OllamaModel  # noqa: E402
from localhand.run.agent import Agent  # noqa: E402
from localhand.run.guardrails import Limits  # noqa: E402
from localhand.tools import default_tools  # noqa: E402

IMPORT_S = time.perf_counter() - _started

from _harness import Harness, main  # noqa: E402

MODEL = "qwen3:8b"


def run_job(job: dict[str, Any], harness: Harness) -> tuple[bool, str, str]:
    model = OllamaModel(MODEL, host=harness.url)
    tools = default_tools(job["workspace"])
    execute = tools.execute

    def timed(call: Any) -> Any:  # the time inside the tools, as the peers' harness counts it
        started, cpu = time.perf_counter(), time.process_time()
        try:
            return execute(call)
        finally:
            harness.tool_seconds += time.perf_counter() - started
            harness.tool_cpu_seconds += time.process_time() - cpu

    tools.execute = timed  # type: ignore[method-assign]
    limits = Limits(max_iterations=job["max_steps"])
    agent = Agent(model, job["workspace"], tools=tools, limits=limits)
    try:
        result = agent.run(job["task"])
    finally:
        model.close()
    return result.termination_reason == "final_answer", result.output, result.termination_reason


if __name__ == "__main__":
    sys.exit(main(run_job, IMPORT_S))

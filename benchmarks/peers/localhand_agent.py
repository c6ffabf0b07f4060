"""localhand driven by the shared harness (localhand's own virtual environment).

A job with ``checks`` (the trajectory's, see ``_tasks``) gives them to the Agent as
verification (``FileContains``, ``CommandCheck``), as a user does with ``--verify``: the
Result's status then says whether the work passed them. ``extra`` reports the status, the
checks that failed and the nudges the loop gave (``act_first``: the model answered before
using any tool).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

_started = time.perf_counter()
from localhand import Agent  # noqa: E402
from localhand.events import Nudge  # noqa: E402
from localhand.evidence.verify import CommandCheck, FileContains  # noqa: E402
from localhand.models.ollama import OllamaModel  # noqa: E402
from localhand.prompt.system import NUDGE_NO_ACTION  # noqa: E402
from localhand.run.guardrails import Limits  # noqa: E402
from localhand.tools import default_tools  # noqa: E402

IMPORT_S = time.perf_counter() - _started

from _harness import Harness, main  # noqa: E402

MODEL = "qwen3:8b"


def checks_of(job: dict[str, Any]) -> list[Any]:
    checks: list[Any] = []
    for check in job.get("checks") or []:
        if "command" in check:
            checks.append(CommandCheck(check["command"], timeout_s=60))
        else:
            checks.append(FileContains(check["file"], check["contains"]))
    return checks


def run_job(job: dict[str, Any], harness: Harness) -> tuple[bool, str, str, dict[str, Any]]:
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
    agent = Agent(model, job["workspace"], tools=tools, limits=limits, checks=checks_of(job))
    nudges: list[str] = []
    agent.bus.subscribe(lambda e: nudges.append(e.message) if isinstance(e, Nudge) else None)
    try:
        result = agent.run(job["task"])
    finally:
        model.close()
    extra = {
        "status": result.status,
        "checks_failed": [c.name for c in result.verification if not c.passed],
        "nudges": len(nudges),
        "act_first_nudges": sum(1 for text in nudges if text == NUDGE_NO_ACTION),
    }
    finished = result.termination_reason == "final_answer"
    return finished, result.output, result.termination_reason, extra


if __name__ == "__main__":
    sys.exit(main(run_job, IMPORT_S))

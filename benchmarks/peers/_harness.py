"""The job loop every agent harness shares. Standard library only: it runs inside each
peer's own virtual environment, next to nothing of localhand's.

    python peers/<agent>.py JOBS.json OUT.json

``JOBS.json``: ``{"url", "control", "jobs": [{"id", "task", "workspace", "max_steps",
"load"}]}``. For each job the harness posts ``load`` to the fake server's control port, builds
the agent, runs it on ``task`` in ``workspace`` and writes one result per job to ``OUT.json``:
``{"id", "finished", "output", "error", "wall_s", "cpu_s", "tool_s", "tool_cpu_s", "extra"}``,
plus ``import_s``, the time the agent's package took to import, once. ``extra`` is what the
agent's harness adds (localhand's: the Result's status and the nudges it gave).

``finished`` means the agent ended the run by itself with an answer (not an exception, a step
limit or a guardrail). Whether the work was done is judged from the workspace afterwards.
"""

from __future__ import annotations

import json
import sys
import time
import traceback
import urllib.request
from collections.abc import Callable
from typing import Any

TOOL_NAMES = (
    "read_file",
    "write_file",
    "edit_file",
    "list_directory",
    "search_files",
    "run_command",
)
_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
}


class Harness:
    def __init__(self, spec: dict[str, Any]) -> None:
        self.url: str = spec["url"]
        self.control: str = spec["control"]
        self.definitions: dict[str, dict[str, Any]] = {
            d["function"]["name"]: d["function"] for d in spec.get("definitions") or []
        }
        self.tool_seconds = 0.0
        self.tool_cpu_seconds = 0.0

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        request = urllib.request.Request(
            self.control + path,
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=120) as response:
            return json.loads(response.read())

    def tool(self, workspace: str, name: str, arguments: dict[str, Any]) -> str:
        """Run localhand's tool ``name`` for a peer (same tools, same output), after checking
        the argument types as a plain typed Python function would fail on them."""
        started, cpu = time.perf_counter(), time.process_time()
        try:
            given = {k: v for k, v in arguments.items() if v is not None}
            self._check_types(name, given)
            answer = self.post("/tool", {"workspace": workspace, "name": name, "arguments": given})
            return str(answer["content"])
        finally:
            self.tool_seconds += time.perf_counter() - started
            self.tool_cpu_seconds += time.process_time() - cpu

    def _check_types(self, name: str, arguments: dict[str, Any]) -> None:
        schema = (self.definitions.get(name) or {}).get("parameters") or {}
        for key, value in arguments.items():
            expected = (schema.get("properties") or {}).get(key, {}).get("type")
            allowed = _TYPES.get(expected or "")
            if allowed is None:
                continue
            if isinstance(value, bool) and bool not in allowed:
                ok = False
            else:
                ok = isinstance(value, allowed)
            if not ok:
                raise TypeError(f"{name}() argument {key!r} must be {expected}, got {value!r}")

    def docstring(self, name: str) -> str:
        """The tool's description and Args, as localhand offers them, for frameworks that read
        tool schemas from docstrings."""
        function = self.definitions[name]
        lines = [function["description"], "", "Args:"]
        for key, prop in (function["parameters"].get("properties") or {}).items():
            lines.append(f"    {key}: {prop.get('description', key)}")
        return "\n".join(lines)

    def tool_functions(self, workspace: str) -> list[Callable[..., str]]:
        """The default tools as typed Python functions, as a user of a framework writes them."""
        h = self

        def read_file(path: str, start_line: int | None = None, end_line: int | None = None) -> str:
            return h.tool(
                workspace,
                "read_file",
                {"path": path, "start_line": start_line, "end_line": end_line},
            )

        def write_file(path: str, content: str) -> str:
            return h.tool(workspace, "write_file", {"path": path, "content": content})

        def edit_file(path: str, old_text: str, new_text: str) -> str:
            return h.tool(
                workspace, "edit_file", {"path": path, "old_text": old_text, "new_text": new_text}
            )

        def list_directory(path: str = ".") -> str:
            return h.tool(workspace, "list_directory", {"path": path})

        def search_files(pattern: str, path: str = ".", max_results: int = 50) -> str:
            return h.tool(
                workspace,
                "search_files",
                {"pattern": pattern, "path": path, "max_results": max_results},
            )

        def run_command(command: str, timeout_ms: int = 60000) -> str:
            return h.tool(workspace, "run_command", {"command": command, "timeout_ms": timeout_ms})

        functions = [read_file, write_file, edit_file, list_directory, search_files, run_command]
        for function in functions:
            function.__doc__ = self.docstring(function.__name__)
        return functions


def main(
    run_job: Callable[[dict[str, Any], Harness], tuple[Any, ...]],
    import_seconds: float,
) -> int:
    """``run_job(job, harness) -> (finished, output[, why it stopped[, extra]])``; an
    exception counts as not finished, and says why."""
    jobs_path, out_path = sys.argv[1], sys.argv[2]
    with open(jobs_path, encoding="utf-8") as handle:
        spec = json.load(handle)
    harness = Harness(spec)
    results = []
    for job in spec["jobs"]:
        harness.post("/load", job["load"])
        harness.tool_seconds = harness.tool_cpu_seconds = 0.0
        started, cpu = time.perf_counter(), time.process_time()
        finished, output, error, extra = False, "", None, {}
        try:
            finished, output, *why = run_job(job, harness)
            if why and not finished:
                error = str(why[0])
            if len(why) > 1:
                extra = why[1]
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"[:500]
            if job.get("debug"):
                traceback.print_exc()
        results.append(
            {
                "id": job["id"],
                "finished": bool(finished),
                "output": str(output)[:500],
                "error": error,
                "wall_s": time.perf_counter() - started,
                "cpu_s": time.process_time() - cpu,
                "tool_cpu_s": harness.tool_cpu_seconds,
                "tool_s": harness.tool_seconds,
                "extra": extra,
            }
        )
    with open(out_path, "w", encoding="utf-8") as handle:
        json.dump({"import_s": import_seconds, "results": results}, handle)
    return 0

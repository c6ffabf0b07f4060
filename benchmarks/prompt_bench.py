"""Prompt economy and prompt-cache friendliness of localhand on the scripted 30-step task, and
localhand's token estimate against real tokenizers.

- ``fixed_prompt``: tokens of the system prompt and of the default tools' schemas, both bare
  and as Qwen's chat template wraps the schemas; target: at most 1,200 tokens together.
- ``thirty_steps``: prompt tokens of each request of the 30-step task (as recorded by the
  fake server, rendered the way a Qwen-style template renders them), their growth, the total,
  the final context, "prefill amplification" (total prompt tokens sent / final context), and
  what a server with a warm prompt cache would have to prefill, with and without the reloads.
- ``cache`` (the headline): how many requests **reuse** the server's prompt cache: their
  messages extend the previous request's byte for byte, with identical tools, *and* they ask
  for the same ``num_ctx`` (Ollama reloads the model on any change of ``num_ctx``, and the
  reloaded model prefills the whole prompt again: seconds for an 8B model). The fake server
  counts the loads. Then the breakdown: how many extend the previous request whatever the
  window, and where ``num_ctx`` changed. Also run with a small context window
  (``num_ctx_max`` 4096), where localhand compacts the history: the breaks should be the
  compactions. These figures change when localhand fixes ``num_ctx`` once per run.
- ``skills``: what skills add to the first prompt (docs/skills.md): ``read_skill``'s schema,
  offered only when a skill exists, and the list of skills for 1 to 50 skills with
  200-character descriptions, which stays within its own budget (``LIST_TOKENS``) by cutting
  the longest descriptions; a skill's body costs nothing until ``read_skill`` returns it.
- ``delegate``: what the ``delegate`` tool adds to the first prompt (its schema, docs/delegate.md),
  and what a helper's first request adds to the parent's cached prefix besides the parent's
  reply that called it: the instruction around the task.
- ``jobs``: what background commands add to the first prompt (docs/tools.md): ``run_command``'s
  ``background`` argument and ``wait``'s schema, in every request of a run.
- ``tokens``: counts with every real tokenizer available offline (``_common.tokenizers()``):
  Gemma 3's, which the project's own dependency ships, and, after
  ``python benchmarks/fetch_vocabs.py``, Qwen2/2.5/3's, Llama 3's and Phi-3's vocabularies
  from llama-cpp-python's source distribution. For each, the fixed prompt, the task's first,
  last and total prompt tokens, and localhand's estimate (``localhand.models.tokens``) against the
  tokenizer, on the last request and on several kinds of text: prose (the paragraphs of this
  repository's Markdown), Python source, the same through ``read_file`` (line numbers), JSON
  (tool schemas, the task's tool calls, a Result), and shell output (``git log --stat``,
  ``ls -l``, ``pip list``, unittest's verbose output). A ratio above 1 means localhand
  underestimates (the prompt is longer than it thinks).

Counts of the breakdown use the first tokenizer (Gemma 3's), as in earlier editions. Prints
one JSON object.

    python benchmarks/prompt_bench.py [--small-window 4096]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from _common import (
    MODEL,
    QWEN_TOOLS_HEAD,
    QWEN_TOOLS_TAIL,
    REPO,
    FakeServer,
    Tokenizer,
    chat_requests,
    economy,
    emit,
    machine,
    prompt_tokens,
    tokenizers,
)
from _noisy import clean_replies
from _tasks import thirty_step_task, write_workspace

from localhand import Agent
from localhand.events import EventLog, Warning
from localhand.models.ollama import OllamaModel
from localhand.models.openai_compat import OpenAICompatModel
from localhand.models.tokens import estimate_prompt_tokens, estimate_text_tokens
from localhand.profiles import GENERIC, PROFILES
from localhand.prompt.system import SCHEMA_CALLS, SYSTEM_PROMPT, call_format, system_prompt
from localhand.run.delegate import INSTRUCTION, Delegation
from localhand.run.guardrails import Limits
from localhand.skills import Skill, Skills
from localhand.skills.shelf import LIST_TOKENS
from localhand.tools import default_tools
from localhand.types import ToolCall

TARGET_FIXED = 1350
"""The first prompt's fixed part: 1,200 tokens before background commands, plus what they cost
(run_command's ``background`` and ``wait``: 136 tokens with Gemma 3's tokenizer), rounded."""


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


def per_family(tok: Tokenizer) -> dict[str, Any]:
    """The first prompt (system prompt + the default tools' schemas) each family gets on each
    backend: before issue 33 every family got the native prompt; now one whose calls travel
    as text sees its worked examples written in its own format (``prompt/system.py``)."""
    definitions = default_tools(tempfile.gettempdir()).definitions()
    tools = tok.count("\n".join(json.dumps(d, ensure_ascii=False) for d in definitions))
    before = tok.count(SYSTEM_PROMPT) + tools
    backends = {  # built, never connected: call_format reads the backend's kind and mode
        "ollama": lambda name: OllamaModel(name, host="http://127.0.0.1:9"),
        "llama_server": lambda name: OpenAICompatModel(name, host="http://127.0.0.1:9/v1"),
        "schema_mode": lambda name: OpenAICompatModel(
            name, host="http://127.0.0.1:9/v1", tool_mode="schema"
        ),
    }
    out: dict[str, Any] = {}
    for profile in (*PROFILES, GENERIC):
        name = profile.name
        row: dict[str, Any] = {
            "text_format": profile.text_format,
            "before_tokens": before,
            # what it gets wherever its calls travel as text (a server without tool support,
            # or ``native_tools_* = false`` in its profile)
            "as_text": {
                "calls": profile.text_format,
                "tokens": tok.count(system_prompt(profile.text_format)) + tools,
            },
        }
        for backend, build in backends.items():
            fmt = call_format(build(name), profile)
            row[backend] = {
                "calls": "native" if fmt is None else fmt,
                "tokens": tok.count(system_prompt(fmt)) + tools,
            }
        out[name] = row
    return out


def skills(tok: Tokenizer) -> dict[str, Any]:
    """What skills add to the first prompt: read_skill's schema and the list of N skills."""
    about = "Steps, commands and checks for one kind of task in this project, written down. " * 3

    def shelf(count: int) -> Skills:
        found = [
            Skill(f"skill-{n}", about[:200], "", Path(f"/s/{n}/SKILL.md"), None, False)
            for n in range(count)
        ]
        return Skills(Path(tempfile.gettempdir()), found)

    (tool,) = shelf(1).tools()
    listed = {str(n): tok.count(shelf(n).listing()) for n in (1, 3, 10, 50)}
    return {
        "read_skill_schema_tokens": tok.count(json.dumps(tool.definition(), ensure_ascii=False)),
        "list_tokens_by_skills": listed,
        "list_budget_estimated_tokens": LIST_TOKENS,
        "description_chars": 200,
    }


def delegate(tok: Tokenizer) -> dict[str, Any]:
    """What delegate adds: its schema in every request, the instruction in a helper's first."""
    (tool,) = Delegation(0.5).tools()
    schema = tok.count(json.dumps(tool.definition(), ensure_ascii=False))
    fixed = fixed_prompt(tok)["system_plus_tools_tokens"] + schema  # a run offers it always
    return {
        "delegate_schema_tokens": schema,
        "system_plus_tools_with_delegate_tokens": fixed,
        "meets_target": fixed <= TARGET_FIXED,
        "helper_instruction_tokens_besides_the_task": tok.count(INSTRUCTION.format(task="")),
    }


def jobs(tok: Tokenizer) -> dict[str, Any]:
    """What background commands add to every request (docs/tools.md): ``run_command``'s
    ``background`` argument and ``wait``'s schema, offered from the first request on."""
    tools = {d["function"]["name"]: d for d in default_tools(tempfile.gettempdir()).definitions()}
    argument = tools["run_command"]["function"]["parameters"]["properties"]["background"]
    return {
        "background_argument_tokens": tok.count(json.dumps({"background": argument})),
        "wait_schema_tokens": tok.count(json.dumps(tools["wait"], ensure_ascii=False)),
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
    unittest = subprocess.run(
        [sys.executable, "-m", "unittest", "-v"], cwd=workspace, capture_output=True, text=True
    )
    return {
        "result": result,
        "log": server.log(),
        "warnings": warnings,
        "unittest_output": unittest.stdout + unittest.stderr,
    }


# -- kinds of text ------------------------------------------------------------------------------


def prose() -> str:
    """The paragraphs of this repository's Markdown: no code blocks, tables or headings."""
    paragraphs, fenced = [], False
    for path in sorted([REPO / "README.md", *(REPO / "docs").glob("*.md")]):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith("```"):
                fenced = not fenced
            elif not fenced and re.match(r"[A-Za-z]", line) and "|" not in line:
                paragraphs.append(line)
    return "\n".join(paragraphs)


def shell(command: list[str], cwd: Path = REPO) -> str:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    return done.stdout + done.stderr


def texts(normal: dict[str, Any]) -> dict[str, str]:
    """Samples of each kind of text an agent's prompt is made of."""
    sources = sorted((REPO / "src" / "localhand" / "run").glob("*.py"))
    code = "\n".join(path.read_text(encoding="utf-8") for path in sources)
    registry = default_tools(REPO)
    read = "\n".join(
        registry.execute(ToolCall("read_file", {"path": str(path.relative_to(REPO))})).content
        for path in sources
    )
    requests = chat_requests(normal["log"])
    calls = [
        json.dumps(call["function"], ensure_ascii=False)
        for message in requests[-1]["body"]["messages"]
        for call in message.get("tool_calls") or []
    ]
    definitions = default_tools(tempfile.gettempdir()).definitions()
    json_text = "\n".join(
        [
            *(json.dumps(d, ensure_ascii=False) for d in definitions),
            *calls,
            json.dumps(normal["result"].to_dict(), ensure_ascii=False, indent=2),
        ]
    )
    pip = [sys.executable, "-m", "pip", "list", "--disable-pip-version-check"]
    shell_text = "\n".join(
        [
            shell(["git", "log", "--stat", "-n", "25", "--no-color"]),
            shell(["ls", "-l", "src/localhand", "src/localhand/run", "tests"]),
            shell(pip),
            normal["unittest_output"],
        ]
    )
    return {
        "prose": prose(),
        "python_source": code,
        "read_file_output": read,
        "json": json_text,
        "shell_output": shell_text,
    }


def estimate_table(toks: list[Tokenizer], samples: dict[str, str], last: dict) -> dict:
    """Each tokenizer's count of each sample (and of the last request), localhand's estimate,
    and their ratio (above 1: localhand underestimates)."""
    estimate_last = estimate_prompt_tokens(last["messages"], last.get("tools"))
    table: dict[str, Any] = {}
    for tok in toks:
        rows: dict[str, Any] = {}
        for kind, text in samples.items():
            counted, estimated = tok.count(text), estimate_text_tokens(text)
            rows[kind] = {
                "chars": len(text),
                "tokens": counted,
                "estimate": estimated,
                "ratio": round(counted / estimated, 3),
                "chars_per_token": round(len(text) / counted, 2),
            }
        counted_last = sum(prompt_tokens(last, tok))
        rows["last_request_of_the_task"] = {
            "tokens": counted_last,
            "estimate": estimate_last,
            "ratio": round(counted_last / estimate_last, 3),
        }
        table[tok.name] = rows
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small-window", type=int, default=4096, help="num_ctx_max to compact")
    args = parser.parse_args(argv)
    toks = tokenizers()
    tok = toks[0]
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
    loads = normal["log"].get("loads", [])
    per_tokenizer = {}
    for other in toks:
        counted = economy(requests, other, normal["result"].output)
        per_tokenizer[other.name] = {
            "vocabulary": other.vocabulary,
            "fixed_prompt": {
                k: v
                for k, v in fixed_prompt(other).items()
                if k.endswith("_tokens") and k != "target_tokens"
            },
            "prompt_tokens_first": counted["prompt_tokens_first"],
            "prompt_tokens_last": counted["prompt_tokens_last"],
            "prompt_tokens_total": counted["prompt_tokens_total"],
            "prefill_tokens_with_warm_cache_and_reloads": counted[
                "prefill_tokens_with_warm_cache_and_reloads"
            ],
        }
    emit(
        {
            "benchmark": "prompt",
            "machine": machine(),
            "load_average": os.getloadavg(),
            "tokenizer": tok.name,
            "tokenizers": [t.name for t in toks],
            "cache": {
                "reuse_requests": stats["cache_reuse_requests"],
                "comparable_requests": stats["cache_comparable_requests"],
                "what_reuse_means": "the request extends the previous one byte for byte, with "
                "the same tools and the same num_ctx (no reload)",
                "model_loads_during_the_run": loads,
                "num_ctx_sent": stats["num_ctx_sent"],
                "num_ctx_changes_at_request": stats["num_ctx_changes_at"],
                "extends_fraction": stats["cache_extends_fraction"],
                "breaks": stats["cache_breaks"],
                "prefill_tokens_with_warm_cache_and_reloads": stats[
                    "prefill_tokens_with_warm_cache_and_reloads"
                ],
                "prefill_tokens_with_warm_cache_without_reloads": stats[
                    "prefill_tokens_with_warm_cache"
                ],
                "note": "Ollama reloads the model, and so loses its prompt cache, whenever "
                "num_ctx changes between requests; this changes when num_ctx is fixed per run",
                "target": 1.0,
            },
            "fixed_prompt": fixed_prompt(tok),
            "skills": skills(tok),
            "delegate": delegate(tok),
            "jobs": jobs(tok),
            "first_prompt_per_family": {
                "tokenizer": tok.name,
                "target_tokens": TARGET_FIXED,
                "json_object_format": SCHEMA_CALLS,
                "families": per_family(tok),
            },
            "thirty_steps": {
                "status": normal["result"].status,
                "iterations": normal["result"].iterations_used,
                "server_reported_prompt_tokens_total": normal["result"].tokens_in,
                **{k: v for k, v in stats.items() if k != "cache_breaks"},
            },
            "estimate_vs_tokenizer": {
                "localhand_estimate_last_request": estimate,
                "tokenizer_last_request": stats["prompt_tokens_last"],
                "ratio": round(stats["prompt_tokens_last"] / estimate, 2) if estimate else None,
                "note": "localhand sizes num_ctx and decides compaction from its estimate "
                "(character classes, calibrated on Gemma 3's tokenizer; see "
                "localhand.models.tokens); a ratio above 1 means it underestimates",
            },
            "tokens": {
                "per_tokenizer": per_tokenizer,
                "estimate_by_kind_of_text": estimate_table(toks, texts(normal), last),
            },
            "small_window": {
                "num_ctx_max": args.small_window,
                "status": small["result"].status,
                "iterations": small["result"].iterations_used,
                "compaction_warnings": [w for w in small["warnings"] if "compact" in w],
                "reuse_requests": small_stats["cache_reuse_requests"],
                "extends_fraction": small_stats["cache_extends_fraction"],
                "breaks": small_stats["cache_breaks"],
                "num_ctx_sent": small_stats["num_ctx_sent"],
                "model_loads_during_the_run": small["log"].get("loads", []),
                "prompt_tokens_total": small_stats["prompt_tokens_total"],
                "prompt_tokens_last": small_stats["prompt_tokens_last"],
            },
        }
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

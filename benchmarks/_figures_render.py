"""The generated blocks of the docs, rendered from ``benchmarks/figures.json`` alone.

Every number between ``<!-- figures:NAME -->`` and ``<!-- /figures:NAME -->`` in README.md,
the pages of docs/ and examples/eval/README.md comes from a function here, fed
only the figures file that ``benchmarks/publish.py`` writes. The prose around the blocks stays
hand-written. ``tests/test_publish.py`` re-renders every block from the committed figures file
and compares, so a figure typed by hand into a block fails the test.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

Figures = dict[str, Any]

# Which blocks each file holds: the test and ``publish.py --check`` hold the docs to this list.
BLOCKS: dict[str, tuple[str, ...]] = {
    "README.md": ("compile-time", "tiny-transcript", "qwen3-transcript"),
    "docs/models.md": ("quickstart-rate",),
    "docs/tools.md": ("prompt-differences",),
    "docs/design-differences.md": ("prompt-differences",),
    "docs/benchmarks.md": (
        "machine",
        "headline",
        "in-short",
        "looping",
        "prompt-families",
        "what-is-left",
    ),
    "docs/eval.md": ("eval-chat-format", "eval-tiny"),
    "examples/eval/README.md": ("eval-chat-format",),
}

MARKER = re.compile(
    r"(<!-- figures:(?P<name>[a-z0-9-]+) -->)(?P<body>.*?)"
    r"(<!-- /figures:(?P=name) -->)",
    re.S,
)


def _ms(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:,.0f} ms" if abs(value) >= 100 else f"{value:.1f} ms"


def _median(entry: Any) -> float | None:
    return entry.get("median") if isinstance(entry, dict) else entry


def _load(prov: dict[str, Any]) -> str:
    start = prov.get("load_start")
    if not start:
        return "load not recorded"
    return f"load {start[0]:.1f} at start on {prov['machine'].get('cores', '?')} cores"


def provenance(figures: Figures, group: str) -> str:
    """One line saying where and when a group's figures were measured, or that they were not."""
    prov = figures["groups"][group]["provenance"]
    if prov["how"] == "recorded":
        return f"not re-measured by `benchmarks/publish.py`: {prov['note']}"
    day = prov["date"][:16].replace("T", " ")
    commit = prov["machine"].get("localhand_commit", "?")
    return f"measured {day} UTC, commit `{commit}`, {_load(prov)}"


def machine_line(figures: Figures) -> str:
    m = figures["machine"]
    load = ", ".join(f"{x:.2f}" for x in m["load_start"])
    day = figures["date"][:16].replace("T", " ")
    quick = " (quick mode: fewer rounds, noisier)" if figures.get("quick") else ""
    return (
        f"{m['cpu'] or 'CPU unknown'}, {m['cores']} cores, {m['ram_gib']} GiB RAM, {m['os']}, "
        f"Python {m['python']}; load average {load} (1, 5, 15 min) when "
        f"`benchmarks/publish.py` started at {day} UTC{quick}"
    )


def _timings(f: Figures) -> dict[str, str]:
    """The overhead, start-up and sandbox figures, formatted, under short names."""
    o = f["groups"]["overhead"]["figures"]
    st = f["groups"]["startup"]["figures"]
    s = f["groups"]["sandbox"]["figures"]
    return {
        "iteration": _ms(_median(o["localhand_ms_per_iteration"])),
        "file_tool": _ms(_median(o["iteration_with_a_file_tool_ms"])),
        "command": _ms(_median(o["iteration_with_a_command_ms"])),
        "first_call": _ms(_median(o["first_tool_call_once_ms"])),
        "first_change": _ms(_median(o["first_command_once_ms"])),
        "end": _ms(_median(o["end_of_run_once_ms"])),
        "start_small": _ms(_median(st["small_workspace_first_chat_ms"])),
        "start_git": _ms(_median(st["git_repository_first_chat_ms"])),
        "git_files": f"{st['git_repository_files']:,}",
        "run_command": _ms(s["localhand_adds_ms"]),
        "supervisor": _ms(s["per_command_ms"]["off"] - s["per_command_ms"]["bare_bash"]),
        "sandbox": _ms(s["sandbox_adds_ms"]),
        "no_network": _ms(s["sandbox_without_network_adds_ms"]),
        "probe": _ms(s["probe_ms"]),
    }


def _quickstart_rate(f: Figures) -> str:
    rows = f["groups"]["quickstart"]["figures"]["by_temperature"]
    parts = [
        f"{r['passed']} of {r['runs']} runs over seeds {r['seeds'][0]}–{r['seeds'][-1]} "
        f"at temperature {r['temperature']:g}"
        for r in rows
    ]
    where = provenance(f, "quickstart")
    return "; ".join(parts) + f"; a run uses seed 0 and temperature 0.2 unless told — {where}"


def _compile_time(f: Figures) -> str:
    g = f["groups"]["compile_time"]
    return f"{g['figures']['text']}, {provenance(f, 'compile_time')}"


def _tiny_transcript(f: Figures) -> str:
    return f"\n_That transcript's timings are {provenance(f, 'tiny_transcript')}._\n"


def _qwen3_transcript(f: Figures) -> str:
    return f"\n_That transcript is {provenance(f, 'qwen3_transcript')}._\n"


def _sandbox_sentence(f: Figures) -> str:
    t = _timings(f)
    return (
        f"a `run_command` of `true` costs {t['run_command']} more than `bash -c true` "
        f"(the supervisor process {t['supervisor']}, the sandbox with its network namespace and "
        f"relay {t['sandbox']}, {t['no_network']} with `--no-network`), and the sandbox probe "
        f"{t['probe']} once a run"
    )


def _robustness_sentence(f: Figures) -> str:
    group = f["groups"]["robustness"]["figures"]

    def row(profile: str, verification: bool) -> dict[str, Any]:
        return next(
            r
            for r in group["table"]
            if r["agent"] == "localhand"
            and r["profile"] == profile
            and r["verification"] == verification
        )

    hard, checked = row("format+behaviour", False), row("format+behaviour", True)
    easy = row("format", False)
    caught = checked.get("caught_by_verification", "?")
    # The run with checks is its own replay (the answer check and nudges act on it), so its
    # false finishes are counted apart, not as a share of the run without checks.
    return (
        'when a small model\'s noise includes premature "done" answers, false claims of '
        f"success and wrong edits, {hard['completed_fraction']:.1%} of {group['trajectories']} "
        f"noisy-model tasks complete and **{hard['false_finishes']} finish falsely** "
        f"({hard['false_finishes_work_not_done']} with the work not done); with the task's checks "
        f"as `--verify`, {checked['completed_fraction']:.1%} complete and "
        f"{checked['false_finishes']} finish falsely, {caught} of them reported as not passing. "
        "Under format noise alone "
        f"(broken calls, no bad behaviour) {easy['completed_fraction']:.1%} complete, with "
        f"{easy['false_finishes']} false finishes"
    )


def _prompt_sentence(f: Figures) -> str:
    p = f["groups"]["prompt"]["figures"]
    sizes = sorted(p["system_plus_tools_tokens"].values())
    loads = p["model_loads"]
    names = ", ".join(name.split(" ")[0] for name in sorted(p["system_plus_tools_tokens"]))
    span = f"{sizes[0]:,}" if sizes[0] == sizes[-1] else f"{sizes[0]:,}–{sizes[-1]:,}"
    _, _, low, high = _family_range(f)
    return (
        f"The system prompt and tool schemas are {span} tokens ({names}: the tokenizers present; "
        f"`fetch_vocabs.py` adds Qwen, Llama 3 and Phi-3; target {p['target_tokens']:,}), "
        f"{low:,}–{high:,} for a family whose calls travel as text (its worked examples "
        "written in its own call format); "
        f"{p['cache_reuse_requests']} of {p['cache_comparable_requests']} requests of a 30-step "
        f"run reuse the server's prompt cache, with the model loaded {loads} time"
        + ("s" if loads != 1 else "")
    )


def _in_short(f: Figures) -> str:
    t = _timings(f)
    return (
        f"\nIn short ({machine_line(f)}): `localhand run` adds {t['iteration']} an iteration on a "
        f"30-step task in a git repository, all included: {t['file_tool']} for an iteration with "
        f"a file tool, {t['command']} for one that runs a command, {t['first_call']} once at the "
        "first tool call (it waits for the workspace snapshot taken while the first request went "
        f"out), {t['first_change']} once at the first command (it waits for the project's tests "
        "to be collected, which a model that takes seconds a reply hides: the fake server here "
        f"answers at once) and {t['end']} once at the end (git and the store) "
        f"[{provenance(f, 'overhead')}]. "
        f"The model gets the task {t['start_small']} after `localhand run` in a one-file "
        f"workspace and {t['start_git']} in a {t['git_files']}-file git repository "
        f"[{provenance(f, 'startup')}]. In the sandbox, {_sandbox_sentence(f)} "
        f"[{provenance(f, 'sandbox')}]. {_prompt_sentence(f)} [{provenance(f, 'prompt')}]. "
        f"Robustness: {_robustness_sentence(f)} "
        f"[{provenance(f, 'robustness')}].\n"
    )


def _batch_sentence(f: Figures) -> str:
    b = f["groups"]["batch"]["figures"]
    return (
        f"**{b['efficiency']:.2f}** of the ideal: {b['tasks']} tasks of {b['steps_per_task']} "
        f"model turns at {b['concurrency']} at once on {b['slots']} slots, {b['latency_s']:g} s "
        f"a reply (fake Ollama): {b['tasks_per_minute']:g} tasks a minute of "
        f"{b['ideal_tasks_per_minute']:g}"
    )


def _looping(f: Figures) -> str:
    lo = f["groups"]["looping"]["figures"]
    return (
        f"\nOne looping reply (`looping_reply_bench.py`) costs, at {lo['speed_tokens_per_s']:g} "
        f"tokens/s, {lo['before']:g} s with no ceiling and {lo['ceiling']:g} s with the 4096-token "
        "ceiling (both computed from the fake server's speed and window), "
        f"{lo['watching']:g} s with `--watch-replies` (measured) [{provenance(f, 'looping')}].\n"
    )


def _machine(f: Figures) -> str:
    return f"\nThe figures in the generated blocks below: {machine_line(f)}.\n"


def _headline(f: Figures) -> str:
    t = _timings(f)
    chat = f["groups"]["chat_format"]["figures"]["server_chat_format_without_flag"]
    rows = [
        (
            "`localhand run`, time added per iteration (30-step task, git repository, store)",
            f"**{t['iteration']}**",
            "overhead",
        ),
        (
            "an iteration with a file tool / with a command (beyond the command)",
            f"{t['file_tool']} / {t['command']}",
            "overhead",
        ),
        (
            "the first tool call, once (it waits for the workspace snapshot and the tracker's "
            "first walk, started while the first request went out)",
            t["first_call"],
            "overhead",
        ),
        (
            "the first tool that may change a file, once (it waits for the project's tests to be "
            "collected, `python3 -m pytest --collect-only` in the read-only box, started with the "
            "run: hidden behind the first replies of a model that takes seconds to answer)",
            t["first_change"],
            "overhead",
        ),
        ("the end of the run, once (git snapshot and diff, store, exit)", t["end"], "overhead"),
        (
            f"`localhand run` → first `/api/chat`, one-file workspace / {t['git_files']}-file git "
            "repository",
            f"{t['start_small']} / {t['start_git']}",
            "startup",
        ),
        (
            "`run_command` of `true` beyond `bash -c true` (default sandbox: its own network "
            "namespace, the proxy relay, limits)",
            f"**{t['run_command']}**",
            "sandbox",
        ),
        (
            "of which the sandbox / the sandbox with `--no-network` / the probe once a run",
            f"{t['sandbox']} / {t['no_network']} / {t['probe']}",
            "sandbox",
        ),
        ("Prompt economy and cache reuse", _prompt_sentence(f), "prompt"),
        ("`localhand batch`, throughput", _batch_sentence(f), "batch"),
        ("Robustness, localhand", _robustness_sentence(f), "robustness"),
        ("Quick start with the embedded tiny model", _quickstart_rate(f), None),
        (
            "llama-cpp-python's server, tiny GGUF, no `--chat_format`",
            f"chat format `{chat}`",
            "chat_format",
        ),
    ]
    lines = ["", "| Measure | Figure | Where and when |", "|---|---|---|"]
    for measure, figure, group in rows:
        where = provenance(f, group) if group else "(in the figure)"
        lines.append(f"| {measure} | {figure} | {where} |")
    return "\n".join([*lines, ""])


def _eval_chat_format(f: Figures) -> str:
    c = f["groups"]["chat_format"]["figures"]
    has = "carries a chat template" if c["gguf_has_chat_template"] else "carries no chat template"
    return (
        f"the GGUF ({c['gguf']}) {has}, so llama-cpp-python's server {c['llama_cpp_python']}, "
        "started without `--chat_format`, formats the conversation with "
        f"`{c['server_chat_format_without_flag']}` ({provenance(f, 'chat_format')})"
    )


def _eval_tiny(f: Figures) -> str:
    return f"the report's figures: {provenance(f, 'eval_tiny')}"


def _family_range(f: Figures) -> tuple[int, int, int, int]:
    """The native prompt's tokens, the before figure, and the smallest and largest first
    prompt of a family whose calls travel as text on some backend."""
    families = f["groups"]["prompt"]["figures"]["first_prompt_per_family"]
    native = before = 0
    text = []
    for row in families.values():
        before = row["before_tokens"]
        for backend in ("ollama", "llama_server", "schema_mode", "as_text"):
            cell = row[backend]
            if cell["calls"] == "native":
                native = cell["tokens"]
            else:
                text.append(cell["tokens"])
    return native, before, min(text), max(text)


def _prompt_differences(f: Figures) -> str:
    native, _, low, high = _family_range(f)
    target = f["groups"]["prompt"]["figures"]["target_tokens"]
    return (
        f"{native:,} tokens for a model that calls tools natively, {low:,}–{high:,} for one whose "
        f"calls travel as text, against a {target:,}-token target ({provenance(f, 'prompt')})"
    )


def _prompt_families(f: Figures) -> str:
    p = f["groups"]["prompt"]["figures"]
    native, before, low, high = _family_range(f)

    def cell(entry: dict[str, Any]) -> str:
        calls = entry["calls"]
        return f"{entry['tokens']:,} ({'native' if calls == 'native' else f'`{calls}`'})"

    lines = [
        "",
        f"Before: {before:,} tokens for every family (one prompt, calls named as the native "
        f"interface takes them). After: {native:,} with native calls, {low:,}–{high:,} with the "
        f"calls written as text; target {p['target_tokens']:,} [{provenance(f, 'prompt')}].",
        "",
        "| Profile | Ollama | OpenAI-compatible server (llama-server) | reply constrained to JSON "
        "(embedded, schema mode) | a server that carries no calls (its own format) |",
        "|---|---|---|---|---|",
    ]
    for name, row in p["first_prompt_per_family"].items():
        lines.append(
            f"| {name} | {cell(row['ollama'])} | {cell(row['llama_server'])} | "
            f"{cell(row['schema_mode'])} | {cell(row['as_text'])} |"
        )
    return "\n".join([*lines, ""])


def _what_is_left(f: Figures) -> str:
    t = _timings(f)
    return (
        f"\n- **A command costs {t['run_command']} beyond itself** (the supervisor "
        f"{t['supervisor']}, the sandbox with its network namespace and relay {t['sandbox']}), "
        f"and an iteration that runs a command {t['command']} in the loop "
        f"[{provenance(f, 'sandbox')}; {provenance(f, 'overhead')}]; the target is 10 ms. A "
        "supervisor kept for the run, or one that is not a Python process, would take most of "
        f"it. The end of a run costs {t['end']} (a second snapshot, the diff, the store).\n"
    )


RENDER: dict[str, Callable[[Figures], str]] = {
    "prompt-differences": _prompt_differences,
    "prompt-families": _prompt_families,
    "what-is-left": _what_is_left,
    "eval-tiny": _eval_tiny,
    "looping": _looping,
    "quickstart-rate": _quickstart_rate,
    "compile-time": _compile_time,
    "qwen3-transcript": _qwen3_transcript,
    "tiny-transcript": _tiny_transcript,
    "in-short": _in_short,
    "machine": _machine,
    "headline": _headline,
    "eval-chat-format": _eval_chat_format,
}


def fill(text: str, figures: Figures, where: str) -> str:
    """``text`` with every generated block re-rendered; a block the file should have and lacks,
    or one with an unknown name, is an error naming the file."""
    found = [m["name"] for m in MARKER.finditer(text)]
    wanted = BLOCKS.get(where, ())
    missing = [name for name in wanted if name not in found]
    unknown = [name for name in found if name not in RENDER]
    if missing or unknown:
        raise ValueError(f"{where}: missing blocks {missing}, unknown blocks {unknown}")
    return MARKER.sub(lambda m: m.group(1) + RENDER[m["name"]](figures) + m.group(4), text)

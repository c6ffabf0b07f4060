"""Reproduce every published figure with one command: run the benchmarks, keep their output in
``benchmarks/figures.json`` with the machine, its load and the date, and re-render the generated
blocks of README.md, the pages of docs/ and examples/eval/README.md from it.

    python benchmarks/publish.py            # every measurement (~10 min on 2 shared cores)
    python benchmarks/publish.py --quick    # few rounds, a minute or two; the slow groups
                                            # (robustness, the tiny-model quick start) are kept
                                            # from the figures file with their own date
    python benchmarks/publish.py --only sandbox --only startup   # measure these, keep the rest
    python benchmarks/publish.py --check    # measure nothing: exit 1 if a block differs from
                                            # what the figures file renders, or a figure in
                                            # the docs is in no block and carries no marker
    python benchmarks/publish.py --unmarked # list the figures in README.md, docs/ and examples/
                                            # that no block or marker accounts for

Every group carries its provenance: the command, the machine, the load average at its start and
end, the date, or, for what cannot come from a command here (compile time, a real qwen3:8b
transcript), ``recorded`` with a note saying where and when. The prose is hand-written; only the
blocks between ``<!-- figures:NAME -->`` markers are generated (``_figures_render.py``).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from _common import machine  # noqa: E402
from _figures_check import problems, unaccounted  # noqa: E402
from _figures_render import BLOCKS, fill  # noqa: E402

REPO = BENCH.parent
FIGURES = BENCH / "figures.json"

# name: (script and arguments, the same in quick mode or None to keep the last full figures)
MEASURED: dict[str, tuple[list[str], list[str] | None]] = {
    "sandbox": (["sandbox_bench.py", "--rounds", "40"], ["sandbox_bench.py", "--rounds", "6"]),
    # the command line's figures alone: the in-process ones are not published
    "overhead": (
        ["overhead_bench.py", "--runs", "7", "--cli-only"],
        ["overhead_bench.py", "--runs", "1", "--cli-only"],
    ),
    "startup": (
        ["startup_bench.py", "--runs", "9"],
        ["startup_bench.py", "--runs", "1", "--files", "300"],
    ),
    "chat_format": (["chat_format_check.py"], ["chat_format_check.py"]),
    "prompt": (["prompt_bench.py"], ["prompt_bench.py"]),
    "quickstart": (["quickstart_bench.py", "--seeds", "6", "--temperatures", "0.2,1.0"], None),
    "robustness": (["robustness_bench.py", "--agents", "localhand"], None),
    "looping": (["looping_reply_bench.py"], None),
    # Issue 37's measure: eight 3-step tasks over four slots, against the ideal.
    "batch": (["batch_throughput.py", "--tasks", "8", "--concurrency", "4"],) * 2,
}

# What no command here reproduces: kept as written, with where and when it was measured.
RECORDED: dict[str, dict[str, Any]] = {
    "compile_time": {
        "figures": {"text": "about 6 minutes on two cores"},
        "note": "pip compiling llama-cpp-python 0.3.x on this project's 2-core build machine "
        "(AMD EPYC, virtualised), November 2026",
    },
    "eval_tiny": {
        "figures": {},
        "note": "`localhand eval` of the tiny model on tier 1 (examples/eval/report.json), "
        "2026-11-25, on this project's 2-core machine; it needs a model server, so it is not "
        "part of publish",
    },
    "tiny_transcript": {
        "figures": {},
        "note": "one run of the quick start at the defaults (seed 0, temperature 0.2) on this "
        "project's 2-core machine, November 2026; the pass rate over seeds is measured in "
        "docs/models.md",
    },
    "qwen3_transcript": {
        "figures": {},
        "note": "a run with Ollama and qwen3:8b on a developer's machine with a GPU when the "
        "example was written (November 2026); its timings are that machine's",
    },
}


def machine_now() -> dict[str, Any]:
    """The machine, its memory and OS, and the load average now."""
    ram_kib = 0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                ram_kib = int(line.split()[1])
    except OSError:
        pass
    return {
        **machine(),
        "ram_gib": round(ram_kib / 1024**2, 1),
        "os": f"{platform.system()} {platform.release()}",
        "load_start": [round(x, 2) for x in os.getloadavg()],
    }


def now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def extract(group: str, out: dict[str, Any]) -> dict[str, Any]:
    """The part of a script's JSON that the blocks use (all of it is small except these)."""
    if group == "overhead":
        return out["cli"]
    if group == "startup":
        warm = out["warm_bytecode"]
        return {
            "git_repository_files": out["git_repository_files"],
            "git_repository_first_chat_ms": warm["run_to_first_request_in_git_repository"][
                "ollama"
            ]["first_chat_ms"],
            "small_workspace_first_chat_ms": warm["run_to_first_request"]["ollama"][
                "first_chat_ms"
            ],
        }
    if group == "prompt":
        per = out["tokens"]["per_tokenizer"]
        return {
            "system_plus_tools_tokens": {
                name: t["fixed_prompt"]["system_plus_tools_tokens"] for name, t in per.items()
            },
            "target_tokens": out["fixed_prompt"]["target_tokens"],
            "cache_reuse_requests": out["cache"]["reuse_requests"],
            "cache_comparable_requests": out["cache"]["comparable_requests"],
            "model_loads": len(out["cache"]["model_loads_during_the_run"]),
            "first_prompt_per_family": out["first_prompt_per_family"]["families"],
        }
    if group == "looping":
        return {"speed_tokens_per_s": out["speed_tokens_per_s"], **out["seconds_lost"]}
    if group == "batch":
        (row,) = out["results"]
        return {**out["params"], **row}
    if group == "robustness":
        return {"trajectories": out["trajectories"], "seed": out["seed"], "table": out["table"]}
    return out


def measure(group: str, argv: list[str]) -> dict[str, Any]:
    """Run one benchmark script in a process of its own; its figures and their provenance."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")]),
    }
    started, load = now(), [round(x, 2) for x in os.getloadavg()]
    print(f"publish: {group}: {' '.join(argv)} (load {load[0]})", file=sys.stderr, flush=True)
    done = subprocess.run(
        [sys.executable, str(BENCH / argv[0]), *argv[1:]],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(
            f"publish: {argv[0]} failed (exit {done.returncode}):\n{done.stderr[-2000:]}"
        )
    out = json.loads(done.stdout)
    if "error" in out:
        raise SystemExit(f"publish: {argv[0]}: {out['error']}")
    return {
        "figures": extract(group, out),
        "provenance": {
            "how": "measured",
            "command": "python benchmarks/" + " ".join(argv),
            "date": started,
            "machine": machine(),
            "load_start": load,
            "load_end": [round(x, 2) for x in os.getloadavg()],
        },
    }


def publish(previous: dict[str, Any] | None, quick: bool, only: list[str]) -> dict[str, Any]:
    groups: dict[str, Any] = {}
    for name, (full, fast) in MEASURED.items():
        argv = fast if quick else full
        keep = (only and name not in only) or argv is None
        if keep:
            if previous is None or name not in previous["groups"]:
                raise SystemExit(
                    f"publish: no earlier figures for {name!r} in {FIGURES.name}: "
                    "run it once without --quick or --only"
                )
            groups[name] = previous["groups"][name]
        else:
            assert argv is not None
            groups[name] = measure(name, argv)
    figures = {"date": now(), "quick": quick, "machine": MACHINE_AT_START, "groups": groups}
    return with_recorded(figures)


def with_recorded(figures: dict[str, Any]) -> dict[str, Any]:
    """The figures with the hand-recorded groups as this file states them now."""
    for name, entry in RECORDED.items():
        recorded = {"how": "recorded", "note": entry["note"]}
        figures["groups"][name] = {"figures": entry["figures"], "provenance": recorded}
    return figures


def documents(root: Path) -> list[str]:
    """The docs whose figures must come from here or carry a marker (``_figures_check``): README,
    every page of docs/ and every page under examples/, and any file that holds blocks."""
    pages = [*root.glob("docs/*.md"), *(root / "examples").rglob("*.md")]
    found = {"README.md", *BLOCKS, *(str(p.relative_to(root)) for p in pages)}
    return sorted(found)


def unmarked(figures: dict[str, Any], root: Path) -> list[str]:
    """Every figure in the docs that no block or marker accounts for, and markers that do not
    say when; empty when all is well."""
    return [
        problem
        for relative in documents(root)
        for problem in problems(relative, (root / relative).read_text(), figures)
    ]


def loose_figures(figures: dict[str, Any], root: Path) -> list[str]:
    """The figures of the docs (README.md, docs/, examples/) that no block or marker accounts
    for, one per line, for their owners to mark or move into a block."""
    return [
        f"{relative}:{line}: {fig!r}"
        for relative in documents(root)
        for line, fig in unaccounted((root / relative).read_text(), figures)
    ]


def render(figures: dict[str, Any], root: Path, write: bool) -> list[str]:
    """Re-render every block under ``root``; the files whose blocks differ (written if asked)."""
    stale = []
    for relative in BLOCKS:
        path = root / relative
        text = path.read_text()
        new = fill(text, figures, relative)
        if new != text:
            stale.append(relative)
            if write:
                path.write_text(new)
    return stale


MACHINE_AT_START: dict[str, Any] = {}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few rounds; keep the slow groups")
    parser.add_argument("--only", action="append", default=[], choices=sorted(MEASURED))
    parser.add_argument("--check", action="store_true", help="measure nothing, compare the blocks")
    parser.add_argument("--render", action="store_true", help="measure nothing, rewrite the blocks")
    parser.add_argument(
        "--unmarked",
        action="store_true",
        help="list the figures of the docs that carry no block or marker",
    )
    parser.add_argument("--figures", type=Path, default=FIGURES, help="the figures file")
    parser.add_argument("--root", type=Path, default=REPO, help="where the docs are")
    args = parser.parse_args(argv)
    MACHINE_AT_START.update(machine_now())
    previous = json.loads(args.figures.read_text()) if args.figures.exists() else None
    try:
        if args.check or args.render or args.unmarked:
            if previous is None:
                raise SystemExit(f"publish: {args.figures} does not exist: run publish first")
            if args.unmarked:
                print("\n".join(loose_figures(previous, args.root)))
                return 0
            if args.render:  # a recorded note edited here reaches the figures file too
                previous = with_recorded(previous)
                args.figures.write_text(json.dumps(previous, indent=1, ensure_ascii=False) + "\n")
            stale = render(previous, args.root, write=args.render)
            if args.render:
                return 0
            for relative in stale:
                print(
                    f"publish: {relative}: a generated block differs from {args.figures.name}",
                    file=sys.stderr,
                )
            loose = unmarked(previous, args.root)
            for problem in loose:
                print(f"publish: {problem}", file=sys.stderr)
            return 1 if stale or loose else 0
        figures = publish(previous, args.quick, args.only)
        args.figures.write_text(json.dumps(figures, indent=1, ensure_ascii=False) + "\n")
        for relative in render(figures, args.root, write=True):
            print(f"publish: rewrote the blocks of {relative}", file=sys.stderr)
    except ValueError as wrong:  # a block missing or unknown in a doc
        print(f"publish: {wrong}", file=sys.stderr)
        return 2
    except KeyError as missing:  # a figures file older than the blocks that use it
        print(
            f"publish: {args.figures} has no figure {missing}: run `python benchmarks/publish.py`",
            file=sys.stderr,
        )
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

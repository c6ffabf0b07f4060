"""``localhand batch TASKS.jsonl``: wiring only (see ``localhand.batch``).

Exit code 0 when every task passed, 1 when some ended ``partial_pass`` or ``fail``, 2 when
some ended ``error`` or the batch could not start (with a message saying why), 3 when the
rest passed but some ended ``unverified`` (no checks), 130 on Ctrl-C (run the same command
again to resume).
"""

from __future__ import annotations

from argparse import ArgumentParser, Namespace
from pathlib import Path

from localhand.cli.args import (
    Command,
    add_db_option,
    add_json_option,
    add_pool_options,
    add_sandbox_option,
    console,
    number,
    settings_of,
    stderr,
)
from localhand.cli.continuing import add_output_schema_option, schema_in
from localhand.cli.jsonl import add_jsonl_option, current_stream, print_json, with_jsonl
from localhand.config.options import LOOP, POOL_HOSTS, ModelOptions

POOL_BACKENDS = ("auto", "ollama", "openai")


def batch(args: Namespace) -> int:
    """Run every task of TASKS.jsonl, several at once, on a pool of model servers or on Ray.

    Run the same command again after a crash: finished tasks are skipped, the rest rerun."""
    # Batch mode (the pool, the executors, Rich) loads only for this command: fast start-up.
    from localhand.batch.driver import BatchOptions, run_batch  # not needed to parse the options

    # not needed to parse the options
    from localhand.batch.progress import summary_notes, summary_table, totals_line

    err = stderr()
    stream = current_stream()
    out = err if args.json_output or stream else console(soft_wrap=True)
    options = BatchOptions(
        concurrency=args.concurrency,
        executor=args.executor,
        hosts=args.hosts,
        slots=args.slots,
        state=args.state,
        fresh=args.fresh,
        workdir=args.workdir,
        keep_workspaces=args.keep_workspaces,
        db=args.db,
        ray_address=args.ray_address,
        ray_max_retries=args.ray_max_retries,
        watch=stream.watching if stream else None,
    )
    from localhand.safety.trust.store import never_ask  # not needed to parse the options

    never_ask()  # a batch runs unattended: a changed file is refused, not asked about
    try:
        settings = settings_of(args, sandbox=args.sandbox)
        options.output_schema = schema_in(args.output_schema)
        report = run_batch(
            args.tasks,
            settings,
            options,
            console=err,
            on_result=stream.result if stream else print_json if args.json_output else None,
        )
    except KeyboardInterrupt:
        err.print("[yellow]interrupted[/]: run the same command again to resume the batch")
        return 130
    out.print(summary_table(report.rows))
    for line in summary_notes(report.rows):
        out.print(line)
    out.print(totals_line(report.rows, report.elapsed_s))
    return report.exit_code


def batch_arguments(parser: ArgumentParser) -> None:
    parser.add_argument(
        "tasks",
        type=Path,
        metavar="TASKS.jsonl",
        help="JSONL file: one task per line, task-file fields.",
    )
    add_pool_options(parser, "Tasks")
    ModelOptions.add_to(
        parser,
        LOOP,
        host=POOL_HOSTS,
        model={"help": "Model for tasks that name none, e.g. qwen3:8b."},
        backend={"choices": POOL_BACKENDS, "help": "Server kind of --host endpoints."},
    )
    add_sandbox_option(parser)
    parser.add_argument(
        "--state",
        type=Path,
        metavar="FILE",
        help="Resume state file (default: in localhand's data directory, keyed by TASKS' path).",
    )
    parser.add_argument(
        "--fresh", action="store_true", help="Forget earlier results; run every task again."
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        metavar="DIR",
        help="Where task workspaces are made (default: temp dir).",
    )
    parser.add_argument(
        "--keep-workspaces",
        action="store_true",
        help="Keep each task's workspace afterwards.",
    )
    add_db_option(parser)
    parser.add_argument(
        "--ray-address",
        metavar="HOST:PORT",
        help="Ray cluster, HOST:PORT (default: RAY_ADDRESS or local).",
    )
    parser.add_argument(
        "--ray-max-retries",
        type=number(int, 0),
        default=2,
        metavar="N",
        help="Reruns of a task whose Ray worker or node died (default: %(default)s).",
    )
    add_json_option(parser, "Print each Result as one JSON line on stdout.")
    add_jsonl_option(parser)
    add_output_schema_option(
        parser,
        "A JSON schema the final answer of every task must follow (a task's own "
        "output_schema wins; plan tasks run without it), into each Result's answer_json.",
    )


COMMANDS = {"batch": Command(with_jsonl(batch), batch_arguments)}

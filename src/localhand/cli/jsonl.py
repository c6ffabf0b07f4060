"""``--jsonl``: a run's events as JSON lines on stdout, for scripts and CI.

Every line is one object in schema version ``SCHEMA`` (docs/events.md, "Events as JSON lines")::

    {"schema": 1, "type": "tool_call", "time": 1732755600.1, "run_id": "3f2a...",
     "iteration": 2, "payload": {...}}

``type`` is the event's type (``task_started``, ``model_request``, ``model_reply``,
``tool_call``, ``hook_ran``, ``warning``, ``approval_needed``, ``task_finished``...),
``time`` seconds since the epoch, ``run_id`` the store's id of the run (``localhand show
RUN``; the task id when the run is not recorded), ``iteration`` the model turn the event
belongs to (``null`` outside one) and ``payload`` the rest of the event's fields, ``task_id``
among them. The last line of a run is its Result: ``"type": "result"``, the Result's JSON as
the payload. A new field may be added to a payload within a version; a field removed or
changed in meaning bumps ``schema``.

Nothing else may reach stdout while the stream is on: ``JsonlStream.stdout_kept`` points
``sys.stdout`` at stderr for the run, so a stray print (a library's, a backend's) cannot
break a reader's parse, and the lines go to the real stdout.
"""

from __future__ import annotations

import functools
import json
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import IO, TYPE_CHECKING, Any

from localhand.cli.args import fail

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace

    from localhand.events import Event
    from localhand.store import Store

SCHEMA = 1
"""The version of the line format; see the module docstring for what bumps it."""

RunIdOf = Callable[[str], "str | None"]
"""The store's run id for a task id, when the run is recorded."""


def line(kind: str, time_s: float, run_id: str, iteration: int | None, payload: Any) -> str:
    """One line of the stream (without its newline)."""
    record = {
        "schema": SCHEMA,
        "type": kind,
        "time": time_s,
        "run_id": run_id,
        "iteration": iteration,
        "payload": payload,
    }
    return dumps(record)


def dumps(data: Any) -> str:
    """``data`` as one line of JSON, safe to print on a terminal."""
    text = json.dumps(data, ensure_ascii=False, default=str)
    # JSON escapes the C0 controls but writes DEL and the C1 controls (\x9b is CSI) as they
    # are; as \u escapes they mean the same and do nothing to a terminal.
    return text.translate(_C1_ESCAPES)


_C1_ESCAPES = {code: f"\\u{code:04x}" for code in range(0x7F, 0xA0)}


def print_json(data: Any) -> None:
    """``data`` as one JSON line on stdout: what ``--json`` prints."""
    sys.stdout.write(dumps(data) + "\n")
    sys.stdout.flush()


class JsonlStream:
    """A bus subscriber that writes each event as a line, and ``result`` to end a run.

    Thread-safe: a batch's tasks emit from several threads, and each line is written whole.
    """

    def __init__(self, out: IO[str]) -> None:
        self.out = out
        self.run_id_of: RunIdOf = _unrecorded
        self._known: dict[str, str] = {}
        self._lock = threading.Lock()

    def __call__(self, event: Event) -> None:
        data = event.to_dict()
        kind, time_s = data.pop("type"), data.pop("ts")
        iteration = data.pop("iteration", None)
        run_id = self.run_id(event.task_id)
        self.write(line(kind, time_s, run_id, iteration, data))

    def result(self, result: dict[str, Any]) -> None:
        """The Result of a run, the last line of its stream."""
        task_id = str(result.get("task_id", ""))
        iteration = result.get("iterations_used")
        self.write(line("result", time.time(), self.run_id(task_id), iteration, result))
        self._known.pop(task_id, None)

    def watching(self, store: Store | None) -> JsonlStream:
        """This stream, naming runs by their ids in ``store`` (a batch's, opened in this
        process): ``BatchOptions.watch``."""
        self.run_id_of = _unrecorded if store is None else store.open_run_for
        return self

    def run_id(self, task_id: str) -> str:
        known = self._known.get(task_id)
        if known is None:
            try:
                found = self.run_id_of(task_id)
            except Exception:  # a store that fails here must not stop the run: say the task
                found = None
            if found is None:
                return task_id
            known = self._known[task_id] = found
        return known

    def write(self, text: str) -> None:
        with self._lock:
            try:
                self.out.write(text + "\n")
                self.out.flush()
            except BrokenPipeError:  # the reader left (| head): the run goes on regardless
                pass

    @staticmethod
    @contextmanager
    def stdout_kept() -> Iterator[IO[str]]:
        """For the block, ``sys.stdout`` is stderr; yields the real stdout, for the lines."""
        real = sys.stdout
        sys.stdout = sys.stderr
        try:
            yield real
        finally:
            sys.stdout = real


def _unrecorded(task_id: str) -> None:
    """No run id: the run is not recorded (or not yet)."""


_current: ContextVar[JsonlStream | None] = ContextVar("jsonl_stream", default=None)


def current_stream() -> JsonlStream | None:
    """The stream of the command running with ``--jsonl`` (``with_jsonl``), else None."""
    return _current.get()


def with_jsonl(command: Callable[[Namespace], int]) -> Callable[[Namespace], int]:
    """A command that takes ``--jsonl``: while it runs with it, stdout is the stream's alone
    (``sys.stdout`` is stderr), and ``current_stream`` hands the stream to the command."""

    @functools.wraps(command)
    def run(args: Namespace) -> int:
        if not args.jsonl:
            return command(args)
        if args.json_output:
            fail("--jsonl and --json both print on stdout: give one of them")
        with JsonlStream.stdout_kept() as out:
            token = _current.set(JsonlStream(out))
            try:
                return command(args)
            finally:
                _current.reset(token)

    return run


def add_jsonl_option(parser: ArgumentParser) -> None:
    parser.add_argument(
        "--jsonl",
        action="store_true",
        help="Print every event as one JSON line on stdout, the Result last (schema: "
        "docs/events.md, 'Events as JSON lines'); nothing else goes to stdout. Approvals are "
        "asked on the terminal when there is one, else refused.",
    )

"""What a test runner reported, and whether that is a pass: the evidence of a command check.

``read`` merges what the runners wrote into localhand's folder (``evidence.reporting`` sets
them up) and what ``go test -json`` and cargo's libtest print into one ``Report``; ``judge``
compares it with the tests the check collected on the workspace as it was (``Collected``): a
pass needs tests that ran, none failed, and every test from before run again and passed,
unless the task names it for removal or renaming (docs/safety.md, "Evidence is a report").
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

OK = "passed"
SET_ASIDE = frozenset({"skipped", "xfailed", "xpassed", "deselected"})
"""Outcomes of a test that neither passed nor failed."""
MISSING_SHOWN = 20  # in a check's output; the Result's ``missing`` lists them all


@dataclass(slots=True)
class Report:
    """What the runners of one command reported, merged."""

    runners: list[str] = field(default_factory=list)
    collected: list[str] = field(default_factory=list)
    outcomes: dict[str, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)  # files or modules that failed to collect
    marked: set[str] = field(default_factory=set)  # marked to be skipped or expected to fail
    collect_only: bool = False
    unfinished: list[str] = field(default_factory=list)  # started, never reported

    def add(self, runner: str, data: dict[str, Any]) -> None:
        self.runners.append(runner)
        more = [*data.get("collected", ()), *data.get("outcomes", {})]
        self.collected = list(dict.fromkeys([*self.collected, *more]))
        for name, outcome in data.get("outcomes", {}).items():
            if self.outcomes.get(name) in (None, OK):  # the worst of its runs
                self.outcomes[name] = outcome
        for name in data.get("deselected", ()):
            self.outcomes.setdefault(name, "deselected")
        self.errors += data.get("errors", ())
        self.marked.update(data.get("marked", ()))
        self.collect_only |= bool(data.get("collect_only"))


@dataclass(slots=True)
class Collected:
    """The tests a check collected on the workspace as it was before the run's first change,
    or those of its first run, for runners that cannot list them without running them.
    ``done`` is set once it is known (the baseline's thread)."""

    task: str = ""
    names: list[str] | None = None
    errors: list[str] = field(default_factory=list)
    marked: set[str] = field(default_factory=set)
    done: threading.Event = field(default_factory=threading.Event)

    def record(self) -> dict[str, Any]:
        """What a run that continues this one reuses (``store.lineage``)."""
        return {"names": self.names, "errors": self.errors, "marked": sorted(self.marked)}

    def reuse(self, record: Mapping[str, Any] | None) -> bool:
        """Take the tests the chain's first run collected (``record``), if it collected any."""
        if not record or not record.get("names"):
            return False
        self.names, self.errors = list(record["names"]), list(record.get("errors") or ())
        self.marked = set(record.get("marked") or ())
        return True

    def take(self, report: Report | None, source: str) -> None:
        """Keep what ``report`` collected, unless tests are known already. From a first run,
        a test it set aside (skipped, ignored) counts as marked: it may stay set aside."""
        if report is not None and report.collected and not self.names:
            self.names, self.errors = list(report.collected), list(report.errors)
            self.marked = set(report.marked)
            if source == "first_run":
                self.marked |= {n for n, o in report.outcomes.items() if o in SET_ASIDE}


@dataclass(frozen=True, slots=True)
class Verdict:
    passed: bool
    tests: dict[str, Any] | None
    note: str


def read(folder: Path, output: str, workspace: Path) -> Report | None:
    """Every report in ``folder`` and in ``output``, merged; None when nothing reported."""
    report, started = Report(), set()
    for path in sorted(folder.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            report.unfinished.append(path.name)  # half a report is none
            continue
        if path.name.startswith("started-"):
            started.add(path.name.removeprefix("started-"))
        elif path.name.startswith(("jest-", "vitest-")):
            report.add(path.name.split("-")[0], _jest(data, workspace))
        elif isinstance(data, dict) and data.get("runner") == "node":
            report.add("node", _node(data, workspace))
        elif isinstance(data, dict) and data.get("runner") in ("pytest", "unittest"):
            report.add(data["runner"], data)
    names = {path.name for path in folder.glob("*.json")}
    report.unfinished += sorted(name for name in started if name not in names)
    for runner, parsed in (("go", _go_json(output)), ("cargo", _libtest(output))):
        if parsed is not None:
            report.add(runner, parsed)
    return report if report.runners or report.unfinished else None


def _jest(data: Any, workspace: Path) -> dict[str, Any]:
    """jest's ``--json`` report (vitest's ``json`` reporter writes the same shape)."""
    outcomes: dict[str, str] = {}
    errors = []
    statuses = {"passed": OK, "failed": "failed", "pending": "skipped", "skipped": "skipped",
                "todo": "skipped", "disabled": "skipped"}  # fmt: skip
    for suite in data.get("testResults", ()) if isinstance(data, dict) else ():
        file = _relative(str(suite.get("name", "")), workspace)
        tests = suite.get("assertionResults") or ()
        if suite.get("status") == "failed" and not tests:
            errors.append(file)  # it failed to load: no test of it ran
        for test in tests:
            name = f"{file}::{test.get('fullName') or test.get('title')}"
            outcomes[name] = statuses.get(str(test.get("status")), "failed")
    return {"collected": list(outcomes), "outcomes": outcomes, "errors": errors}


def _node(data: dict[str, Any], workspace: Path) -> dict[str, Any]:
    outcomes = {
        f"{_relative(test.get('file', ''), workspace)}::{test.get('name')}": test.get("outcome")
        for test in data.get("tests", ())
    }
    return {"collected": list(outcomes), "outcomes": outcomes}


_GO_ACTIONS = {"pass": OK, "fail": "failed", "skip": "skipped"}


def _go_json(output: str) -> dict[str, Any] | None:
    """``go test -json``'s events from the output: each test's end, and packages that failed
    with no test of theirs failing (a build that failed)."""
    outcomes: dict[str, str] = {}
    failed_packages = []
    for line in output.splitlines():
        if not line.startswith('{"') or '"Action"' not in line:
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        action, package = event.get("Action"), event.get("Package", "")
        if action not in _GO_ACTIONS:
            continue
        if event.get("Test"):
            outcomes[f"{package}::{event['Test']}"] = _GO_ACTIONS[action]
        elif action == "fail":
            failed_packages.append(package)
    if not outcomes and not failed_packages:
        return None
    errors = [p for p in failed_packages if not any(n.startswith(f"{p}::") for n in outcomes)]
    return {"collected": list(outcomes), "outcomes": outcomes, "errors": errors}


_LIBTEST_LINE = re.compile(r"^test (\S+) \.\.\. (ok|FAILED|ignored)\b", re.MULTILINE)
_LIBTEST_SUMMARY = re.compile(
    r"^test result: (?:ok|FAILED)\. (\d+) passed; (\d+) failed; (\d+) ignored; "
    r"\d+ measured; (\d+) filtered out",
    re.MULTILINE,
)


def _libtest(output: str) -> dict[str, Any] | None:
    """cargo test's libtest lines (``test NAME ... ok``) and summaries (``test result:``);
    a summary's filtered-out tests count as deselected."""
    summaries = _LIBTEST_SUMMARY.findall(output)
    if not summaries:
        return None
    kinds = {"ok": OK, "FAILED": "failed", "ignored": "skipped"}
    outcomes = {name: kinds[kind] for name, kind in _LIBTEST_LINE.findall(output)}
    counted = sum(int(p) + int(f) + int(i) for p, f, i, _ in summaries)
    filtered = sum(int(summary[3]) for summary in summaries)
    return {"collected": list(outcomes), "outcomes": outcomes,
            "errors": ["(tests the output does not name)"] if counted > len(outcomes) else [],
            "deselected": [f"({filtered} filtered out)"] if filtered else []}  # fmt: skip


def _relative(path: str, workspace: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(workspace.resolve()))
    except (ValueError, OSError):
        return path


# -- the verdict ---------------------------------------------------------------------------


def judge(report: Report | None, before: Collected | None, exit_code: int | None) -> Verdict:
    """Whether ``report`` shows a pass against ``before``; None for a check with no report
    that collected no tests before either (its exit code is the evidence)."""
    listed = before.names if before is not None and before.names else []
    if report is None:
        if not listed:
            return Verdict(exit_code == 0, None, "")
        report = Report()  # tests were there before, and now nothing said a word of them
    outcomes = report.outcomes
    counts = {
        "passed": sum(o == OK for o in outcomes.values()),
        "failed": sum(o not in SET_ASIDE and o != OK for o in outcomes.values())
        + len(report.errors),
        "skipped": sum(o in SET_ASIDE for o in outcomes.values()),
    }
    missing = _missing(report, before)
    tests = {"collected_before": len(listed), "collected_after": len(report.collected), **counts,
             "missing": missing}  # fmt: skip
    why = _why_not(report, counts, missing, exit_code)
    words = evidence_words({"evidence": "report", "tests": {**tests, "missing": []}})
    return Verdict(
        why is None, tests, f"[localhand: {words}" + (f"; not a pass: {why}]" if why else "]")
    )


def _why_not(
    report: Report, counts: dict[str, int], missing: list[str], exit_code: int | None
) -> str | None:
    if report.unfinished:
        return "the test runner ended before it reported (something exited the process)"
    if report.collect_only:
        return "the tests were only collected, not run"
    if report.errors:
        return f"{len(report.errors)} test file(s) failed to collect: {', '.join(report.errors)}"
    if not report.collected:
        return "no test was collected"
    if counts["failed"]:
        return f"{counts['failed']} test(s) failed"
    if missing:
        shown = ", ".join(missing[:MISSING_SHOWN])
        more = f" and {len(missing) - MISSING_SHOWN} more" if len(missing) > MISSING_SHOWN else ""
        return f"tests from before the run did not run and pass: {shown}{more}"
    if not counts["passed"]:
        return "no test passed"
    if exit_code != 0:
        return f"the command exited with {exit_code}"
    return None


def _missing(report: Report, before: Collected | None) -> list[str]:
    """The tests collected before the run that did not pass now (a test marked before to be
    skipped may be skipped still), and the files that failed to collect before and have no
    passing test now; less those the task names for removal or renaming."""
    if before is None or not before.names:
        return []
    outcomes = report.outcomes
    gone = [
        name
        for name in before.names
        if outcomes.get(name) != OK
        and not (name in before.marked and outcomes.get(name) in SET_ASIDE)
    ]
    gone += [
        file
        for file in before.errors
        if not any(_in_file(name, file) and o == OK for name, o in outcomes.items())
    ]
    excused = _named_for_removal(before.task)
    return [name for name in gone if not excused & _words_of(name)]


def _in_file(name: str, file: str) -> bool:
    return name.startswith((f"{file}::", f"{file}."))


_REMOVAL = re.compile(r"\b(?:remov|delet|renam)\w*", re.IGNORECASE)


def _named_for_removal(task: str) -> set[str]:
    """The words of the task's sentences that ask to remove, delete or rename something."""
    words: set[str] = set()
    for sentence in re.split(r"(?<=[.!?])\s+|\n", task):
        if _REMOVAL.search(sentence):
            words.update(w.rstrip(".") for w in re.findall(r"[\w./-]+", sentence))
    return words


def _words_of(name: str) -> set[str]:
    """How a task may name a test: its file (path, name, stem), or its function."""
    file, _, rest = name.partition("::")
    words = {file, os.path.basename(file), Path(file).stem}
    if rest:
        words.add(re.sub(r"\[.*\]$", "", rest.split("::")[-1]))
    else:  # unittest: package.module.Class.method: the module and the method
        parts = file.split(".")
        module = parts[-3] if len(parts) > 2 else parts[0]
        words = {parts[-1], module, f"{module}.py", ".".join(parts[:-2]).replace(".", "/") + ".py"}
    return words - {""}


def evidence_words(check: Mapping[str, Any]) -> str:
    """What a check's verdict rests on, for a person: ``report: 12 passed, 0 failed`` (and
    what was skipped or missing), ``exit code only``, or nothing for a check of files."""
    tests = check.get("tests")
    if check.get("evidence") == "report" and isinstance(tests, dict):
        words = f"report: {tests.get('passed', 0)} passed, {tests.get('failed', 0)} failed"
        if tests.get("skipped"):
            words += f", {tests['skipped']} skipped"
        if tests.get("missing"):
            words += f", {len(tests['missing'])} missing of {tests.get('collected_before')}"
        return words
    return "exit code only" if check.get("evidence") == "exit_code" else ""


def run_evidence(result: Mapping[str, Any]) -> str | None:
    """What a run's command checks rested on: ``report`` when each read a runner's report,
    ``exit_code`` when some had only an exit code, None with no command check (or a Result
    from before localhand read reports)."""
    kinds = {c.get("evidence") for c in result.get("verification") or () if isinstance(c, dict)}
    return "exit_code" if "exit_code" in kinds else "report" if "report" in kinds else None

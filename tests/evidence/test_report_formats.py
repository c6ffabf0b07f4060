"""The runners localhand reads but this machine lacks (go, cargo, jest, vitest), from their
recorded output: ``go test -json``'s events, libtest's lines, jest's ``--json`` report (vitest
writes the same). And ``npm test`` that starts jest directly gets ``--json --outputFile``."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest

from localhand.evidence.reports import Collected, evidence_words, judge, read, run_evidence
from localhand.evidence.verify import CommandCheck

GO_JSON = "\n".join(
    json.dumps(event)
    for event in [
        {"Action": "start", "Package": "example.com/calc"},
        {"Action": "run", "Package": "example.com/calc", "Test": "TestAdd"},
        {"Action": "output", "Package": "example.com/calc", "Test": "TestAdd",
         "Output": "=== RUN   TestAdd\n"},
        {"Action": "pass", "Package": "example.com/calc", "Test": "TestAdd", "Elapsed": 0},
        {"Action": "run", "Package": "example.com/calc", "Test": "TestZero"},
        {"Action": "fail", "Package": "example.com/calc", "Test": "TestZero", "Elapsed": 0},
        {"Action": "skip", "Package": "example.com/calc", "Test": "TestSlow", "Elapsed": 0},
        {"Action": "fail", "Package": "example.com/calc", "Elapsed": 0.01},
        {"Action": "output", "Package": "example.com/broken",
         "Output": "# example.com/broken\nbroken.go:3:1: syntax error\n"},
        {"Action": "fail", "Package": "example.com/broken", "Elapsed": 0},
    ]
)  # fmt: skip

CARGO = textwrap.dedent(
    """\
       Compiling calc v0.1.0 (/work/calc)
        Finished test [unoptimized + debuginfo] target(s) in 0.50s
         Running unittests src/lib.rs (target/debug/deps/calc-1234)

    running 3 tests
    test tests::adds ... ok
    test tests::zero ... FAILED
    test tests::slow ... ignored

    failures:

    ---- tests::zero stdout ----
    thread 'tests::zero' panicked at src/lib.rs:12:9

    test result: FAILED. 1 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0s
    """
)

JEST = {
    "numTotalTests": 3,
    "success": False,
    "testResults": [
        {
            "name": "{root}/calc.test.js",
            "status": "failed",
            "assertionResults": [
                {"fullName": "add adds", "title": "adds", "status": "passed"},
                {"fullName": "add zero", "title": "zero", "status": "failed"},
                {"fullName": "add later", "title": "later", "status": "pending"},
            ],
        },
        {"name": "{root}/broken.test.js", "status": "failed", "assertionResults": []},
    ],
}


def test_go_test_json_events_from_the_output(tmp_path: Path) -> None:
    report = read(tmp_path, "noise before\n" + GO_JSON, tmp_path)
    assert report is not None and report.runners == ["go"]
    assert report.outcomes == {
        "example.com/calc::TestAdd": "passed",
        "example.com/calc::TestZero": "failed",
        "example.com/calc::TestSlow": "skipped",
    }
    assert report.errors == ["example.com/broken"], "a package that failed with no test failing"
    verdict = judge(report, None, 1)
    assert not verdict.passed and verdict.tests is not None
    assert (verdict.tests["passed"], verdict.tests["failed"], verdict.tests["skipped"]) == (1, 2, 1)

    zero = '\n{"Action": "run", "Package": "example.com/calc", "Test": "TestZero"'
    passing = GO_JSON.split(zero)[0]
    assert judge(read(tmp_path, passing, tmp_path), None, 0).passed


def test_cargo_libtest_lines_from_the_output(tmp_path: Path) -> None:
    report = read(tmp_path, CARGO, tmp_path)
    assert report is not None and report.runners == ["cargo"]
    assert report.outcomes == {"tests::adds": "passed", "tests::zero": "failed",
                               "tests::slow": "skipped"}  # fmt: skip
    assert not judge(report, None, 101).passed

    fixed = CARGO.replace("zero ... FAILED", "zero ... ok").replace(
        "FAILED. 1 passed; 1 failed", "ok. 2 passed; 0 failed"
    )
    assert judge(read(tmp_path, fixed, tmp_path), None, 0).passed
    filtered = fixed.replace("0 filtered out", "4 filtered out")
    verdict = judge(read(tmp_path, filtered, tmp_path), None, 0)
    assert verdict.passed and verdict.tests is not None and verdict.tests["skipped"] == 2

    before = Collected(names=["tests::adds", "tests::zero", "tests::slow"], marked=set())
    dropped = fixed.replace("test tests::zero ... ok\n", "").replace("2 passed", "1 passed")
    missing = judge(read(tmp_path, dropped, tmp_path), before, 0)
    assert not missing.passed and missing.tests is not None
    assert missing.tests["missing"] == ["tests::zero", "tests::slow"]


def test_a_libtest_summary_that_counts_tests_the_output_does_not_name_fails(
    tmp_path: Path,
) -> None:
    only_summary = "test result: ok. 5 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n"
    verdict = judge(read(tmp_path, only_summary, tmp_path), None, 0)
    assert not verdict.passed, "five passes that no line names are no evidence of a test"


def test_jests_json_report(tmp_path: Path) -> None:
    data = json.loads(json.dumps(JEST).replace("{root}", str(tmp_path)))
    (tmp_path / "jest-report.json").write_text(json.dumps(data))
    report = read(tmp_path, "", tmp_path)
    assert report is not None and report.runners == ["jest"]
    assert report.outcomes == {"calc.test.js::add adds": "passed",
                               "calc.test.js::add zero": "failed",
                               "calc.test.js::add later": "skipped"}  # fmt: skip
    assert report.errors == ["broken.test.js"], "a suite that failed to load"
    assert not judge(report, None, 1).passed


def test_npm_test_that_starts_jest_gets_its_json_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stand-in ``jest`` in ``node_modules/.bin`` that writes the recorded report where
    ``--outputFile`` says: the flags reach it through ``npm test``."""
    monkeypatch.setenv("npm_config_update_notifier", "false")  # npm asks its registry else
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed")
    (tmp_path / "package.json").write_text(json.dumps({"scripts": {"test": "jest --ci"}}))
    bin_dir = tmp_path / "node_modules" / ".bin"
    bin_dir.mkdir(parents=True)
    passing = {"testResults": [{"name": f"{tmp_path}/calc.test.js", "status": "passed",
               "assertionResults": [{"fullName": "add adds", "status": "passed"}]}]}  # fmt: skip
    (tmp_path / "recorded.json").write_text(json.dumps(passing))
    (bin_dir / "jest").write_text(textwrap.dedent(
        """\
        #!/bin/sh
        for arg in "$@"; do
          case "$arg" in --outputFile=*) cp recorded.json "${arg#--outputFile=}" ;; esac
        done
        echo "jest ran with: $*"
        """
    ))  # fmt: skip
    (bin_dir / "jest").chmod(0o755)
    result = CommandCheck("npm test").run(tmp_path)
    assert result.passed and result.evidence == "report", result.output_tail
    assert "--json --outputFile=" in result.output_tail, "the command as it ran is shown"
    assert result.tests is not None and result.tests["passed"] == 1


def test_evidence_in_words() -> None:
    tests = {"collected_before": 3, "collected_after": 2, "passed": 2, "failed": 0,
             "skipped": 1, "missing": ["t::gone"]}  # fmt: skip
    assert evidence_words({"evidence": "report", "tests": tests}) == (
        "report: 2 passed, 0 failed, 1 skipped, 1 missing of 3"
    )
    assert evidence_words({"evidence": "exit_code", "tests": None}) == "exit code only"
    assert evidence_words({"name": "file exists: a"}) == "", "a check of files says nothing"
    assert run_evidence({"verification": [{"evidence": "report"}, {"evidence": None}]}) == "report"
    assert run_evidence({"verification": [{"evidence": "report"}, {"evidence": "exit_code"}]}) == (
        "exit_code"
    )
    assert run_evidence({"verification": [{"name": "older record"}]}) is None

"""``localhand eval`` end to end: the command against the fake Ollama server (real HTTP, the
real batch, loop, plan mode and run store), with a scripted good model and a scripted bad
model, and each figure of the report checked against what the script made them do."""

from __future__ import annotations

import contextlib
import io
import json
import math
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from localhand.cli import main
from localhand.testing import FakeOllama, Fault

GOOD, BAD = "good:1b", "bad:1b"
MODELS = {GOOD: {}, BAD: {}}
HANG_S = 1.2
"""The good model's first reply to write-b, first repeat, comes this late: its time to first
token is measured from the stream."""


def make_suite(root: Path) -> Path:
    """Three tasks: one file to write (tier 1), two files (tier 2), a plan whose first step
    fails until out/ exists (tier 2)."""
    (root / "ws").mkdir(parents=True)
    (root / "ws" / "README.md").write_text("# A workspace\n")
    (root / "tier1").mkdir()
    (root / "tier2").mkdir()
    (root / "plans").mkdir()
    (root / "suite.yaml").write_text("name: mini\ntiers: {1: one file, 2: two files}\n")
    (root / "tier1" / "write-a.yaml").write_text(
        "description: Write a.txt containing alpha\nworkspace: ../ws\nagentic: true\n"
        "verify:\n  - {file_contains: {path: a.txt, text: alpha}}\n"
    )
    (root / "tier2" / "write-b.yaml").write_text(
        "description: Write b.txt containing beta, and c.txt\nworkspace: ../ws\nagentic: true\n"
        "verify:\n  - {file_contains: {path: b.txt, text: beta}}\n  - {file_exists: c.txt}\n"
    )
    (root / "tier2" / "plan-out.yaml").write_text(
        "description: Make out/x\nplan: ../plans/out.yaml\nmode: agentic\nworkspace: ../ws\n"
    )
    (root / "plans" / "out.yaml").write_text(
        "goal: Make out/x\nsteps:\n"
        "  - {id: touch, description: make out/x, command: touch out/x}\n"
        "  - {id: check-out, description: check, command: test -f out/x}\n"
    )
    return root


def tool_call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"content": "", "tool_calls": [{"function": {"name": name, "arguments": arguments}}]}


BROKEN = (
    '<tool_call>{"name": "write_file", "arguments": {"path": "a.txt", "content": }}</tool_call>'
)
FIXED = json.dumps({"name": "write_file", "arguments": {"path": "a.txt", "content": "alpha"}})
INSERT = json.dumps(
    {
        "action": "insert_steps",
        "reason": "out/ is missing",
        "new_steps": [{"description": "make out/", "command": "mkdir -p out"}],
    }
)
ABORT = json.dumps({"action": "abort", "reason": "no idea"})


def prompt_tokens(turn: int) -> int:
    """The prompt tokens the fake reports for the ``turn``-th request of a conversation (from
    0): it grows as the history does."""
    return 100 * (turn + 1)


REPLY_TOKENS = 10


class Script:
    """Both models, as a function of the request. Each conversation's turn is the number of
    assistant messages in it; which repeat it is, the number of conversations of that task the
    model began before (the batch runs one task at a time, in order)."""

    def __init__(self, good_fails_a: bool = False) -> None:
        self.started: Counter[tuple[str, str]] = Counter()
        self.good_fails_a = good_fails_a

    def __call__(self, body: dict[str, Any]) -> Any:
        model, messages = body["model"], body["messages"]
        fmt = body.get("format")
        if isinstance(fmt, dict) and "action" in json.dumps(fmt):  # plan mode's diagnosis
            return self.account(INSERT if model == GOOD else ABORT, 0)
        if not any(m["role"] == "user" for m in messages):
            return "a summary"  # plan mode's rolling memory
        user = next(m["content"] for m in messages if m["role"] == "user")
        task = "a" if "Write a.txt" in user else "b"
        turn = sum(1 for m in messages if m["role"] == "assistant")
        if turn == 0 and not fmt:
            self.started[model, task] += 1
        repeat = self.started[model, task]
        reply = (self.good if model == GOOD else self.bad)(task, turn, repeat, fmt)
        if model == GOOD and task == "b" and turn == 0 and repeat == 1:
            return Fault.hang(HANG_S, then=self.account(reply, turn))
        return self.account(reply, turn)

    def good(self, task: str, turn: int, repeat: int, fmt: Any) -> Any:
        if task == "a" and self.good_fails_a:
            return tool_call("read_file", path="README.md")
        if task == "a" and repeat == 1:  # a broken call, put right when constrained
            return [BROKEN if not fmt else FIXED, "Wrote a.txt."][turn]
        if task == "a":  # an empty reply first: nudged
            return ["", tool_call("write_file", path="a.txt", content="alpha"), "Done."][turn]
        steps = [
            tool_call("write_file", path="b.txt", content="beta"),
            tool_call("write_file", path="c.txt", content="c"),
            "Done.",
        ]
        return steps[turn]

    def bad(self, task: str, turn: int, repeat: int, fmt: Any) -> Any:
        if task == "a":  # the same call until the repetition guardrail stops it
            return tool_call("read_file", path="README.md")
        if repeat == 1:  # nothing usable until the nudges run out
            return ""
        # Done too soon: told that c.txt is missing, it says so again, and the answer is taken.
        return [tool_call("write_file", path="b.txt", content="beta"), "Done.", "Done."][turn]

    @staticmethod
    def account(reply: Any, turn: int) -> dict[str, Any]:
        message = {"content": reply} if isinstance(reply, str) else dict(reply)
        return {**message, "prompt_eval_count": prompt_tokens(turn), "eval_count": REPLY_TOKENS}


# -- running the command ------------------------------------------------------------------------


def run_cli(*args: str) -> tuple[int, str, str]:
    """``localhand ARGS`` in this process: exit code, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def eval_both(suite: Path, server: FakeOllama, out: Path, db: Path) -> tuple[str, ...]:
    """The arguments of ``localhand eval`` of both models, twice each, on ``server``."""
    return (
        *("eval", str(suite), "--model", GOOD, "--model", BAD, "--host", server.url),
        *("--repeat", "2", "--out", str(out), "--db", str(db)),
    )


class Evaluated:
    """One eval of both models, twice each, kept for the module's tests."""

    def __init__(self, root: Path, server: FakeOllama) -> None:
        self.root, self.server = root, server
        self.suite = make_suite(root / "suite")
        self.out, self.db = root / "out", root / "runs.db"
        self.args = (*eval_both(self.suite, server, self.out, self.db), "--json")
        self.code, self.stdout, self.stderr = run_cli(*self.args)
        self.report = json.loads((self.out / "report.json").read_text())
        state = (self.out / "batch.state").read_text().splitlines()
        self.state = [json.loads(line) for line in state]

    def run(self, model: str, task: str, repeat: int) -> dict[str, Any]:
        (found,) = [
            r
            for r in self.report["runs"]
            if (r["model"], r["task"], r["repeat"]) == (model, task, repeat)
        ]
        return found

    def model(self, name: str) -> dict[str, Any]:
        (found,) = [m for m in self.report["models"] if m["model"] == name]
        return found


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Evaluated]:
    root = tmp_path_factory.mktemp("eval")
    with pytest.MonkeyPatch.context() as patch:  # the test-wide isolation is per test: redo it
        patch.setenv("LOCALHAND_HOME", str(root / "home"))
        patch.setenv("LOCALHAND_DB", str(root / "runs.db"))
        for var in ("OLLAMA_HOST", "LOCALHAND_MODEL", "LOCALHAND_BACKEND", "LOCALHAND_CONFIG"):
            patch.delenv(var, raising=False)
        with FakeOllama([Script()] * 500, models=MODELS) as server:
            yield Evaluated(root, server)


# What each run did, by the script: status, termination, iterations, and its requests as the
# turn of each (``c``: the constrained retry of the broken call before it).
RUNS: dict[tuple[str, str, int], tuple[str, str, int, list[str]]] = {
    (GOOD, "write-a", 1): ("pass", "final_answer", 2, ["0", "0c", "1"]),
    (GOOD, "write-a", 2): ("pass", "final_answer", 3, ["0", "1", "2"]),
    (GOOD, "write-b", 1): ("pass", "final_answer", 3, ["0", "1", "2"]),
    (GOOD, "write-b", 2): ("pass", "final_answer", 3, ["0", "1", "2"]),
    (GOOD, "plan-out", 1): ("pass", "completed", 1, ["0"]),
    (GOOD, "plan-out", 2): ("pass", "completed", 1, ["0"]),
    (BAD, "write-a", 1): ("fail", "repetition", 3, ["0", "1", "2"]),
    (BAD, "write-a", 2): ("fail", "repetition", 3, ["0", "1", "2"]),
    (BAD, "write-b", 1): ("fail", "nudge_exhausted", 3, ["0", "1", "2"]),
    (BAD, "write-b", 2): ("partial_pass", "final_answer", 3, ["0", "1", "2"]),
    (BAD, "plan-out", 1): ("fail", "aborted", 1, ["0"]),
    (BAD, "plan-out", 2): ("fail", "aborted", 1, ["0"]),
}
NUDGES = {(GOOD, "write-a", 2): 1, (BAD, "write-b", 1): 2, (BAD, "write-b", 2): 1}
GUARDRAILS = {
    (BAD, "write-a", 1): {"repetition": 1},
    (BAD, "write-a", 2): {"repetition": 1},
    (BAD, "write-b", 1): {"nudges": 1},
}


def test_the_command_writes_the_json_and_html_reports_and_prints_the_tables(
    evaluated: Evaluated,
) -> None:
    assert evaluated.code == 0, evaluated.stderr
    assert json.loads(evaluated.stdout) == evaluated.report  # --json: the report on stdout
    html = (evaluated.out / "report.html").read_text()
    assert 'id="eval-report"' in html and "<svg" in html and GOOD in html
    # With --json the tables go to stderr, after the batch's progress lines.
    assert "PASS (95% CI)" in evaluated.stderr and "REUSE" in evaluated.stderr
    assert str(evaluated.out / "report.html") in evaluated.stderr
    assert evaluated.report["suite"]["name"] == "mini"
    assert [t["id"] for t in evaluated.report["suite"]["tasks"]] == [
        "write-a",
        "plan-out",
        "write-b",
    ]
    assert evaluated.report["settings"]["repeat"] == 2
    assert evaluated.report["settings"]["hosts"] == [evaluated.server.url]
    assert evaluated.report["resumed"] == 0


def test_each_run_s_figures_are_what_the_script_made_the_model_do(evaluated: Evaluated) -> None:
    assert len(evaluated.report["runs"]) == len(RUNS) == 12
    for key, (status, reason, iterations, turns) in RUNS.items():
        run = evaluated.run(*key)
        plan = key[1] == "plan-out"
        assert (run["status"], run["termination_reason"], run["iterations"]) == (
            status,
            reason,
            iterations,
        ), key
        prompts = [100 * (int(t[0]) + 1) for t in turns]
        assert (run["tokens_in"], run["tokens_out"]) == (sum(prompts), 10 * len(turns)), key
        assert run["requests"] == len(turns), key
        assert run["constrained"] == (None if plan else sum(t.endswith("c") for t in turns)), key
        assert run["nudges"] == NUDGES.get(key, 0), key
        assert run["guardrails"] == GUARDRAILS.get(key, {}), key
        assert len(run["ttft_s"]) == len(turns), key
        if plan:
            assert run["prompt_tokens"] is None and run["reusable_tokens"] is None
        else:  # each request after the first repeats the one before, unless constrained
            reusable = sum(
                min(a, b)
                for a, b, ta, tb in zip(prompts, prompts[1:], turns, turns[1:], strict=False)
                if not ta.endswith("c") and not tb.endswith("c")
            )
            assert (run["prompt_tokens"], run["reusable_tokens"]) == (sum(prompts), reusable)
    hung = evaluated.run(GOOD, "write-b", 1)["ttft_s"][0]
    assert HANG_S <= hung < HANG_S + 1, "the first token came after the server's delay"


def test_the_runs_match_the_batch_state_the_store_and_what_the_server_was_asked(
    evaluated: Evaluated,
) -> None:
    from localhand.store import Store

    state = {record["id"]: record["result"] for record in evaluated.state}
    with Store(evaluated.db) as store:
        for run in evaluated.report["runs"]:
            result = state[run["id"]]
            assert run["duration_s"] == round(result["duration_s"], 3)
            assert run["result_status"] == result["status"]
            (newest,) = store.runs(limit=1, task_id=run["id"])
            assert run["run_id"] == newest.id and newest.result == result
            progress = store.events(newest.id, types=("model_progress",))
            assert run["ttft_exact"] == len({e.data["iteration"] for e in progress})
    chats = [r.body for r in evaluated.server.chat_requests if r.body.get("messages")]
    for name in (GOOD, BAD):
        mine = [body for body in chats if body["model"] == name]
        assert evaluated.model(name)["requests"] == len(mine)
        retries = [b for b in mine if b.get("format") and "action" not in json.dumps(b["format"])]
        assert evaluated.model(name)["constrained"]["total"] == len(retries)


def test_each_model_s_rates_have_their_wilson_intervals(evaluated: Evaluated) -> None:
    good, bad = evaluated.model(GOOD), evaluated.model(BAD)
    assert good["counts"] == {"pass": 6, "unverified": 0, "partial_pass": 0, "fail": 0, "error": 0}
    assert bad["counts"] == {"pass": 0, "unverified": 0, "partial_pass": 1, "fail": 5, "error": 0}
    # 6 of 6: [n / (n + z^2), 1]; 0 of 6: [0, z^2 / (n + z^2)]; 1 of 6 and 5 of 6 as tabled.
    assert good["rates"]["pass"] == {"k": 6, "n": 6, "rate": 1.0, "low": 0.6097, "high": 1.0}
    assert bad["rates"]["pass"] == {"k": 0, "n": 6, "rate": 0.0, "low": 0.0, "high": 0.3903}
    assert bad["rates"]["partial_pass"] == {
        "k": 1,
        "n": 6,
        "rate": 0.1667,
        "low": 0.0301,
        "high": 0.5635,
    }
    assert bad["rates"]["fail"] == {"k": 5, "n": 6, "rate": 0.8333, "low": 0.4365, "high": 0.9699}
    assert good["tiers"] == {
        "1": {"runs": 2, "pass": {"k": 2, "n": 2, "rate": 1.0, "low": 0.3424, "high": 1.0}},
        "2": {"runs": 4, "pass": {"k": 4, "n": 4, "rate": 1.0, "low": 0.5101, "high": 1.0}},
    }
    assert bad["tiers"]["1"]["pass"]["high"] == 0.6576


def test_each_model_s_costs_and_behaviour(evaluated: Evaluated) -> None:
    import statistics

    good, bad = evaluated.model(GOOD), evaluated.model(BAD)
    # Iterations: good 2, 3, 3, 3, 1, 1; bad 3, 3, 3, 3, 1, 1.
    assert (good["median_iterations"], bad["median_iterations"]) == (2.5, 3.0)
    # Tokens per run: good 430, 630, 630, 630, 110, 110; bad 630, 630, 630, 630, 110, 110.
    assert good["tokens"] | {"out_per_s": None} == {
        "median_per_run": 530,
        "in": 2400,
        "out": 140,
        "out_per_s": None,
    }
    assert (bad["tokens"]["median_per_run"], bad["tokens"]["in"], bad["tokens"]["out"]) == (
        630,
        2600,
        140,
    )
    for name, model in ((GOOD, good), (BAD, bad)):
        durations = [
            r["result"]["duration_s"]
            for r in evaluated.state
            if r["id"].split("-")[1] == name.split(":")[0]
        ]
        assert model["wall_s"]["median_per_run"] == pytest.approx(
            statistics.median(durations), abs=1e-3
        )
        ttfts = [t for r in evaluated.report["runs"] if r["model"] == name for t in r["ttft_s"]]
        # The report keeps figures to 0.1 ms; the median of the raw values, rounded the same way.
        assert model["ttft_s"]["median"] == pytest.approx(statistics.median(ttfts), abs=1e-4)
        assert model["ttft_s"]["requests"] == model["requests"] == len(ttfts)
    assert max(t for r in evaluated.report["runs"] for t in r["ttft_s"]) >= HANG_S
    assert (good["requests"], bad["requests"]) == (14, 14)
    # The parser's troubles, per request of the loop (12 each: the plans' are left out).
    assert good["nudges"] == {"total": 1, "runs": 1, "requests": 12, "per_request": 0.0833}
    assert good["constrained"] == {"total": 1, "runs": 1, "requests": 12, "per_request": 0.0833}
    assert bad["nudges"] == {"total": 3, "runs": 2, "requests": 12, "per_request": 0.25}
    assert bad["constrained"] == {"total": 0, "runs": 0, "requests": 12, "per_request": 0.0}
    assert (good["guardrails"], bad["guardrails"]) == ({}, {"nudges": 1, "repetition": 2})
    assert good["stops"] == {"completed": 2, "final_answer": 4}
    assert bad["stops"] == {"aborted": 2, "final_answer": 1, "nudge_exhausted": 1, "repetition": 2}
    # Reusable: good 0 + 300 + 300 + 300 of 400 + 600 + 600 + 600; bad 300 * 4 of 2400.
    assert good["prefix_reuse"] == {
        "share": 0.4091,
        "prompt_tokens": 2200,
        "reusable_tokens": 900,
        "runs": 4,
        "estimate": True,  # from prompt lengths; the servers' own figures are in "prefill"
    }
    assert bad["prefix_reuse"] == {
        "share": 0.5,
        "prompt_tokens": 2400,
        "reusable_tokens": 1200,
        "runs": 4,
        "estimate": True,
    }
    assert good["without_events"] == bad["without_events"] == good["downgraded"] == 0


def test_the_task_table_says_which_tasks_each_model_does(evaluated: Evaluated) -> None:
    table = {row["task"]: row["by_model"] for row in evaluated.report["tasks"]}
    assert table["write-a"][GOOD] == {
        "runs": 2,
        "pass": 2,
        "unverified": 0,
        "partial_pass": 0,
        "fail": 0,
        "error": 0,
    }
    assert table["write-b"][BAD] == {
        "runs": 2,
        "pass": 0,
        "unverified": 0,
        "partial_pass": 1,
        "fail": 1,
        "error": 0,
    }
    assert table["plan-out"][BAD]["fail"] == 2


def test_the_same_command_again_resumes_and_reports_the_same(evaluated: Evaluated) -> None:
    asked = len(evaluated.server.chat_requests)
    code, stdout, stderr = run_cli(*evaluated.args)
    assert code == 0, stderr
    again = json.loads(stdout)
    assert len(evaluated.server.chat_requests) == asked, "nothing ran again"
    assert again["resumed"] == 12
    assert again["models"] == evaluated.report["models"]
    assert again["runs"] == evaluated.report["runs"]


def test_compare_says_what_changed_between_two_reports(
    evaluated: Evaluated, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    with FakeOllama([Script(good_fails_a=True)] * 50, models=MODELS) as server:
        code, _, stderr = run_cli(
            "eval",
            str(evaluated.suite),
            "--model",
            GOOD,
            "--tier",
            "1",
            "--host",
            server.url,
            "--repeat",
            "2",
            "--out",
            str(other),
            "--db",
            str(evaluated.db),
        )
    assert code == 0, stderr
    code, stdout, stderr = run_cli(
        "eval", "--compare", str(evaluated.out), str(other / "report.json"), "--json"
    )
    assert code == 0, stderr
    diff = json.loads(stdout)
    assert diff["same_suite"] is True
    assert (diff["common_tasks"], diff["only_in_a"]) == (["write-a"], ["plan-out", "write-b"])
    assert diff["unpaired"] == {"a": [BAD], "b": []}
    assert diff["settings_changed"] == {"hosts": [[evaluated.server.url], [server.url]]}
    (pair,) = diff["pairs"]
    assert (pair["a_model"], pair["b_model"], pair["runs"]) == (GOOD, GOOD, [2, 2])
    passed = pair["rates"]["pass"]
    # 2 of 2 [0.3424, 1] to 0 of 2 [0, 0.6576]: -1, and Newcombe's upper end
    # -1 + sqrt(0.6576^2 + (1 - 0.3424)^2).
    assert (passed["diff"], passed["low"], passed["significant"]) == (-1.0, -1.0, True)
    assert passed["high"] == pytest.approx(-1 + math.hypot(0.6576, 1 - 0.3424), abs=1e-3)
    assert pair["guardrails"] == {"repetition": [0, 2]}
    assert pair["figures"]["median_iterations"] == {"a": 2.5, "b": 3.0, "change": 0.5}
    assert pair["tasks"] == [{"task": "write-a", "a": [2, 2], "b": [0, 2], "better": False}]
    code, stdout, _ = run_cli("eval", "--compare", str(evaluated.out), str(other))
    assert code == 0
    assert "write-a: 2/2 → 0/2 passed (worse)" in stdout
    assert f"{BAD} is only in report A" in stdout


@pytest.fixture
def closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["eval", "nope", "--model", GOOD], "unknown suite 'nope'"),
        (["eval", "SUITE", "--model", GOOD, "--tier", "7"], "has no tier 7"),
        (["eval", "SUITE", "--model", GOOD, "--host", "DEAD"], "no endpoint of the pool answers"),
        (["eval", "SUITE", "--model", "missing:1b", "--host", "FAKE"], "missing:1b"),
        (["eval", "--backend", "embedded", "--model", "tiny"], "python -m llama_cpp.server"),
        (["eval", "--compare", "NOFILE", "NOFILE"], "no eval report at"),
        (["eval", "--compare", "NOTREPORT", "NOTREPORT"], "is not a localhand eval report"),
        (["eval", "--compare", "NOTREPORT", "NOTREPORT", "--model", GOOD], "--compare takes"),
    ],
)
def test_mistakes_are_clear_errors_with_exit_2(
    tmp_path: Path, closed_port: int, args: list[str], message: str
) -> None:
    suite = make_suite(tmp_path / "suite")
    (tmp_path / "not.json").write_text('{"format": "something else"}')
    with FakeOllama([], models=MODELS) as server:
        swap = {
            "SUITE": str(suite),
            "DEAD": f"http://127.0.0.1:{closed_port}",
            "FAKE": server.url,
            "NOFILE": str(tmp_path / "none.json"),
            "NOTREPORT": str(tmp_path / "not.json"),
        }
        code, _, err = run_cli(*[swap.get(a, a) for a in args], "--out", str(tmp_path / "o"))
    assert code == 2
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "o" / "report.json").exists()


def test_a_mistake_in_a_real_process_prints_no_traceback(tmp_path: Path) -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "localhand", "eval", "nope"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "unknown suite 'nope'" in done.stderr and "Traceback" not in done.stderr

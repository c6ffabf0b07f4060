"""The eval's arithmetic on its own: Wilson and Newcombe intervals against published values,
a run's figures from hand-made event streams (time to first token from a streamed reply,
prefix reuse across a compaction), and the grading that refuses a model's edits to its own
checks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from localhand.errors import ConfigError
from localhand.evals.measure import grade, run_figures
from localhand.evals.report import load_report, model_summary
from localhand.evals.stats import difference, median, wilson


@pytest.mark.parametrize(
    ("k", "n", "low", "high"),
    [  # Newcombe (1998), table I, and the closed forms at the edges
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0, 0.1611),
        (1, 29, 0.0061, 0.1718),
        (6, 6, 0.6097, 1.0),
    ],
)
def test_wilson_intervals_match_published_values(k: int, n: int, low: float, high: float) -> None:
    rate = wilson(k, n)
    assert (round(rate.low, 4), round(rate.high, 4)) == (low, high)
    assert rate.rate == k / n


def test_no_runs_is_no_knowledge_and_impossible_counts_are_refused() -> None:
    assert (wilson(0, 0).low, wilson(0, 0).high) == (0.0, 1.0)
    with pytest.raises(ValueError, match="0 <= k <= n"):
        wilson(3, 2)


def test_the_difference_of_two_rates_has_newcombe_s_interval() -> None:
    # Newcombe (1998), table II, example (a): 56/70 - 48/80, interval 0.0524 to 0.3339.
    change = difference(wilson(48, 80), wilson(56, 70))
    assert (round(change.diff, 4), round(change.low, 4), round(change.high, 4)) == (
        0.2,
        0.0524,
        0.3339,
    )
    assert change.significant
    assert not difference(wilson(5, 10), wilson(6, 10)).significant


def test_median_ignores_what_was_not_measured() -> None:
    assert median([3, None, 1, 2]) == 2
    assert median([None]) is None


def request(iteration: int, constrained: bool = False) -> dict[str, Any]:
    return {"type": "model_request", "iteration": iteration, "constrained": constrained}


def reply(iteration: int, tokens_in: int, ms: int = 50) -> dict[str, Any]:
    return {
        "type": "model_reply",
        "iteration": iteration,
        "tokens_in": tokens_in,
        "tokens_out": 5,
        "duration_ms": ms,
    }


def test_time_to_first_token_comes_from_the_first_progress_of_a_streamed_reply() -> None:
    events = [
        request(1),
        # 2.4 s after the request, 13 tokens had come at 6 a second since the first: the first
        # came 12 / 6 = 2 s before, at 0.4 s.
        {
            "type": "model_progress",
            "iteration": 1,
            "elapsed_s": 2.4,
            "tokens": 13,
            "tokens_per_s": 6.0,
        },
        {
            "type": "model_progress",
            "iteration": 1,
            "elapsed_s": 3.4,
            "tokens": 19,
            "tokens_per_s": 6.0,
        },
        reply(1, 100, ms=3900),
        request(2),
        {
            "type": "model_progress",
            "iteration": 2,
            "elapsed_s": 1.5,
            "tokens": 1,
            "tokens_per_s": None,
        },  # one token: it came with the event
        reply(2, 200, ms=1600),
        request(3),
        reply(3, 300, ms=700),  # over before any progress: its whole time, an upper bound
    ]
    figures = run_figures({"status": "pass"}, events, plan=False)
    assert figures["ttft_s"] == [0.4, 1.5, 0.7]
    assert figures["ttft_exact"] == 2
    assert figures["reply_s"] == 6.2


def test_prefix_reuse_skips_constrained_retries_and_compactions() -> None:
    events = [
        request(1),
        reply(1, 1000),
        request(2),
        reply(2, 1200),  # 1000 reusable
        request(3),
        reply(3, 1400),  # 1200
        request(3, constrained=True),
        reply(3, 1300),  # no tools: another prompt
        request(4),
        reply(4, 1600),  # after a constrained one: 0
        {
            "type": "warning",
            "message": "the conversation reached about 30000 of 32768 tokens: "
            "compacted 4 older tool results (9000 characters)",
        },
        request(5),
        reply(5, 900),  # compacted: 0
        request(6),
        reply(6, 1100),  # 900
        {"type": "nudge", "iteration": 6, "nudge_number": 1, "message": "use a tool"},
        {"type": "guardrail", "guardrail": "stall", "reason": "...", "iteration": 6},
    ]
    figures = run_figures({"status": "fail"}, events, plan=False)
    assert figures["reusable_tokens"] == 1000 + 1200 + 900
    assert figures["prompt_tokens"] == 1000 + 1200 + 1400 + 1300 + 1600 + 900 + 1100
    assert (figures["requests"], figures["constrained"], figures["nudges"]) == (7, 1, 1)
    assert figures["guardrails"] == {"stall": 1}


def test_a_model_that_edits_its_checks_has_not_passed() -> None:
    touched = {"status": "pass", "files_modified": ["calc.py", "sub/check_calc.py"]}
    assert grade(touched, plan=False) == (
        "fail",
        "the model changed the checks it is graded by: sub/check_calc.py",
    )
    assert grade({"status": "pass", "files_modified": ["calc.py"]}, plan=False) == ("pass", None)
    modified = {
        "status": "pass",
        "steps": [
            {"id": "build", "modified": True, "status": "done"},
            {"id": "check-x", "modified": True, "status": "done"},
        ],
    }
    assert grade(modified, plan=True) == ("fail", "the plan's check step 'check-x' was changed")
    skipped = {
        "status": "partial_pass",
        "steps": [{"id": "check-x", "modified": False, "status": "skipped"}],
    }
    assert grade(skipped, plan=True)[0] == "fail"
    assert grade({"status": "error"}, plan=False) == ("error", None)


def test_runs_without_events_still_count_by_their_results() -> None:
    runs = [
        {
            "model": "m",
            "task": "t",
            "tier": 1,
            **run_figures(
                {
                    "status": "pass",
                    "iterations_used": 3,
                    "tokens_in": 10,
                    "tokens_out": 2,
                    "duration_s": 1.5,
                },
                None,
                plan=False,
            ),
        },
        {
            "model": "m",
            "task": "t",
            "tier": 1,
            **run_figures(
                {
                    "status": "fail",
                    "iterations_used": 5,
                    "tokens_in": 30,
                    "tokens_out": 4,
                    "duration_s": 2.5,
                },
                [request(1), reply(1, 30)],
                plan=False,
            ),
        },
    ]
    summary = model_summary("m", runs)
    assert summary["without_events"] == 1
    assert summary["median_iterations"] == 4
    assert summary["wall_s"] == {"median_per_run": 2.0, "total": 4.0}
    assert summary["requests"] == 1 and summary["ttft_s"]["requests"] == 1


def test_a_file_that_is_not_a_report_is_refused_by_name(tmp_path: Path) -> None:
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(ConfigError, match="cannot read the eval report"):
        load_report(tmp_path / "broken.json")
    (tmp_path / "half.json").write_text(json.dumps({"format": "localhand-eval/1"}))
    with pytest.raises(ConfigError, match="lacks its models or runs"):
        load_report(tmp_path / "half.json")
    with pytest.raises(ConfigError, match="no eval report at"):
        load_report(tmp_path)  # a folder without report.json

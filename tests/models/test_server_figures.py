"""The server's own prefill and cache figures: read from each server's wording, carried in the
model-reply event and the Result, shown in the step line; "unknown" where a server says nothing.
Slot affinity is claimed from what the server publishes. (The same against the real
llama-server: ``test_llama_server_real.py``.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from localhand import Agent
from localhand.cli.server_figures import server_figures_line
from localhand.events import EventBus, EventLog
from localhand.models import _slots
from localhand.models._served_figures import ollama_usage, openai_usage
from localhand.models.ollama import OllamaModel
from localhand.models.openai_compat import OpenAICompatModel
from localhand.run.guardrails import Limits
from localhand.testing import FakeOllama
from localhand.types import Prefill, Usage

QWEN = {"qwen3:8b": {"context_length": 40960, "tools": True}}
HISTORY = [
    {"role": "system", "content": "You fix bugs. " * 40},
    {"role": "user", "content": "Fix calc.py, whose add() subtracts."},
]

# A llama-server completion's accounting, as it sends it (b11434): usage, and its timings.
LLAMA_SERVER_REPLY = {
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}],
    "usage": {"completion_tokens": 12, "prompt_tokens": 530, "total_tokens": 542},
    "timings": {
        "cache_n": 500,
        "prompt_n": 30,
        "prompt_ms": 60.5,
        "prompt_per_token_ms": 2.01,
        "prompt_per_second": 495.8,
        "predicted_n": 12,
        "predicted_ms": 240.0,
        "predicted_per_second": 50.0,
    },
}


def test_llama_server_timings_say_what_was_prefilled_and_reused() -> None:
    usage = openai_usage(LLAMA_SERVER_REPLY)
    assert usage == Usage(530, 12, 30, 500, 60.5, 240.0)


def test_openai_cached_tokens_say_the_reuse_without_timings() -> None:
    usage = openai_usage(
        {"usage": {"prompt_tokens": 2006, "completion_tokens": 300,
                   "prompt_tokens_details": {"cached_tokens": 1920}}}
    )  # fmt: skip
    assert (usage.prefilled_tokens, usage.cached_tokens) == (86, 1920)
    assert usage.prefill_ms is None


def test_a_server_that_says_nothing_leaves_every_figure_unknown() -> None:
    usage = openai_usage({"usage": {"prompt_tokens": 40, "completion_tokens": 5}})
    assert usage == Usage(40, 5)
    assert (usage.prefilled_tokens, usage.cached_tokens, usage.prefill_ms) == (None, None, None)
    old_ollama = ollama_usage({"prompt_eval_count": 40, "eval_count": 5})
    assert (old_ollama.prefilled_tokens, old_ollama.cached_tokens) == (None, None)


def test_ollama_counts_its_cache_in_prompt_eval_cached_count() -> None:
    usage = ollama_usage(
        {"prompt_eval_count": 400, "prompt_eval_cached_count": 380,
         "prompt_eval_duration": 13_074_791, "eval_count": 18, "eval_duration": 52_479_709}
    )  # fmt: skip
    assert usage == Usage(400, 18, 20, 380, 13.075, 52.48)


def test_fake_ollama_reports_its_cache_as_ollama_does() -> None:
    with FakeOllama(["one", "two"], models=QWEN) as server:
        model = OllamaModel("qwen3:8b", server.url)
        first = model.chat(HISTORY).usage
        second = model.chat([*HISTORY, {"role": "assistant", "content": "one"},
                             {"role": "user", "content": "And now?"}]).usage  # fmt: skip
        model.close()
    assert first.cached_tokens is None  # no hit: the field is left out (omitempty), unknown
    assert second.cached_tokens is not None and second.cached_tokens > 0
    assert second.prefilled_tokens == second.prompt_tokens - second.cached_tokens
    assert second.prefill_ms == pytest.approx(second.prefilled_tokens * 0.3)  # uncached only
    assert second.decode_ms is not None and second.decode_ms > 0


def test_fake_ollama_v1_says_cached_tokens_as_ollamas_bridge_does() -> None:
    server = FakeOllama(["one", "two"], models=QWEN)
    with server, OpenAICompatModel("qwen3:8b", server.url + "/v1") as model:
        model.chat(HISTORY)
        usage = model.chat([*HISTORY, {"role": "assistant", "content": "one"}]).usage
    assert usage.cached_tokens is not None and usage.cached_tokens > 0
    assert usage.prefilled_tokens == usage.prompt_tokens - usage.cached_tokens


def test_the_run_carries_the_figures_in_events_and_the_result(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello\n")
    script = [
        {"tool_calls": [{"function": {"name": "read_file", "arguments": {"path": "notes.txt"}}}]},
        "notes.txt says hello.",
    ]
    bus, log = EventBus(), EventLog()
    bus.subscribe(log)
    with FakeOllama(script, models=QWEN) as server:
        model = OllamaModel("qwen3:8b", server.url)
        result = Agent(model, tmp_path, limits=Limits(max_iterations=3), bus=bus).run(
            "What does notes.txt say?"
        )
        model.close()
    replies = log.of_type("model_reply")
    assert len(replies) == 2
    assert replies[0].tokens_cached is None  # the first request: nothing in the cache
    assert replies[1].tokens_cached and replies[1].tokens_prefilled
    assert replies[1].prefill_ms == pytest.approx(replies[1].tokens_prefilled * 0.3)
    figures = result.to_dict()["prefill"]
    assert figures["requests"] == 2 and figures["reported"] == 1  # the first said nothing
    assert figures["tokens_reused"] == replies[1].tokens_cached
    assert figures["tokens_prefilled"] == replies[1].tokens_prefilled
    total_ms = sum(e.prefill_ms or 0 for e in replies)
    assert figures["prefill_s"] == pytest.approx(total_ms / 1000, abs=0.002)


def test_figures_add_up_known_requests_only_and_stay_unknown_when_none_said() -> None:
    silent = Prefill()
    silent.add(Usage(100, 5))
    assert (silent.requests, silent.reported, silent.tokens_reused) == (1, 0, None)
    mixed = Prefill()
    for usage in (Usage(100, 5), Usage(120, 5, 20, 100, 40.0), Usage(150, 5, 30, 120, 60.0)):
        mixed.add(usage)
    assert (mixed.requests, mixed.reported) == (3, 2)
    assert (mixed.tokens_prefilled, mixed.tokens_reused, mixed.prefill_s) == (50, 220, 0.1)


def test_the_step_line_shows_prefill_cache_hit_and_rate() -> None:
    line = server_figures_line({"tokens_prefilled": 30, "tokens_cached": 500, "prefill_ms": 60.0})
    assert line == "prefill 30 tok · cache hit 94% · prefill rate 500 tok/s"
    cached_only = {"tokens_prefilled": 86, "tokens_cached": 1920, "prefill_ms": None}
    assert server_figures_line(cached_only).endswith("prefill rate unknown")
    timed_only = {"tokens_prefilled": None, "tokens_cached": None, "prefill_ms": 13.0}
    assert server_figures_line(timed_only) == (
        "prefill unknown · cache hit unknown · prefill rate unknown"
    )
    assert server_figures_line({"tokens_prefilled": None, "tokens_cached": None}) == ""


def test_each_backend_keeps_its_own_slot_spread_over_the_published_ones() -> None:
    with FakeOllama(["a", "b", "c", "d"], models=QWEN, slots=2, props=True) as server:
        first = OpenAICompatModel("qwen3:8b", server.url + "/v1")
        second = OpenAICompatModel("qwen3:8b", server.url + "/v1")
        first.chat(HISTORY)
        second.chat(HISTORY)
        first.chat(HISTORY)
        assert _slots._held.get(_slots.root_of(first.base_url)) == [1, 1]
        second.close()  # its slot is free again: the next backend takes it
        third = OpenAICompatModel("qwen3:8b", server.url + "/v1")
        third.chat(HISTORY)
        first.close()
        third.close()
        asked = [r.body.get("id_slot") for r in server.openai_requests]
    assert asked == [0, 1, 0, 1]
    assert (first.slot, second.slot) == (None, None)


def test_a_server_without_slots_gets_no_id_slot_and_pinning_can_be_turned_off() -> None:
    with FakeOllama(["a", "b"], models=QWEN) as server:  # no /props: not llama-server
        with OpenAICompatModel("qwen3:8b", server.url + "/v1") as model:
            model.chat(HISTORY)
        with FakeOllama(["c"], models=QWEN, slots=2, props=True) as other:
            with OpenAICompatModel("qwen3:8b", other.url + "/v1", pin_slot=False) as unpinned:
                unpinned.chat(HISTORY)
            assert "id_slot" not in other.openai_requests[0].body
        assert "id_slot" not in server.openai_requests[0].body


def test_the_eval_report_sums_what_servers_said_apart_from_its_estimate() -> None:
    from localhand.evals.measure import run_figures
    from localhand.evals.report import server_cache
    from localhand.evals.table import _cache_hit

    said = {"requests": 3, "reported": 2, "tokens_prefilled": 50, "tokens_reused": 150,
            "prefill_s": 0.2}  # fmt: skip
    silent = {"requests": 2, "reported": 0, "tokens_prefilled": None, "tokens_reused": None,
              "prefill_s": None}  # fmt: skip
    runs = [run_figures({"status": "pass", "prefill": p}, None, plan=False) for p in (said, silent)]
    cache = server_cache(runs)
    assert cache == {"share": 0.75, "tokens_prefilled": 50, "tokens_reused": 150,
                     "prefill_s": 0.2, "requests": 5, "reported": 2,
                     "draft_acceptance": None}  # fmt: skip
    assert _cache_hit(cache) == "75%"
    nothing = server_cache([run_figures({"status": "pass"}, None, plan=False)])
    assert nothing["share"] is None and _cache_hit(nothing) == "unknown"


def test_the_live_view_ends_with_the_totals_and_shows_turns_only_with_v(tmp_path: Path) -> None:
    # One line per step by default (the calm terminal); the server's per-turn figures with -v.
    import io

    from rich.console import Console

    from localhand.cli.server_figures import server_totals_line
    from localhand.cli.view import TerminalView

    listing = {"function": {"name": "list_directory", "arguments": {"path": "."}}}
    script = [{"content": "", "tool_calls": [listing]}]
    printed = {}
    for verbose in (False, True):
        out = io.StringIO()
        view = TerminalView(
            Console(file=out, width=100), io.StringIO(), live=False, verbose=verbose
        )
        bus = EventBus()
        bus.subscribe(view)
        with FakeOllama(
            script=[*script, {"content": "Listed."}], models={"qwen3:8b": {}}
        ) as server:
            model = OllamaModel("qwen3:8b", host=server.url)
            Agent(model, tmp_path, bus=bus, limits=Limits(max_iterations=4)).run("List the files")
        printed[verbose] = out.getvalue()
    assert "server: prefilled" in printed[False] and "prefill rate" not in printed[False]
    assert "prefill rate" in printed[True]
    assert server_totals_line(None) == server_totals_line({"requests": 2, "reported": 0}) == ""
    line = server_totals_line(
        {
            "requests": 3,
            "reported": 2,
            "tokens_prefilled": 50,
            "tokens_reused": 150,
            "prefill_s": 0.1,
        }
    )
    assert line == "server: prefilled 50 tok in 0.1 s · cache hit 75% (2 of 3 replies said)"

"""The detector of a server that throws its prompt cache away on a growing prefix (no
--swa-full for a sliding-window model, or cache_prompt off)."""

from __future__ import annotations

import pytest

from localhand.run.cache_reuse import CacheWatch, cache_thrown_away

GROWING = [1000, 1300, 1600, 1900]


def test_a_server_that_reuses_its_cache_draws_no_warning() -> None:
    reused = [(p, 0 if i == 0 else GROWING[i - 1]) for i, p in enumerate(GROWING)]
    assert cache_thrown_away(reused) is None


def test_full_reprefill_on_a_growing_prefix_names_the_server_flags() -> None:
    warning = cache_thrown_away([(p, 0) for p in GROWING])
    assert warning is not None
    assert "--swa-full" in warning and "cache_prompt" in warning
    assert "3 requests in a row" in warning and "1,600 tokens" in warning


def test_only_a_window_of_cache_is_kept_by_a_swa_model() -> None:
    # llama-server without --swa-full can keep only the last window (here 512) of the prompt.
    assert cache_thrown_away([(p, 512 if i else 0) for i, p in enumerate(GROWING)]) is not None


@pytest.mark.parametrize(
    "requests",
    [
        [(p, None) for p in GROWING],  # the server says nothing: nothing is concluded
        [(1000, 0), (1300, 0)],  # one miss can be an eviction
        [(1000, 0), (400, 0), (700, 0)],  # a compaction shrank the prompt: not a growing prefix
        [(100, 0), (150, 0), (200, 0)],  # too short to matter
        [(1000, 0), (1300, 0), (1600, 1300)],  # the cache came back
    ],
)
def test_no_warning_when_the_figures_do_not_show_a_thrown_away_cache(
    requests: list[tuple[int, int | None]],
) -> None:
    assert cache_thrown_away(requests) is None


def test_the_watch_warns_once_per_run() -> None:
    watch = CacheWatch()
    said = [watch.observe(prompt, 0) for prompt in [*GROWING, 2200, 2500]]
    assert [text is not None for text in said] == [False, False, True, False, False, False]


@pytest.mark.parametrize(
    ("model", "named", "not_named"),
    [
        ("gemma3:4b", "--swa-full", "--ctx-checkpoints"),
        ("qwen3.5-9b-Q4_K_M.gguf", "--ctx-checkpoints", "--swa-full"),
        ("qwen3:8b", "--cache-reuse", "--swa-full"),
    ],
)
def test_the_run_s_model_gets_its_own_flag_alone(model: str, named: str, not_named: str) -> None:
    requests = [(1000, 0), (1200, 0), (1400, 0)]
    warning = cache_thrown_away(requests, model)
    assert warning is not None and named in warning and not_named not in warning
    assert "localhand doctor" in warning and len(warning) < 400, "one line that fits a pipe"

"""What ``localhand doctor`` concludes from what a server says: the cache flag for each kind
of model (the same advice the run's cache-miss warning gives), llama-server's ``/props`` read
into findings (as the real server words it: ``n_ctx`` of a slot, ``total_slots``,
``modalities``), and cached-token counts missing from ``usage`` (the fake's ``/v1``)."""

from __future__ import annotations

import pytest

from localhand.models._checkup_llama import _settings
from localhand.models.advice import Needs, growing_prefix_fix, hybrid, sliding_window
from localhand.models.checkup import _cached_tokens
from localhand.run.cache_reuse import cache_thrown_away
from localhand.testing import FakeOllama


@pytest.mark.parametrize(
    ("name", "window", "fix"),
    [
        ("gemma-3-270m-q4_k_m.gguf", 512, "--swa-full"),
        ("gemma3:12b", 1024, "--swa-full"),
        ("gemma2:9b", 4096, "--swa-full"),
        ("gpt-oss-20b-mxfp4.gguf", 128, "--swa-full"),
        ("Qwen3.5-9B-Q4_K_M.gguf", None, "--ctx-checkpoints 32"),
        ("granite4:tiny-h", None, "--ctx-checkpoints 32"),
        ("qwen3:8b", None, "keep cache_prompt on (no --no-cache-prompt) and --cache-reuse 256"),
    ],
)
def test_each_kind_of_model_gets_its_cache_flag(name: str, window: int | None, fix: str) -> None:
    assert sliding_window(name) == window
    assert hybrid(name) == fix.startswith("--ctx-checkpoints")
    assert growing_prefix_fix(name) == fix


def test_the_run_warning_names_every_flag_doctor_may_name() -> None:
    warning = cache_thrown_away([(p, 0) for p in (1000, 1300, 1600, 1900)])
    assert warning is not None and growing_prefix_fix(None) in warning
    for name in ("gemma3:4b", "qwen3.5:9b", "qwen3:8b"):
        assert growing_prefix_fix(name).split(" (")[0] in warning


def needs(**changed: object) -> Needs:
    return Needs(**{"tokens": 13_000, "first_prompt": 1_000, "model": "m", **changed})  # type: ignore[arg-type]


def props(n_ctx: int = 32768, slots: int = 1, vision: bool = False) -> dict[str, object]:
    return {
        "default_generation_settings": {"n_ctx": n_ctx, "params": {}},
        "total_slots": slots,
        "modalities": {"vision": vision, "video": False, "audio": False},
    }


def test_a_server_that_fits_needs_nothing() -> None:
    assert _settings(props(), needs()) == []


def test_a_small_slot_names_c_for_all_slots() -> None:
    (found,) = _settings(props(n_ctx=4096, slots=2), needs())
    assert found.fix == "-c 32768" and "13,000" in found.what  # 16k for each of 2 slots
    assert "n_ctx=4096" in found.basis


def test_fewer_slots_than_the_batch_names_parallel() -> None:
    (found,) = _settings(props(n_ctx=16384, slots=2), needs(concurrency=4))
    assert found.fix == "--parallel 4 -c 65536"


def test_a_loaded_projector_is_named() -> None:
    (found,) = _settings(props(vision=True), needs())
    assert "--no-mmproj" in found.fix and "vision" in found.what


def test_a_server_that_does_not_report_cached_tokens_is_told_the_flag() -> None:
    # The fake speaks Ollama's /v1, which like vLLM without --enable-prompt-tokens-details
    # leaves prompt_tokens_details out; it reports them once a request reuses its cache.
    with FakeOllama(["ok", "ok"]) as fake:
        (silent,) = _cached_tokens(fake.url + "/v1", "qwen3:8b", 5.0)
        assert silent.fix == "--enable-prompt-tokens-details" and silent.severity == "warning"
        assert _cached_tokens(fake.url + "/v1", "qwen3:8b", 5.0) == []  # the same prompt again

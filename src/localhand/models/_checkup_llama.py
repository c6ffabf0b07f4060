"""``localhand doctor`` on llama-server: what ``/props`` says (a slot's window, ``total_slots``,
``modalities`` for a loaded ``--mmproj``), whether slots can be saved (an unknown slot action
is refused 501 without ``--slot-save-path``, 400 with it: nothing is saved or erased), and a
probe for what no endpoint says: whether the prompt cache survives.

The probe sends three prompts to one slot (``/completion``, one token each; it evicts that
slot's cache): ``prefix + tail``, then the same grown by a few words (a run's next turn: it
must come from the cache, else the cache is off or a hybrid model has no checkpoints), then
``prefix + other tail``, which shares only a prefix longer than the model's sliding window
and ends more than a window plus a batch (512) past it: only ``--swa-full`` keeps those keys.
``timings.cache_n`` of the server judges each; the figures are the finding's basis.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Any

from localhand.models._catalog_probes import CatalogError, get_json
from localhand.models._http import Client
from localhand.models._served_context import root_of
from localhand.models._slots import published_total, slot_file
from localhand.models.advice import (
    SLOT_SAVE,
    SPEC_NGRAM,
    SWA_FULL,
    Checkup,
    Finding,
    Needs,
    growing_prefix_fix,
    hybrid,
    sliding_window,
)
from localhand.models.catalog import Place

BATCH = 512
"""llama-server's default ``--ubatch-size``: how far past its window a SWA cache may reach."""
UNKNOWN_WINDOW = 512
"""The prefix for a model whose family has no known window: enough to see a cache at all."""
PROBE_TIMEOUT = 600.0
"""Seconds one probe request may take: a large model on a CPU prefills slowly."""
HIT = 0.5
"""A request reused the cache when the server says it took at least this share from it."""


def examine(place: Place, needs: Needs, timeout: float) -> Checkup:
    """What doctor finds on the llama-server at ``place``."""
    with Client(root_of(place.where)) as client:
        try:
            props = get_json(client, "GET", "/props", timeout)
            path = PurePath(str(props.get("model_path") or ""))
            name = path.name or str(props.get("model_alias"))
            checkup = Checkup(place.where, "llama-server", name)
            checkup.findings += _settings(props, needs) + _drafting(props, name)
            checkup.findings += _slot_saving(client.base_url)
        except CatalogError as exc:
            failed = Finding("error", f"llama-server stopped answering ({exc})", "restart it")
            return Checkup(place.where, "llama-server", None, [failed], False)
        try:
            if needs.probe:
                checkup.findings += _probe(client, name, props.get("total_slots"), timeout)
        except CatalogError as exc:  # a proxy without /completion, say: nothing concluded
            what = f"the cache probe failed ({exc})"
            checkup.findings.append(Finding("note", what, "--no-probe"))
    return checkup


def _settings(props: dict[str, Any], needs: Needs) -> list[Finding]:
    found = []
    slots = published_total(props) or 1
    n_ctx = (props.get("default_generation_settings") or {}).get("n_ctx")
    basis = f"/props default_generation_settings.n_ctx={n_ctx}, total_slots={slots}"
    if isinstance(n_ctx, int) and n_ctx < needs.tokens:
        what = f"a slot's window is {n_ctx:,} tokens (-c / --parallel {slots}); {needs.how_much}"
        found.append(Finding("warning", what, f"-c {needs.window(slots)}", basis))
    if needs.concurrency and slots < needs.concurrency:
        what = f"{slots} parallel slots for a batch of {needs.concurrency} at once: the rest wait"
        fix = f"--parallel {needs.concurrency} -c {needs.window(needs.concurrency)}"
        found.append(Finding("warning", what, fix, basis))
    media = [k for k, on in (props.get("modalities") or {}).items() if on is True]
    if media:
        what = f"a multimodal projector is loaded ({', '.join(media)}; leave out --mmproj): memory "
        what += "localhand never uses, and llama-server turns --cache-reuse off with it"
        found.append(Finding("warning", what, "--no-mmproj", "/props modalities"))
    return found


def _drafting(props: dict[str, Any], name: str) -> list[Finding]:
    """N-gram drafts pay on an agent's replies, which copy what they read; not on a hybrid or
    recurrent model, which cannot roll rejected drafts back cheaply."""
    params = (props.get("default_generation_settings") or {}).get("params") or {}
    if params.get("speculative.types") != "none" or hybrid(name):
        return []
    what = "replies that copy what the model read (edits) decode faster with n-gram drafts"
    return [Finding("suggestion", what, SPEC_NGRAM, "/props params speculative.types=none")]


def _slot_saving(root: str) -> list[Finding]:
    if not slot_file(root, {}, 0, "doctor", "").unsupported:  # an unknown action saves nothing
        return []
    what = "slots cannot be saved, so a continued run pays its whole conversation again"
    return [Finding("note", what, SLOT_SAVE, "POST /slots/0?action=... answered 501")]


def _probe(client: Client, name: str, total: Any, timeout: float) -> list[Finding]:
    window = sliding_window(name) or UNKNOWN_WINDOW
    slot = total - 1 if isinstance(total, int) and total > 0 else 0  # localhand claims 0 first
    sample = get_json(client, "POST", "/tokenize", timeout, {"content": _words("s", 200)})
    per_word = max(1, len(sample.get("tokens") or [])) / 200
    words = int((window + 64) / per_word) + 1
    prefix, tail, other = (_words(tag, words) for tag in ("p", "t", "o"))
    tail += " " + _words("u", int(BATCH / per_word) + 1)
    first = _cached(client, slot, prefix + tail)
    grown = _cached(client, slot, prefix + tail + " and more")
    basis = f"probe on slot {slot}: cache_n {grown[0]:,} of {sum(first):,} on a grown prompt"
    if grown[0] < HIT * sum(first):
        what = "the server re-processed the whole prompt although it only grew"
        return [Finding("warning", what, growing_prefix_fix(name), basis)]
    forked = _cached(client, slot, prefix + other)
    shared = int(words * per_word)
    basis += f"; cache_n {forked[0]:,} of a {shared:,}-token shared prefix, then another tail"
    if forked[0] >= HIT * shared:
        return [Finding("note", "the prompt cache is reused, across turns and tasks", "", basis)]
    what = f"a prefix longer than the sliding window ({window} tokens) is not reused once the "
    what += "conversation changes past it (another task, a compaction, a continued run)"
    if hybrid(name):  # its state cannot be rolled back: no flag brings that prefix back
        return [Finding("note", what, "", basis)]
    return [Finding("warning", what, SWA_FULL, basis)]


def _cached(client: Client, slot: int, prompt: str) -> tuple[int, int]:
    """(tokens reused from the cache, tokens prefilled) as the server counted them."""
    body = {"prompt": prompt, "n_predict": 1, "id_slot": slot, "cache_prompt": True}
    timings = get_json(client, "POST", "/completion", PROBE_TIMEOUT, body).get("timings") or {}
    return int(timings.get("cache_n") or 0), int(timings.get("prompt_n") or 0)


def _words(tag: str, count: int) -> str:
    return " ".join(f"{tag}{i}" for i in range(count))

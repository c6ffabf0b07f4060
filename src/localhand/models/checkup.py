"""``localhand doctor``: what each model server localhand would use runs, how, and the exact
flag, variable or setting that would make it serve localhand better.

The servers are the ones ``localhand models`` finds (``models/catalog.gather``); each is then
asked what it exposes (llama-server ``/props`` and ``/slots``, Ollama ``/api/show``,
``/api/ps`` and ``/api/version``, vLLM ``/v1/models`` and a one-token request) and, where a
setting is not exposed, probed (``_checkup_llama``). What it finds: ``models/advice``.
"""

from __future__ import annotations

from localhand.models import _checkup_llama, _checkup_ollama
from localhand.models._catalog_probes import CatalogError, get_json
from localhand.models._checkup_ollama import missing
from localhand.models._http import Client
from localhand.models._served_context import root_of
from localhand.models.advice import CACHED_TOKENS, Checkup, Finding, Needs, Severity
from localhand.models.catalog import Place


def examine(place: Place, needs: Needs, timeout: float) -> Checkup:
    """What doctor finds at ``place`` (a server ``gather`` asked) for a run with ``needs``."""
    if place.error is not None and not place.models:
        severity: Severity = "error" if needs.named else "note"
        what = f"nothing answers as {place.kind} at {place.where} ({place.error})"
        fix = "start the server, or name the one you use with --host URL"
        model = needs.model if needs.model_given or place.backend == "ollama" else None
        return Checkup(place.where, place.kind, model, [Finding(severity, what, fix)], False)
    if place.backend == "ollama":
        return _checkup_ollama.examine(place, needs, timeout)
    if place.kind == "llama-server":
        return _checkup_llama.examine(place, needs, timeout)
    names = [m.name for m in place.models]
    model = needs.model if needs.model_given else (names[0] if names else None)
    checkup = Checkup(place.where, place.kind, model)
    if needs.model_given and names and needs.model not in names:
        basis = "/v1/models"
        checkup.findings.append(missing(place, needs.model, f"--model {names[0]}", basis))
    window = next((m.context for m in place.models if m.name == model), None)
    if window and window < needs.tokens:
        what = f"the window is {window:,} tokens; {needs.how_much}"
        fix = f"--max-model-len {needs.window()}"
        checkup.findings.append(Finding("warning", what, fix, f"/v1/models max_model_len={window}"))
    if place.kind == "vLLM" and model:
        checkup.findings += _cached_tokens(place.where, model, timeout)
    return checkup


def _cached_tokens(base: str, model: str, timeout: float) -> list[Finding]:
    """vLLM reports the tokens its prefix cache served only with ``--enable-prompt-tokens-
    details``; without them localhand cannot tell a cache hit from a miss."""
    body = {"model": model, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1}
    with Client(root_of(base)) as client:
        try:
            usage = get_json(client, "POST", "/v1/chat/completions", timeout * 5, body).get("usage")
        except (CatalogError, AttributeError) as exc:
            return [Finding("note", f"a one-token request failed ({exc})", "", "POST /v1/chat")]
    details = usage.get("prompt_tokens_details") if isinstance(usage, dict) else None
    if isinstance(details, dict) and "cached_tokens" in details:
        return []
    what = "the server does not report cached tokens, so a cache miss cannot be seen"
    return [Finding("warning", what, CACHED_TOKENS, f"usage.prompt_tokens_details={details}")]

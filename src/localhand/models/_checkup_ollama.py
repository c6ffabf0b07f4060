"""``localhand doctor`` on Ollama: ``/api/version``, ``/api/show`` of the model localhand would
run (its trained window, the shape of its KV cache), ``/api/ps`` (the window it is loaded
with now).

On the native API localhand sets ``num_ctx`` itself (``models/ollama``: the power of two that
holds a run, at most ``num_ctx_max``), so Ollama's own default window (``OLLAMA_CONTEXT_LENGTH``,
4096 on small GPUs) only matters to other clients and the ``/v1`` API; but a model loaded
with a smaller window is loaded again, with localhand's, at the start of a run, and again when
another client asks for the default: setting the server's default to localhand's ends that.
"""

from __future__ import annotations

from typing import Any

from localhand.models._catalog_probes import CatalogError, get_json
from localhand.models._http import Client
from localhand.models._ollama_wire import canonical, trained_context
from localhand.models.advice import Checkup, Finding, Needs
from localhand.models.catalog import Place
from localhand.models.missing import has_models, pick_tool_model


def examine(place: Place, needs: Needs, timeout: float) -> Checkup:
    """What doctor finds on the Ollama at ``place`` for ``needs.model``."""
    model = needs.model or ""
    checkup = Checkup(place.where, place.kind, model)
    try:
        with Client(place.where) as client:
            version = get_json(client, "GET", "/api/version", timeout).get("version")
            try:
                show = get_json(client, "POST", "/api/show", timeout, {"model": model})
            except CatalogError as exc:
                if not str(exc).startswith("HTTP 404"):  # Ollama's answer for a model it lacks
                    raise
                basis = f"POST /api/show: {exc}; Ollama {version}"
                checkup.findings.append(missing(place, model, f"ollama pull {model}", basis))
                return checkup
            loaded = _loaded(client, timeout)
    except (CatalogError, AttributeError) as exc:
        failed = Finding("error", f"Ollama stopped answering ({exc})", "restart it: ollama serve")
        return Checkup(place.where, place.kind, model, [failed], False)
    checkup.findings += _window(model, show.get("model_info") or {}, loaded, needs)
    return checkup


def _window(model: str, info: dict[str, Any], loaded: list[Any], needs: Needs) -> list[Finding]:
    arch = info.get("general.architecture")
    trained = trained_context(info)
    basis = f"/api/show model_info {arch}.context_length={trained}"
    if trained and trained < needs.tokens:
        what = f"{model} was trained for {trained:,} tokens; {needs.how_much}"
        return [Finding("warning", what, "a model with a longer window (localhand models)", basis)]
    if needs.num_ctx_max < needs.tokens:
        what = f"localhand's num_ctx_max is {needs.num_ctx_max:,}; {needs.how_much}"
        fix = f"LOCALHAND_NUM_CTX_MAX={needs.window()}"
        return [Finding("warning", what, fix, f"num_ctx_max={needs.num_ctx_max}")]
    window = min(needs.window(), trained) if trained else needs.window()
    cost = _kv_bytes(info, arch, window)
    memory = f"; num_ctx={window} takes about {cost / 1e9:.1f} GB of KV cache" if cost else ""
    sets = f"localhand sets num_ctx={window} on its requests ({needs.how_much}{memory})"
    now = [e.get("context_length") for e in loaded if _named(e, model)]
    if not now or not isinstance(now[0], int) or now[0] >= window:
        basis += f"; /api/ps: {'loaded with ' + str(now[0]) if now else 'not loaded'}"
        sets += "; Ollama's own default is for other clients and its /v1 API"
        return [Finding("note", sets, f"OLLAMA_CONTEXT_LENGTH={window}", basis)]
    what = f"{model} is loaded with a {now[0]:,}-token window (Ollama's default): {sets}, "
    what += "so Ollama loads it again for a run, and again for any client using the default"
    basis += f"; /api/ps context_length={now[0]}"
    return [Finding("warning", what, f"OLLAMA_CONTEXT_LENGTH={window}", basis)]


def _loaded(client: Client, timeout: float) -> list[Any]:
    try:
        return get_json(client, "GET", "/api/ps", timeout).get("models") or []
    except CatalogError:  # an Ollama before /api/ps: nothing said of what is loaded
        return []


def _named(entry: Any, model: str) -> bool:
    return isinstance(entry, dict) and canonical(str(entry.get("model") or "")) == canonical(model)


def _kv_bytes(info: dict[str, Any], arch: Any, tokens: int) -> int | None:
    """The f16 KV cache of ``tokens`` (Ollama's default cache type), from ``model_info``."""
    keys = ("block_count", "attention.head_count", "attention.head_count_kv", "embedding_length")
    shape = [v for k in keys if isinstance(v := info.get(f"{arch}.{k}"), int) and v > 0]
    if len(shape) < len(keys):
        return None  # per-layer lists (hybrid models) or an older Ollama: not guessed
    layers, heads, kv_heads, width = shape
    head = info.get(f"{arch}.attention.key_length")
    return 2 * 2 * layers * kv_heads * (head if isinstance(head, int) else width // heads) * tokens


def missing(place: Place, model: str, fix: str, basis: str) -> Finding:
    """The model is not on the server: what it has, in the words of the run's own error."""
    listed = has_models(
        [m.name for m in place.models], pick_tool_model([(m.name, m.tools) for m in place.models])
    )
    return Finding("error", f"{model} is not on this server. {listed}", fix, basis)

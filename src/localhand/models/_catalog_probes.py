"""What one server or file serves, for ``localhand models`` (:mod:`localhand.models.catalog`).

Each probe asks with short timeouts and no retries, and raises ``CatalogError`` with a short
reason when the server does not answer as the backend it is probed as: a listing must never
hang on a server that is down or is something else.

- Ollama: ``GET /api/tags`` (names, sizes), then ``POST /api/show`` for each model (its
  trained context length in ``model_info``, its ``capabilities``; Ollama before 0.6 has none,
  so tool support is then unknown).
- OpenAI-compatible: llama-server's ``GET /props`` (at the root: ``n_ctx`` of a slot, the
  chat template), then ``GET /v1/models`` (llama-server's ``meta`` gives the file size; vLLM
  gives ``max_model_len``; LM Studio gives ids only).
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from localhand.models._common import positive
from localhand.models._http import Client, HTTPError, Timeout
from localhand.models._ollama_wire import trained_context
from localhand.models._served_context import root_of


class CatalogError(Exception):
    """The server did not answer as this backend: ``str()`` says why, in a few words."""


@dataclass(frozen=True, slots=True)
class Found:
    """A model as a server describes it; ``None`` where the server does not say."""

    name: str
    size: int | None = None
    context: int | None = None
    tools: bool | None = None
    detail: str = ""


def get_json(client: Client, method: str, path: str, timeout: float, body: Any = None) -> Any:
    """The JSON answer to one request; ``CatalogError`` for anything but a 200 with JSON."""
    try:
        response = client.request(method, path, body, timeout=timeout, connect_timeout=timeout)
    except Timeout:
        raise CatalogError(f"no answer within {timeout:g} s") from None
    except HTTPError as exc:
        raise CatalogError(_reason(exc)) from None
    except OSError as exc:
        raise CatalogError(str(exc) or type(exc).__name__) from None
    if response.status != 200:
        raise CatalogError(f"HTTP {response.status} for {path}")
    try:
        return response.json()
    except ValueError:
        raise CatalogError(f"{path} did not answer JSON") from None


def ollama_models(url: str, timeout: float) -> list[Found]:
    """The models Ollama at ``url`` has, with what ``/api/show`` says of each."""
    with Client(url) as client:
        tags = get_json(client, "GET", "/api/tags", timeout)
        entries = tags.get("models") if isinstance(tags, dict) else None
        if not isinstance(entries, list):
            raise CatalogError("/api/tags is not Ollama's (no models list)")
        named = [e for e in entries if isinstance(e, dict) and (e.get("model") or e.get("name"))]
        with ThreadPoolExecutor(max_workers=min(8, len(named) or 1)) as pool:
            return list(pool.map(lambda e: _ollama_model(client, e, timeout), named))


def _ollama_model(client: Client, entry: dict[str, Any], timeout: float) -> Found:
    name = str(entry.get("model") or entry.get("name"))
    raw = entry.get("details")
    details: dict[str, Any] = raw if isinstance(raw, dict) else {}
    detail = " ".join(
        str(details[k]) for k in ("parameter_size", "quantization_level") if details.get(k)
    )
    try:
        show = get_json(client, "POST", "/api/show", timeout, {"model": name})
    except CatalogError:
        show = {}
    show = show if isinstance(show, dict) else {}
    caps = show.get("capabilities")
    return Found(
        name,
        size=positive(entry.get("size")),
        context=trained_context(show.get("model_info")),
        tools=("tools" in caps) if isinstance(caps, list) else None,
        detail=detail,
    )


def openai_models(base_url: str, timeout: float) -> tuple[str, list[Found]]:
    """What kind of server is at ``base_url`` (``.../v1``) and the models it lists."""
    root = root_of(base_url)
    with Client(root) as client:
        try:
            props = get_json(client, "GET", "/props", timeout)
        except CatalogError:
            props = None
        listed = get_json(client, "GET", base_url.rstrip("/")[len(root) :] + "/models", timeout)
    data = listed.get("data", "absent") if isinstance(listed, dict) else "absent"
    if data == "absent" or not isinstance(data, list | None):
        raise CatalogError("/v1/models is not an OpenAI model list")
    slot = props.get("default_generation_settings") if isinstance(props, dict) else None
    n_ctx = positive(slot.get("n_ctx")) if isinstance(slot, dict) else None
    template = str(props.get("chat_template") or "") if isinstance(props, dict) else ""
    kind = "llama-server" if isinstance(props, dict) and slot is not None else "openai"
    found = []
    for item in data or []:
        if not isinstance(item, dict) or not item.get("id"):
            continue
        raw = item.get("meta")
        meta: dict[str, Any] = raw if isinstance(raw, dict) else {}
        vllm = positive(item.get("max_model_len"))
        kind = "vllm" if vllm and kind == "openai" else kind
        found.append(
            Found(
                str(item["id"]),
                size=positive(meta.get("size")),
                context=n_ctx or vllm,
                # llama-server's template takes tools when it speaks of them (with --jinja);
                # other servers do not say.
                tools=True if "tool" in template else None,
            )
        )
    return kind, found


def _reason(exc: Exception) -> str:
    """The first line of ``exc`` without the errno (``[Errno 111] Connection refused``)."""
    text = re.sub(r"^\[Errno -?\d+\]\s*", "", str(exc).strip()) or type(exc).__name__
    return text.split("\n")[0][:160]

"""The model servers a batch may use: ``[pool]`` in ``localhand.toml``, or ``--host`` flags.

    [[pool.endpoints]]                 # or [[localhand.pool.endpoints]]
    url = "http://gpu1:11434"
    slots = 4                          # the server's OLLAMA_NUM_PARALLEL
    models = ["qwen3:8b"]              # optional; default: what the server lists

    [[pool.endpoints]]
    url = "http://gpu2:8000/v1"
    backend = "openai"                 # vLLM, llama-server: OpenAI-compatible
    slots = 16                         # optional for llama-server: it publishes its --parallel

``--host URL`` (repeatable) replaces the configured pool; ``--slots N`` gives those hosts N
slots each. Without either, the pool is the one server of ``--host``/``OLLAMA_HOST``. An
endpoint whose slots are not given has what its server publishes, else 1
(``localhand.batch.slots``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localhand.config.files import read_config, table_of, withheld_table
from localhand.config.settings import Settings
from localhand.errors import ConfigError

DEFAULT_OLLAMA = "http://127.0.0.1:11434"
POOL_BACKENDS = ("ollama", "openai")


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One model server and how many requests it generates at once."""

    url: str
    slots: int | None = None
    """Tasks it serves at once: Ollama's ``OLLAMA_NUM_PARALLEL``, vLLM's ``--max-num-seqs``,
    llama-server's ``--parallel``. ``None``: not given; the pool takes what the server
    publishes (llama-server's ``/props``), else 1."""
    backend: str = "ollama"
    """``ollama`` (native API) or ``openai`` (OpenAI-compatible: vLLM, llama-server)."""
    models: tuple[str, ...] | None = None
    """The models it serves; ``None``: ask the server when the batch starts."""

    def __post_init__(self) -> None:
        if self.slots is not None and self.slots < 1:
            raise ConfigError(f"endpoint {self.url}: slots must be at least 1, not {self.slots}")
        if self.backend not in POOL_BACKENDS:
            raise ConfigError(
                f"endpoint {self.url}: backend must be one of {', '.join(POOL_BACKENDS)}"
            )


def pool_endpoints(
    settings: Settings,
    hosts: list[str] | None = None,
    slots: int | None = None,
    *,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> list[Endpoint]:
    """The pool for a batch: ``hosts`` if given, else ``[pool]`` from localhand.toml, else the
    settings' one server."""
    backend = "openai" if settings.backend == "openai" else "ollama"
    if hosts:
        return _unique([Endpoint(_url(h, backend), slots, backend) for h in hosts])
    configured = read_pool(env, cwd)
    if configured:
        if slots is not None:
            raise ConfigError("--slots applies to --host endpoints; set slots in [pool] instead")
        return configured
    env = dict(os.environ) if env is None else env
    host = settings.host or (env.get("OLLAMA_HOST") if backend == "ollama" else None)
    if backend == "openai" and not host:
        raise ConfigError("--backend openai needs the server's URL: pass --host URL")
    return [Endpoint(_url(host or DEFAULT_OLLAMA, backend), slots, backend)]


def read_pool(env: dict[str, str] | None = None, cwd: Path | None = None) -> list[Endpoint]:
    """``[pool]`` (or ``[localhand.pool]``) of localhand.toml: the same file ``load_settings``
    reads, with trusted content only; [] when there is none, or the file is in the project
    (the model could have pointed the batch's conversations at a server of its own)."""
    config = read_config(env, cwd)
    if config is None:
        return []
    data, path = config.data, config.path
    pool = table_of(data, "pool")
    if pool is None or withheld_table(config, "pool", "endpoints"):
        return []
    where = f"{path} [pool]"
    if not isinstance(pool, dict) or not isinstance(pool.get("endpoints"), list):
        raise ConfigError(f"{where} must have an array of tables [[pool.endpoints]] with url")
    unknown = set(pool) - {"endpoints"}
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    return _unique(
        [
            _endpoint(item, f"{where} endpoint {n}")
            for n, item in enumerate(pool["endpoints"], start=1)
        ]
    )


def _endpoint(item: Any, where: str) -> Endpoint:
    if not isinstance(item, dict) or not isinstance(item.get("url"), str) or not item["url"]:
        raise ConfigError(f'{where}: needs url = "http://host:port"')
    unknown = set(item) - {"url", "slots", "backend", "models"}
    if unknown:
        raise ConfigError(
            f"{where}: unknown key(s) {', '.join(sorted(unknown))}; "
            "allowed: url, slots, backend, models"
        )
    slots, backend, models = item.get("slots"), item.get("backend", "ollama"), item.get("models")
    if slots is not None and (not isinstance(slots, int) or isinstance(slots, bool)):
        raise ConfigError(f"{where}: slots must be a whole number (OLLAMA_NUM_PARALLEL)")
    if models is not None and (
        not isinstance(models, list) or not all(isinstance(m, str) and m for m in models)
    ):
        raise ConfigError(f"{where}: models must be a list of model names")
    try:
        return Endpoint(
            _url(item["url"], str(backend)),
            slots,
            str(backend),
            tuple(models) if models is not None else None,
        )
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _url(host: str, backend: str) -> str:
    host = host.strip().rstrip("/")
    if "://" not in host:
        host = f"http://{host}"
    if backend == "ollama" and host.count(":") < 2:  # no port: Ollama's default one
        host += ":11434"
    return host


def _unique(endpoints: list[Endpoint]) -> list[Endpoint]:
    urls = [e.url for e in endpoints]
    doubled = sorted({u for u in urls if urls.count(u) > 1})
    if doubled:
        raise ConfigError(f"endpoint(s) given twice: {', '.join(doubled)}")
    return endpoints

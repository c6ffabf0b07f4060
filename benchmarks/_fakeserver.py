"""localhand's FakeOllama in a process of its own, with a control port, for the benchmarks.

    python benchmarks/_fakeserver.py      # prints {"url": ..., "control": ...} on one line

Every agent (localhand and the peers, each in its own virtual environment) talks to the same
server the same way: ``url`` is an Ollama look-alike (``/api/chat`` and ``/v1/chat/completions``).
The control port, on another socket, is how a benchmark drives it:

- ``POST /load`` ``{"mode": "noisy", "trajectory", "dialect", "workspace", "rates", "seed",
  "correlation"}`` answers each chat request with the noisy model (rates ``{}`` is a clean
  replay), or ``{"mode": "replay", "items": [...]}`` answers with the given replies in order.
  Loading clears the request log.
- ``GET /log``: the requests since the last load (``t`` is the arrival time, ``time.time()``),
  the replies given, the noisy model's state, and ``loads``: each time a chat request made the
  server (re)load the model, ``[name, num_ctx]`` (Ollama reloads on any change of ``num_ctx``,
  losing its prompt cache).
- ``GET /archive``: the logs of the jobs loaded with a ``job`` id, by id (taken once).
- ``POST /tool`` ``{"workspace", "name", "arguments"}``: runs one of localhand's default tools
  without coercing the arguments, so the peers' tools give the same results as localhand's.
- ``POST /quit``.

Running the server in its own process keeps its work out of the measured agent's process.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _noisy import NoisyModel, _to_item, wire

from localhand.testing import FakeOllama, Fault
from localhand.testing._fake_wire import _Handler
from localhand.tools import default_tools
from localhand.types import ToolCall

MODELS = {
    "qwen3:8b": {"context_length": 40960, "tools": True, "thinking": True},
}
SCRIPT_LENGTH = 1_000_000


class Controller:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.noisy: NoisyModel | None = None
        self.items: list[Any] = []
        self.given: list[Any] = []
        self.log: list[dict[str, Any]] = []
        self.registries: dict[str, Any] = {}
        self.job: str | None = None
        self.archive: dict[str, dict[str, Any]] = {}
        self.fake: FakeOllama | None = None
        self.loads_before = 0

    def load(self, spec: dict[str, Any]) -> None:
        self.keep()
        with self.lock:
            self.job = spec.get("job")
            self.log, self.given = [], []
            if spec["mode"] == "replay":
                self.noisy, self.items = None, list(spec["items"])
            else:
                self.noisy = NoisyModel(
                    spec["trajectory"],
                    spec["dialect"],
                    spec["workspace"],
                    rates=spec.get("rates"),
                    seed=int(spec.get("seed", 0)),
                    correlation=float(spec.get("correlation", 0.0)),
                )
            self.loads_before = len(self.fake.loads) if self.fake is not None else 0

    def __call__(self, body: dict[str, Any]) -> Any:
        """One chat request's script item."""
        noisy = self.noisy
        if noisy is not None:
            item = noisy(body)
            with self.lock:
                self.given.append(noisy.items[-1])
            return item
        with self.lock:
            if not self.items:
                return Fault.status(500, "benchmark fake: the replay ran out")
            raw = self.items.pop(0)
            self.given.append(raw)
        return _to_item(raw)

    def record(self, method: str, path: str, body: Any) -> None:
        with self.lock:
            self.log.append({"t": time.time(), "method": method, "path": path, "body": body})

    def snapshot(self) -> dict[str, Any]:
        loads = self.fake.loads if self.fake is not None else []
        with self.lock:
            return {
                "requests": list(self.log),
                "replies": list(self.given),
                "noisy": self.noisy.stats() if self.noisy else None,
                "loads": [list(load) for load in loads[self.loads_before :]],
            }

    def keep(self) -> None:
        """File the current job's log under its id (jobs loaded with a ``job`` id)."""
        if self.job is not None:
            snapshot = self.snapshot()
            with self.lock:
                self.archive[self.job] = snapshot
                self.job = None

    def take_archive(self) -> dict[str, Any]:
        self.keep()
        with self.lock:
            archive, self.archive = self.archive, {}
        return archive

    def tool(self, spec: dict[str, Any]) -> dict[str, Any]:
        workspace = spec["workspace"]
        with self.lock:
            registry = self.registries.get(workspace)
            if registry is None:
                registry = self.registries[workspace] = default_tools(workspace)
        started = time.perf_counter()
        tool = registry.get(spec["name"])
        if tool is None:
            result = registry.execute(ToolCall(spec["name"], spec.get("arguments") or {}))
            content, ok = result.content, result.ok
        else:
            try:  # the peer validated the arguments its own way: run them as given
                value = tool.function(**(spec.get("arguments") or {}))
                content = value.content if hasattr(value, "content") else str(value)
                ok = bool(getattr(value, "ok", True))
            except Exception as exc:
                content, ok = f"{type(exc).__name__}: {exc}", False
        return {"content": content, "ok": ok, "seconds": time.perf_counter() - started}


def main() -> int:
    controller = Controller()
    fake = FakeOllama([controller] * SCRIPT_LENGTH, models=MODELS)
    controller.fake = fake
    original_record = fake._record

    def record(method: str, path: str, body: Any, headers: dict[str, str]) -> None:
        controller.record(method, path, body)
        original_record(method, path, body, headers)

    fake._record = record  # type: ignore[method-assign]
    original_route = _Handler._route

    def route(self: _Handler, method: str) -> None:
        wire.path = self.path
        original_route(self, method)

    _Handler._route = route  # type: ignore[method-assign]
    original_setup = _Handler.setup

    def setup(self: _Handler) -> None:
        # The handler writes the headers and the body in separate sends; without TCP_NODELAY,
        # Nagle's algorithm and the client's delayed ACK hold each answer about 40 ms on a
        # kept-alive connection, which would swamp everything measured here. (The fake sets
        # it itself since; this keeps older versions of it measurable.)
        original_setup(self)
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    _Handler.setup = setup  # type: ignore[method-assign]
    done = threading.Event()

    class Control(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _answer(self, obj: Any) -> None:
            data = json.dumps(obj).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path == "/log":
                self._answer(controller.snapshot())
            elif self.path == "/archive":
                self._answer(controller.take_archive())
            else:
                self.send_error(404)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            if self.path == "/load":
                controller.load(body)
                self._answer({"ok": True})
            elif self.path == "/tool":
                self._answer(controller.tool(body))
            elif self.path == "/quit":
                self._answer({"ok": True})
                done.set()
            else:
                self.send_error(404)

    control = ThreadingHTTPServer(("127.0.0.1", 0), Control)
    control.daemon_threads = True
    threading.Thread(target=control.serve_forever, daemon=True).start()
    port = control.server_address[1]
    print(json.dumps({"url": fake.url, "control": f"http://127.0.0.1:{port}"}), flush=True)

    def watch_stdin() -> None:  # the benchmark closed our stdin (or died): stop
        sys.stdin.read()
        done.set()

    threading.Thread(target=watch_stdin, daemon=True).start()
    try:
        done.wait()
    finally:
        control.shutdown()
        fake.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The pool's configuration and its endpoints' life: dead, then alive again."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from localhand.batch import Endpoint, EndpointPool, pool_endpoints, read_pool
from localhand.config.settings import Settings
from localhand.errors import ConfigError, ModelTimeout, ServerUnavailable
from localhand.testing import FakeOllama


def config(tmp_path: Path, text: str) -> dict[str, str]:
    (tmp_path / "localhand.toml").write_text(text)
    return {"LOCALHAND_CONFIG": str(tmp_path / "localhand.toml")}


def test_the_pool_comes_from_localhand_toml(tmp_path: Path) -> None:
    env = config(
        tmp_path,
        '[localhand]\nmodel = "qwen3:8b"\n\n'
        '[[localhand.pool.endpoints]]\nurl = "gpu1"\nslots = 4\n\n'
        '[[localhand.pool.endpoints]]\nurl = "http://gpu2:8000/v1"\nbackend = "openai"\n'
        'models = ["Qwen/Qwen3-8B"]\n',
    )
    assert read_pool(env) == [
        Endpoint("http://gpu1:11434", 4),
        Endpoint("http://gpu2:8000/v1", None, "openai", ("Qwen/Qwen3-8B",)),  # slots: the server's
    ]
    assert pool_endpoints(Settings(), env=env) == read_pool(env)
    flags = pool_endpoints(Settings(), ["127.0.0.1:1234", "http://b:5"], 3, env=env)
    assert flags == [Endpoint("http://127.0.0.1:1234", 3), Endpoint("http://b:5", 3)]
    with pytest.raises(ConfigError, match="--slots applies to --host"):
        pool_endpoints(Settings(), None, 2, env=env)
    (tmp_path / "empty.toml").write_text("")  # named: the user's, trusted at first use
    none = {"LOCALHAND_CONFIG": str(tmp_path / "empty.toml"), "OLLAMA_HOST": "0.0.0.0:7"}
    assert pool_endpoints(Settings(), env=none) == [Endpoint("http://0.0.0.0:7")]
    absent = {"LOCALHAND_CONFIG": str(tmp_path / "absent.toml")}
    with pytest.raises(ConfigError, match=r"LOCALHAND_CONFIG names .*absent\.toml"):
        pool_endpoints(Settings(), env=absent)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[pool]\nendpoints = 3\n", r"array of tables \[\[pool.endpoints\]\]"),
        ("[[pool.endpoints]]\nslots = 2\n", "endpoint 1: needs url"),
        ('[[pool.endpoints]]\nurl = "a"\nslot = 2\n', "unknown key.*slot; allowed: url"),
        ('[[pool.endpoints]]\nurl = "a"\nslots = 0\n', "slots must be at least 1"),
        ('[[pool.endpoints]]\nurl = "a"\nslots = "4"\n', "slots must be a whole number"),
        ('[[pool.endpoints]]\nurl = "a"\nbackend = "vllm"\n', "backend must be one of"),
        ('[[pool.endpoints]]\nurl = "a"\n[[pool.endpoints]]\nurl = "a"\n', "given twice"),
        ("[pool\n", "cannot read"),
    ],
)
def test_a_bad_pool_says_what_is_wrong(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        read_pool(config(tmp_path, text))


def test_a_dead_endpoint_is_asked_again_and_comes_back() -> None:
    server = FakeOllama(models={"qwen3:8b": {}})
    port, url = server.port, server.url
    pool = EndpointPool([Endpoint(url)], revive_after=0.3)
    pool.discover()
    endpoint = pool.acquire("qwen3:8b")
    server.close()
    pool.mark_dead(endpoint, "connection refused")
    pool.release(endpoint)
    with pytest.raises(ServerUnavailable, match="every endpoint that serves qwen3:8b is down"):
        pool.acquire("qwen3:8b")
    with FakeOllama(models={"qwen3:8b": {}}, port=port):
        time.sleep(0.35)
        assert pool.acquire("qwen3:8b").url == url
        assert pool.status()[0].alive and pool.status()[0].busy == 1


def test_a_full_pool_waits_for_a_slot_and_times_out() -> None:
    pool = EndpointPool([Endpoint("http://a:1", 1, models=("m",))])
    held = pool.acquire("m")
    started = time.monotonic()
    with pytest.raises(ModelTimeout, match="no slot for m freed up"):
        pool.acquire("m", timeout=0.3)
    assert 0.25 < time.monotonic() - started < 2
    pool.release(held)
    assert pool.acquire("m", timeout=0.1) == held


def test_the_fake_server_has_slots_a_queue_and_a_latency() -> None:
    import threading

    import httpx

    body = {"model": "qwen3:8b", "messages": [{"role": "user", "content": "hi"}], "stream": False}
    answered: list[tuple[int, int]] = []  # (which request, its status), in the order answered
    # Each request is sent once the one before it is inside the server (so the order of
    # arrival is the order of sending, whatever the machine's load), and the latency is long
    # enough for the next to arrive while the first still holds the slot.
    with FakeOllama(
        ["a", "b", "c"], models={"qwen3:8b": {}}, slots=1, latency=1.0, max_queue=1
    ) as server:

        def ask(number: int) -> None:
            code = httpx.post(f"{server.url}/api/chat", json=body, timeout=10).status_code
            answered.append((number, code))

        threads = [threading.Thread(target=ask, args=(n,)) for n in range(3)]
        for number, thread in enumerate(threads):
            thread.start()
            deadline = time.monotonic() + 10
            while number < 2 and server.peak_requests <= number:
                assert time.monotonic() < deadline, f"request {number} never reached the server"
                time.sleep(0.005)
        for thread in threads:
            thread.join()
        # The third is turned away at once, the first is answered after its latency, and the
        # queued second only after the first: the order says it waited for the slot.
        assert answered == [(2, 503), (0, 200), (1, 200)]
        assert server.peak_requests == 2
        assert server.remaining == 1

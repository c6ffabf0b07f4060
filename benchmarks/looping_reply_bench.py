"""Time lost to one looping reply: before issue 22 (no ceiling), with the reply ceiling, and
with ``--watch-replies``, on the fake server at a real small model's speed.

The model falls into a loop in its first reply of a task (the same sentence over and over, as
the small Gemma model did in the issue); the next reply is a good call and the one after a
final answer. What is measured is the time from the looping request to its reply reaching the
loop (its ``model_request`` to its ``model_reply`` event): the time the user waits, and the
server works, for nothing.

- ``before``: no ceiling, so the fake, like llama-server, generates until the context window
  is full. At 30 tokens a second that is minutes, so it is *computed*: the fake runs the same
  request at full speed to count the tokens the window leaves, and the time is tokens / speed.
- ``ceiling``: the default ceiling of 4096 tokens stops the reply. Also minutes, so it is
  computed from the ceiling and the speed the fake *measured* when it generated a shorter
  ceiling's worth (``ceiling.measured``), which checks that the fake keeps its pace.
- ``watching``: measured, on both network backends: the loop is seen in the stream and the
  connection closed.

    python benchmarks/looping_reply_bench.py [--speed 30]

Prints one JSON object; the whole run takes about half a minute.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import emit, machine

from localhand import Agent
from localhand.events import EventBus, EventLog
from localhand.models.base import DEFAULT_MAX_REPLY_TOKENS
from localhand.models.ollama import OllamaModel
from localhand.models.openai_compat import OpenAICompatModel
from localhand.testing import FakeOllama

LOOP = "I will now write the file hello.txt with the text hello world. "
TASK = "Create a file named hello.txt containing the text: hello world"
MEASURED_CEILING = 256


def script(speed: float) -> list[dict[str, Any]]:
    arguments = {"path": "hello.txt", "content": "hello world\n"}
    call = {"function": {"name": "write_file", "arguments": arguments}}
    return [
        {"content": "Sure. ", "loop": LOOP, "token_rate": speed},
        {"content": "", "tool_calls": [call], "token_rate": speed},
        {"content": "Created hello.txt.", "token_rate": speed},
    ]


def looping_turn(model: Any) -> dict[str, Any]:
    """Run the task; the first turn's wait and what it produced."""
    bus, log = EventBus(), EventLog()
    bus.subscribe(log)
    with tempfile.TemporaryDirectory() as workspace:
        started = time.monotonic()
        result = Agent(model, Path(workspace), bus=bus).run(TASK)
        total = time.monotonic() - started
        created = (Path(workspace) / "hello.txt").is_file()
    request, reply = log.of_type("model_request")[0], log.of_type("model_reply")[0]
    return {
        "seconds": round(reply.ts - request.ts, 2),
        "tokens": reply.to_dict()["tokens_out"],
        "done_reason": reply.to_dict()["done_reason"],
        "run_seconds": round(total, 2),
        "run_ended": result.termination_reason,
        "file_created": created,
        "warnings": [e.to_dict()["message"] for e in log.of_type("warning")],
    }


def before(speed: float) -> dict[str, Any]:
    """No ceiling: the tokens the window leaves, counted at full speed; the time computed."""
    items = script(0)
    with FakeOllama(items) as fake:
        model = OllamaModel("qwen3:8b", fake.url, max_reply_tokens=None)
        turn = looping_turn(model)
        window = fake.chat_requests[0].options["num_ctx"]
    return {
        "seconds": round(turn["tokens"] / speed, 1),
        "tokens": turn["tokens"],
        "done_reason": turn["done_reason"],
        "computed": True,
        "how": f"no ceiling: the reply runs until the window (num_ctx {window}) is full; the "
        f"tokens are the fake's count at full speed, the seconds tokens / {speed:g}",
    }


def ceiling(speed: float) -> dict[str, Any]:
    """The default ceiling, computed from the speed measured under a smaller one."""
    with FakeOllama(script(speed)) as fake:
        turn = looping_turn(OllamaModel("qwen3:8b", fake.url, max_reply_tokens=MEASURED_CEILING))
    measured_speed = turn["tokens"] / turn["seconds"]
    return {
        "max_reply_tokens": DEFAULT_MAX_REPLY_TOKENS,
        "seconds": round(DEFAULT_MAX_REPLY_TOKENS / measured_speed, 1),
        "computed": True,
        "how": f"{DEFAULT_MAX_REPLY_TOKENS} tokens at the speed measured with a ceiling of "
        f"{MEASURED_CEILING} tokens",
        "measured": {
            "max_reply_tokens": MEASURED_CEILING,
            **turn,
            "tokens_per_s": round(measured_speed, 1),
        },
    }


def watching(speed: float) -> dict[str, Any]:
    """Measured, with the default ceiling, on both network backends."""
    out: dict[str, Any] = {}
    for name, kind in (("ollama", OllamaModel), ("openai", OpenAICompatModel)):
        with FakeOllama(script(speed)) as fake:
            model = kind("qwen3:8b", fake.url)
            model.watch_replies = True
            out[name] = {**looping_turn(model), "computed": False}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--speed", type=float, default=30.0, help="tokens a second")
    speed = parser.parse_args().speed
    started = time.monotonic()
    results = {"before": before(speed), "ceiling": ceiling(speed), "watching": watching(speed)}
    watched = max(case["seconds"] for case in results["watching"].values())
    emit(
        {
            "benchmark": "looping_reply",
            "speed_tokens_per_s": speed,
            "loop": LOOP,
            **results,
            "seconds_lost": {
                "before": results["before"]["seconds"],
                "ceiling": results["ceiling"]["seconds"],
                "watching": watched,
            },
            "bench_seconds": round(time.monotonic() - started, 1),
            "machine": machine(),
        }
    )


if __name__ == "__main__":
    main()

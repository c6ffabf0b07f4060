"""Every reply has a ceiling (issue 22): on the wire of every backend, honoured by the fake
servers as the real ones honour it, set by flag, variable or localhand.toml, and a reply cut
there runs nothing and is answered with a nudge the model can act on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_helpers import options_of
from localhand import Agent
from localhand.cli import main
from localhand.config.settings import Settings, load_settings
from localhand.errors import ConfigError
from localhand.events import EventBus, EventLog
from localhand.models.base import DEFAULT_MAX_REPLY_TOKENS
from localhand.models.embedded import EmbeddedModel
from localhand.models.ollama import OllamaModel
from localhand.models.openai_compat import OpenAICompatModel
from localhand.session.backend import select_backend
from localhand.testing import FakeOllama
from localhand.types import Result
from trust_helpers import pin

USER = [{"role": "user", "content": "Write hello.txt"}]
LOOP = "I will now write the file hello.txt with the text. "
CUT_CALL = '<tool_call>{"name": "write_file", "arguments": {"path": "hello.txt", "content": "'
"""A call the model began and then looped inside of: cut at the ceiling, it must never run."""


def call(name: str, **arguments: object) -> dict:
    return {"content": "", "tool_calls": [{"function": {"name": name, "arguments": arguments}}]}


@pytest.fixture(autouse=True)
def _no_ceiling_from_the_shell(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOCALHAND_MAX_REPLY_TOKENS", raising=False)


def test_the_default_ceiling_is_the_settings_default() -> None:
    assert Settings().max_reply_tokens == DEFAULT_MAX_REPLY_TOKENS == 4096


# -- the wire ---------------------------------------------------------------------------------
def test_ollama_sends_the_ceiling_as_num_predict() -> None:
    with FakeOllama(["a", "b", "c"]) as fake:
        OllamaModel("qwen3:8b", fake.url).chat(USER)
        OllamaModel("qwen3:8b", fake.url, max_reply_tokens=300).chat(USER)
        OllamaModel("qwen3:8b", fake.url, max_reply_tokens=None).chat(USER)
        sent = [request.options for request in fake.chat_requests]
    assert sent[0]["num_predict"] == 4096
    assert sent[1]["num_predict"] == 300
    assert "num_predict" not in sent[2], "None leaves the server's default"


def test_a_num_predict_in_the_users_options_wins() -> None:
    with FakeOllama(["a"]) as fake:
        OllamaModel("qwen3:8b", fake.url, options={"num_predict": 77}).chat(USER)
        assert fake.chat_requests[0].options["num_predict"] == 77


def test_the_simple_paths_stream_has_the_ceiling_too() -> None:
    with FakeOllama(["a", "b"]) as fake:
        list(OllamaModel("qwen3:8b", fake.url, max_reply_tokens=99).stream(USER))
        list(OpenAICompatModel("qwen3:8b", fake.url, max_tokens=98).stream(USER))
        assert fake.chat_requests[0].options["num_predict"] == 99
        assert fake.openai_requests[0].body["max_tokens"] == 98


def test_openai_compatible_sends_max_tokens() -> None:
    with FakeOllama(["a", "b"]) as fake:
        OpenAICompatModel("qwen3:8b", fake.url).chat(USER)
        OpenAICompatModel("qwen3:8b", fake.url, max_tokens=None).chat(USER)
        bodies = [request.body for request in fake.openai_requests]
    assert bodies[0]["max_tokens"] == 4096
    assert "max_tokens" not in bodies[1]


# -- the fake servers honour it ---------------------------------------------------------------
def test_the_fake_cuts_a_reply_that_loops_forever_at_num_predict() -> None:
    with FakeOllama([{"content": "Sure. ", "loop": LOOP}]) as fake:
        reply = OllamaModel("qwen3:8b", fake.url, max_reply_tokens=50).chat(USER)
    assert reply.done_reason == "length"
    assert reply.usage.completion_tokens == 50
    assert len(reply.content) == 50 * 4, "four characters a token, as the fake counts"
    assert reply.content.startswith("Sure. " + LOOP)


def test_the_fake_cuts_a_reply_that_loops_forever_at_max_tokens() -> None:
    with FakeOllama([{"content": "", "loop": LOOP}] * 2) as fake:
        model = OpenAICompatModel("qwen3:8b", fake.url, max_tokens=40)
        reply = model.chat(USER)
        chunks = list(model.stream(USER))
    assert (reply.done_reason, reply.usage.completion_tokens, len(reply.content)) == (
        "length",
        40,
        160,
    )
    assert chunks[-1].done_reason == "length"
    assert "".join(chunk.content for chunk in chunks) == reply.content


def test_without_a_ceiling_a_loop_runs_to_the_end_of_the_window() -> None:
    with FakeOllama([{"content": "", "loop": LOOP}]) as fake:
        reply = OllamaModel("qwen3:8b", fake.url, max_reply_tokens=None).chat(USER)
        window = fake.chat_requests[0].options["num_ctx"]
    assert reply.done_reason == "length"
    assert reply.usage.completion_tokens == window - reply.usage.prompt_tokens


def test_the_ceiling_counts_thinking_first_and_never_sends_half_a_call() -> None:
    thinking = "Let me consider the options once more. " * 20
    script = [{"thinking": thinking, **call("write_file", path="a", content="x")}]
    with FakeOllama(script) as fake:
        reply = OllamaModel("qwen3:8b", fake.url, max_reply_tokens=30).chat(USER)
    assert reply.done_reason == "length"
    assert (reply.thinking, reply.content, reply.tool_calls) == (thinking[:120], "", ())


def test_a_reply_within_the_ceiling_is_untouched() -> None:
    with FakeOllama([call("list_directory", path=".")]) as fake:
        reply = OllamaModel("qwen3:8b", fake.url, max_reply_tokens=4096).chat(USER)
    assert reply.done_reason == "stop"
    assert [c.name for c in reply.tool_calls] == ["list_directory"]


# -- the loop ---------------------------------------------------------------------------------
def run_agent(model: object, workspace: Path) -> tuple[Result, EventLog]:
    bus, log = EventBus(), EventLog()
    bus.subscribe(log)
    result = Agent(model, workspace, bus=bus).run("Create hello.txt containing hello world")  # type: ignore[arg-type]
    return result, log


SCRIPT = [
    {"content": CUT_CALL, "loop": "hello world hello world "},  # loops inside the call
    {"content": "I will write it. ", "loop": LOOP},  # loops in prose: not an answer
    call("write_file", path="hello.txt", content="hello world\n"),
    "Created hello.txt.",
]


@pytest.mark.parametrize("backend", ["ollama", "openai"])
def test_a_looping_reply_is_cut_runs_nothing_and_the_model_is_told_why(
    tmp_path: Path, backend: str
) -> None:
    with FakeOllama(SCRIPT) as fake:
        if backend == "ollama":
            model: object = OllamaModel("qwen3:8b", fake.url, max_reply_tokens=64)
        else:
            model = OpenAICompatModel("qwen3:8b", fake.url, max_tokens=64)
        result, log = run_agent(model, tmp_path)
        requests = fake.chat_requests if backend == "ollama" else fake.openai_requests
        ceilings = [
            r.options["num_predict"] if backend == "ollama" else r.body["max_tokens"]
            for r in requests
        ]
    assert ceilings == [64] * 4, "every request carries the ceiling"
    replies = log.of_type("model_reply")
    assert [r.to_dict()["done_reason"] for r in replies][:2] == ["length", "length"]
    assert [r.to_dict()["tokens_out"] for r in replies][:2] == [64, 64]
    tool_calls = log.of_type("tool_call")
    assert [e.to_dict()["args_summary"] for e in tool_calls] == [
        '{"path": "hello.txt", "content": "hello world\\n"}'
    ], "only the call that was not cut ran"
    nudges = [e.to_dict()["message"] for e in log.of_type("nudge")]
    assert len(nudges) == 2
    for message in nudges:
        assert message.startswith("Your last reply was cut off after 64 tokens")
        assert "one tool call" in message and "nothing in it was run" in message
    assert (tmp_path / "hello.txt").read_text() == "hello world\n"
    assert (result.termination_reason, result.output) == ("final_answer", "Created hello.txt.")


def test_prose_cut_at_the_ceiling_is_never_taken_for_the_final_answer(tmp_path: Path) -> None:
    script = [call("list_directory", path="."), {"content": "The answer is ", "loop": LOOP}]
    with FakeOllama([*script, "The folder is empty."]) as fake:
        result, log = run_agent(OllamaModel("qwen3:8b", fake.url, max_reply_tokens=64), tmp_path)
    assert result.output == "The folder is empty."
    assert len(log.of_type("nudge")) == 1


def test_a_model_that_thinks_to_the_ceiling_is_told_to_think_briefly(tmp_path: Path) -> None:
    script = [
        {"thinking": "Hmm, wait. " * 100, "content": "Done."},
        call("list_directory", path="."),
        "Nothing to do.",
    ]
    with FakeOllama(script) as fake:
        result, log = run_agent(OllamaModel("qwen3:8b", fake.url, max_reply_tokens=32), tmp_path)
    (nudge,) = log.of_type("nudge")
    assert "think briefly: your thinking counts toward the limit" in nudge.to_dict()["message"]
    assert result.output == "Nothing to do."


# -- where the ceiling comes from ---------------------------------------------------------------
def test_toml_then_variable_then_flag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "localhand.toml").write_text("max_reply_tokens = 2048\n")
    pin(tmp_path / "localhand.toml")  # as `localhand trust --yes` does
    assert load_settings({}, cwd=tmp_path).max_reply_tokens == 2048
    env = {"LOCALHAND_MAX_REPLY_TOKENS": "1024"}
    assert load_settings(env, cwd=tmp_path).max_reply_tokens == 1024
    options = options_of("run", ["x", "--max-reply-tokens", "512"])
    flagged = load_settings(env, cwd=tmp_path).with_overrides(
        max_reply_tokens=options["max_reply_tokens"]
    )
    assert flagged.max_reply_tokens == 512
    options = options_of("run", ["x"])
    assert options["max_reply_tokens"] is None, "absent: the settings decide"


@pytest.mark.parametrize(("toml", "text"), [("0", "0"), ("-1", "-1"), ('"abc"', "abc"),
                                            ("4.5", "4.5"), ("true", "true")])  # fmt: skip
def test_a_ceiling_that_is_not_a_positive_whole_number_is_refused(
    tmp_path: Path, toml: str, text: str
) -> None:
    (tmp_path / "localhand.toml").write_text(f"max_reply_tokens = {toml}\n")
    pin(tmp_path / "localhand.toml")  # as `localhand trust --yes` does
    wrong = r"max_reply_tokens.*(must be at least 1, not|is not a whole number)"
    with pytest.raises(ConfigError, match=wrong):
        load_settings({}, cwd=tmp_path)
    with pytest.raises(ConfigError, match=wrong):
        load_settings({"LOCALHAND_MAX_REPLY_TOKENS": text}, cwd=tmp_path / "none")


@pytest.mark.parametrize("command", [["run", "x"], ["plan", "--goal", "g"], ["batch", "t.jsonl"]])
def test_every_command_that_talks_to_a_model_takes_the_flag(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    options = options_of(command[0], [*command[1:], "--max-reply-tokens", "700"])
    assert options["max_reply_tokens"] == 700
    with pytest.raises(SystemExit):
        options_of(command[0], [*command[1:], "--max-reply-tokens", "0"])
    assert "--max-reply-tokens: must be at least 1, not 0" in capsys.readouterr().err


def test_every_backend_gets_the_ceiling_from_the_settings() -> None:
    ollama = select_backend(Settings(backend="ollama", model="x", max_reply_tokens=1000))
    openai = select_backend(Settings(backend="openai", model="x", max_reply_tokens=1001))
    assert isinstance(ollama, OllamaModel) and ollama.max_reply_tokens == 1000
    assert isinstance(openai, OpenAICompatModel) and openai.max_tokens == 1001
    import optional_deps

    optional_deps.tiny_gguf()  # skipped without the embedded extra, required in CI
    embedded = select_backend(Settings(backend="embedded", max_reply_tokens=1002))
    assert isinstance(embedded, EmbeddedModel) and embedded.max_tokens == 1002


def test_run_sends_the_flags_ceiling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "localhand.toml").write_text("max_reply_tokens = 2048\n")
    pin(tmp_path / "localhand.toml")  # as `localhand trust --yes` does
    with FakeOllama([call("list_directory", path="."), "Empty."]) as fake:
        code = main(
            ["run", "List the files", "--agentic", "--backend", "ollama", "--host", fake.url,
             "--max-reply-tokens", "333", "--json"]
        )  # fmt: skip
        sent = [request.options.get("num_predict") for request in fake.chat_requests]
    assert code == 3, capsys.readouterr().err  # unverified: a tool-loop run with no checks
    assert json.loads(capsys.readouterr().out)["termination_reason"] == "final_answer"
    assert sent == [333, 333]


# -- time limits name themselves ----------------------------------------------------------------
def test_a_request_that_runs_out_of_time_names_the_limit_it_hit(tmp_path: Path) -> None:
    from localhand.errors import ModelTimeout
    from localhand.run.guardrails import Limits
    from localhand.testing import Fault

    script = [Fault.hang(5), "loaded", Fault.hang(5), Fault.hang(5)]
    with FakeOllama(script) as fake:
        model = OllamaModel(
            "qwen3:8b", fake.url, request_timeout=0.3, first_request_timeout=0.3, max_attempts=1
        )
        with pytest.raises(ModelTimeout, match="the first request's time limit"):
            model.chat(USER)
        model.chat(USER)
        with pytest.raises(ModelTimeout, match="the per-request time limit: raise request_t"):
            model.chat(USER)
        model.request_timeout = 30
        bus, log = EventBus(), EventLog()
        bus.subscribe(log)
        result = Agent(model, tmp_path, bus=bus, limits=Limits(wall_clock_s=1)).run("x")
    assert result.termination_reason == "timeout"
    (guardrail,) = log.of_type("guardrail")
    assert guardrail.to_dict()["guardrail"] == "wall_clock"
    assert "(the task's wall clock: " in guardrail.to_dict()["reason"]

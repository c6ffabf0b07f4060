"""``ModelOptions``: the model and server flags, declared once, read back and put over the
settings as flags; every command that takes ``--model`` takes ``-m`` too."""

from __future__ import annotations

import argparse

import pytest

from cli_helpers import options_of
from localhand.cli import COMMAND_MODULES, command_named
from localhand.cli.args import Parser
from localhand.config.options import LOOP, ModelOptions
from localhand.config.settings import Settings


def test_the_options_read_back_are_those_given_and_none_is_not_given() -> None:
    parser = Parser(prog="test")
    ModelOptions.add_to(parser, LOOP)
    given = parser.parse_args(["-m", "qwen3:4b", "--request-timeout", "90", "--watch-replies"])
    options = ModelOptions.from_args(given)
    assert options == ModelOptions(model="qwen3:4b", request_timeout=90.0, watch_replies=True)


def test_applied_they_are_the_top_layer_and_say_so() -> None:
    below = Settings(model="from-file", host="http://file:11434", sources=(("model", "env X"),))
    settings = ModelOptions(model="from-flag", max_reply_tokens=512).applied_to(below)
    assert (settings.model, settings.max_reply_tokens) == ("from-flag", 512)
    assert settings.host == "http://file:11434"  # not given: the layer below stands
    assert settings.source_of("model") == settings.source_of("max_reply_tokens") == "flag"


def test_an_option_a_command_does_not_offer_is_none() -> None:
    parser = Parser(prog="test")
    ModelOptions.add_to(parser, ("host",), host={"action": "append", "dest": "hosts"})
    options = ModelOptions.from_args(parser.parse_args(["--host", "http://a"]))
    assert options == ModelOptions()  # a pool's hosts are not the settings' one host


def _option_strings(name: str) -> set[str]:
    parser = argparse.ArgumentParser(prog=name)
    command_named(name).arguments(parser)
    return {flag for action in parser._actions for flag in action.option_strings}


@pytest.mark.parametrize("name", sorted(set(COMMAND_MODULES)))
def test_every_command_that_takes_model_takes_m(name: str) -> None:
    flags = _option_strings(name)
    assert ("--model" in flags) == ("-m" in flags), flags


@pytest.mark.parametrize(
    ("command", "argv", "dest", "expected"),
    [
        ("run", ["task"], "model", "qwen3:4b"),
        ("plan", ["plan.yaml"], "model", "qwen3:4b"),
        ("batch", ["tasks.jsonl"], "model", "qwen3:4b"),
        ("eval", [], "models", ["qwen3:4b"]),
        ("mcp", [], "model", "qwen3:4b"),
        ("acp", [], "model", "qwen3:4b"),
        ("config", [], "model", "qwen3:4b"),
        ("serve", [], "model", "qwen3:4b"),
    ],
)
def test_m_is_model(command: str, argv: list[str], dest: str, expected: object) -> None:
    assert options_of(command, [*argv, "-m", "qwen3:4b"])[dest] == expected

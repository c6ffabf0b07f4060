"""The prefix warm before it is needed: while an editor's user types the first prompt, the
system prompt and tools a run opens with go to the llama-server slot the runs will hold, for
one token (``benchmarks/kept_cache_bench.py`` measures what it saves); without MCP servers'
tools (they start with the run). Best effort: a failure is logged, never shown."""

from __future__ import annotations

import logging
import threading
from contextlib import closing
from pathlib import Path

from localhand.config.settings import Settings
from localhand.models.openai_compat import OpenAICompatModel
from localhand.profiles import profile_for
from localhand.prompt.opening import opening_messages
from localhand.prompt.tool_text import known_window, sized_definitions
from localhand.run.agent_config import AgentConfig
from localhand.session.runner import build_model
from localhand.skills import find_skills
from localhand.tools import default_tools

_log = logging.getLogger("localhand")


def warming(settings: Settings, workspace: Path) -> None:
    """``warm_prefix`` on a thread of its own: the caller goes on."""
    args = (settings, workspace)
    threading.Thread(target=warm_prefix, args=args, daemon=True, name="localhand-warm").start()


def warm_prefix(settings: Settings, workspace: Path) -> None:
    """Send what a run in ``workspace`` opens with, up to its task, to the settings' server."""
    if settings.backend != "openai":  # Ollama, the embedded model: no slot to warm
        return
    try:
        model = build_model(settings, on_warning=_log.debug, on_status=_log.debug)
        assert isinstance(model, OpenAICompatModel)  # what the openai backend is
        with (
            closing(model),
            default_tools(workspace, *find_skills(workspace, _log.debug).tools()) as tools,
        ):
            definitions = sized_definitions(tools.definitions(), known_window(model))
            profile = model.profile or profile_for(model.name)
            config = AgentConfig(instruction_files=settings.instruction_files)
            opening = opening_messages(
                "", workspace, config, profile, definitions, model, _log.debug
            )
            model.warm([opening[0], {"role": "user", "content": ""}], definitions)  # to the task
    except Exception as exc:  # the run will prefill as it would have
        _log.debug("the prefix was not warmed: %s", exc)

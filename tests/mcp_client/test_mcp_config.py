"""MCP without servers: the configuration (JSON files, ``[mcp.servers.NAME]``, ``${VAR}``, a
file the model could have written), the naming rule, the flat schemas, the result text, and
the start-up budget (no ``mcp`` import unless a server is configured)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from localhand.config.settings import Settings, distrusting, load_settings, with_mcp_config
from localhand.errors import ConfigError
from localhand.mcp.config import McpServer, load_mcp_json, merge
from localhand.mcp.naming import VALID_NAME, offered_names
from localhand.mcp.results import cap, tool_result
from localhand.mcp.schema import arguments_model, flat_schema
from localhand.testing import FakeOllama
from test_startup_imports import loaded_modules
from trust_helpers import pin


def write(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data))
    return path


# -- configuration ------------------------------------------------------------------------------
def test_the_mcp_servers_json_of_other_clients_is_read_as_it_is(tmp_path: Path) -> None:
    config = write(
        tmp_path / "claude_desktop_config.json",
        {
            "mcpServers": {
                "time": {"command": "uvx", "args": ["mcp-server-time"], "alwaysAllow": ["x"]},
                "docs": {
                    "type": "http",
                    "url": "http://127.0.0.1:9000/mcp",
                    "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"},
                },
                "git": {
                    "command": "mcp-server-git",
                    "env": {"GIT_DIR": "${HOME}/x", "LEVEL": 3},
                    "tools": ["git_status"],
                    "exclude": ["git_commit"],
                    "trust": ["git_status"],
                    "timeout": 5,
                },
                "off": {"command": "nothing", "disabled": True},
            }
        },
    )
    env = {"DOCS_TOKEN": "t0ken", "HOME": "/home/me"}
    time, docs, git = load_mcp_json(config, env=env)
    assert time == McpServer("time", command="uvx", args=("mcp-server-time",), source=str(config))
    assert time.trust == "ask" and not time.trusted("get_current_time")  # alwaysAllow: not ours
    assert docs.url == "http://127.0.0.1:9000/mcp" and docs.command is None
    assert dict(docs.headers) == {"Authorization": "Bearer t0ken"}
    assert dict(git.env) == {"GIT_DIR": "/home/me/x", "LEVEL": "3"}
    assert git.offers("git_status") and not git.offers("git_log") and not git.offers("git_commit")
    assert git.trusted("git_status") and not git.trusted("git_log") and git.timeout_s == 5


@pytest.mark.parametrize(
    ("servers", "said"),
    [
        ({"x": {"args": []}}, "MCP server 'x' in .* needs either command"),
        ({"x": {"command": "a", "url": "http://h"}}, "not both"),
        ({"x": {"url": "ftp://h"}}, "url must start with http"),
        ({"x": {"command": "a", "type": "sse"}}, "type 'sse' is not supported"),
        ({"x": {"command": "a", "trust": "yes"}}, 'trust must be "ask", "allow" or a list'),
        ({"x": {"command": "a", "timeout": -1}}, "timeout must be a positive number"),
        ({"x": {"command": "a", "args": "mcp-server-time"}}, "args must be a list"),
        ({"x": {"command": "${NOT_SET_ANYWHERE}"}}, r"uses \$\{NOT_SET_ANYWHERE\}, which is not"),
    ],
)
def test_a_mistake_names_the_server_and_what_is_wrong(
    tmp_path: Path, servers: dict[str, object], said: str
) -> None:
    with pytest.raises(ConfigError, match=said):
        load_mcp_json(write(tmp_path / "mcp.json", {"mcpServers": servers}), env={})


def test_a_file_without_mcp_servers_says_how_it_should_look(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match='has no "mcpServers" object'):
        load_mcp_json(write(tmp_path / "mcp.json", {"servers_": {}}))
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(ConfigError, match="cannot read the MCP configuration"):
        load_mcp_json(tmp_path / "broken.json")


def named_config(tmp_path: Path, text: str) -> dict[str, str]:
    """A ``localhand.toml`` the user names (``LOCALHAND_CONFIG``), kept outside any project."""
    path = tmp_path / "config" / "localhand.toml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    return {"LOCALHAND_CONFIG": str(path)}


def project(tmp_path: Path) -> Path:
    """Where localhand starts: a folder that does not hold the named file."""
    folder = tmp_path / "project"
    folder.mkdir(exist_ok=True)
    return folder


def test_localhand_toml_servers_and_mcp_config_files_merge_by_name(tmp_path: Path) -> None:
    env = named_config(
        tmp_path,
        '[mcp.servers.time]\ncommand = "uvx"\nargs = ["mcp-server-time"]\ntrust = "allow"\n'
        '[mcp.servers.git]\ncommand = "mcp-server-git"\n',
    )
    settings = load_settings(env=env, cwd=project(tmp_path))
    assert [s.name for s in settings.mcp_servers] == ["time", "git"]
    assert settings.mcp_servers[0].trust == "allow"
    extra = write(tmp_path / "more.json", {"mcpServers": {"time": {"command": "other-time"}}})
    merged = with_mcp_config(settings, [extra]).mcp_servers
    assert [(s.name, s.command) for s in merged] == [
        ("git", "mcp-server-git"),
        ("time", "other-time"),
    ]
    assert merge((McpServer("a"),), (McpServer("a", command="b"),)) == (
        McpServer("a", command="b"),
    )


def test_an_unknown_key_in_localhand_toml_is_an_error(tmp_path: Path) -> None:
    env = named_config(tmp_path, '[mcp.servers.x]\ncommand = "a"\ntrusted = true\n')
    with pytest.raises(ConfigError, match=r"unknown key.*trusted"):
        load_settings(env=env, cwd=project(tmp_path))


def test_servers_in_a_toml_inside_the_workspace_are_not_started(tmp_path: Path) -> None:
    """The model writes in the workspace: a file it wrote must not start programs for it."""
    workspace = tmp_path / "config"  # the named file lies in the run's workspace
    env = named_config(tmp_path, '[mcp.servers.evil]\ncommand = "sh"\ntrust = "allow"\n')
    given = write(tmp_path / "mine.json", {"mcpServers": {"mine": {"command": "mine"}}})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    settings = with_mcp_config(load_settings(env=env, cwd=elsewhere), [given])
    kept, warnings = distrusting(settings, workspace)
    assert [s.name for s in kept.mcp_servers] == ["mine"]  # named by the person: kept
    assert "mcp_servers (programs started outside the sandbox" in warnings[0]
    outside, none = distrusting(settings, elsewhere)
    assert [s.name for s in outside.mcp_servers] == ["evil", "mine"] and none == []


def test_servers_in_a_found_toml_are_not_even_read(tmp_path: Path) -> None:
    """A found ``localhand.toml``, even trusted, names no server: its ``${VAR}``s stay unread."""

    (tmp_path / "localhand.toml").write_text('[mcp.servers.evil]\ncommand = "${NOT_SET}"\n')
    pin(tmp_path / "localhand.toml")
    said: list[str] = []
    assert load_settings(env={}, cwd=tmp_path, warn=said.append).mcp_servers == ()
    assert "mcp_servers" in said[0]


def test_a_secret_for_a_server_is_read_before_localhand_forgets_its_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_SERVICE_TOKEN", "ghp_0123456789abcdefghijklmnopqrstuvwxyz")
    config = write(
        tmp_path / "mcp.json",
        {"mcpServers": {"svc": {"command": "svc", "env": {"TOKEN": "${MY_SERVICE_TOKEN}"}}}},
    )
    settings = with_mcp_config(Settings(), [config])
    monkeypatch.delenv("MY_SERVICE_TOKEN")  # as forget_secrets() does right after
    assert dict(settings.mcp_servers[0].env) == {
        "TOKEN": "ghp_0123456789abcdefghijklmnopqrstuvwxyz"
    }


# -- names, schemas, results --------------------------------------------------------------------
def test_a_name_is_kept_unless_it_clashes_then_it_is_prefixed() -> None:
    warnings: list[str] = []
    names = offered_names(
        [("time", "now"), ("git", "status"), ("gh", "status"), ("fs", "read_file"), ("a.b", "x.y")],
        ["read_file", "run_command"],
        warnings.append,
    )
    assert names == ["now", "git__status", "gh__status", "fs__read_file", "x_y"]
    assert all(VALID_NAME.fullmatch(name) for name in names if name)
    assert len(warnings) == 1 and "'x.y'" in warnings[0]


def test_schemas_are_flattened_and_arguments_checked_against_them() -> None:
    schema = {
        "type": "object",
        "title": "Args",
        "$defs": {"Mode": {"type": "string", "enum": ["fast", "slow"], "title": "Mode"}},
        "properties": {
            "from": {"type": "string", "title": "From"},
            "mode": {"$ref": "#/$defs/Mode"},
            "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
            "tags": {"type": "array", "items": {"type": "string", "title": "Tag"}},
        },
        "required": ["from"],
    }
    flat = flat_schema(schema)
    assert flat == {
        "type": "object",
        "properties": {
            "from": {"type": "string"},
            "mode": {"type": "string", "enum": ["fast", "slow"]},
            "limit": {"type": "integer"},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["from"],
    }
    model, aliases = arguments_model("t", flat)
    parsed = model.model_validate({"from": "a", "limit": "5", "tags": ["x"]})
    values = {aliases[name]: getattr(parsed, name) for name in aliases}
    assert values == {"from": "a", "mode": None, "limit": 5, "tags": ["x"]}
    with pytest.raises(ValueError, match="mode"):
        model.model_validate({"from": "a", "mode": "medium"})


def test_results_are_text_with_the_rest_described_and_capped() -> None:
    from mcp.types import (
        BlobResourceContents,
        CallToolResult,
        EmbeddedResource,
        ImageContent,
        ResourceLink,
        TextContent,
        TextResourceContents,
    )

    result = CallToolResult(
        content=[
            TextContent(type="text", text="Found 2 files."),
            ImageContent(type="image", data="A" * 4000, mime_type="image/png"),
            ResourceLink(type="resource_link", uri="file:///a.txt", name="a.txt"),
            EmbeddedResource(
                type="resource",
                resource=TextResourceContents(uri="mem://n", mime_type="text/plain", text="note"),
            ),
            EmbeddedResource(
                type="resource",
                resource=BlobResourceContents(
                    uri="mem://b", mime_type="application/zip", blob="AAAA"
                ),
            ),
        ],
        structured_content={"count": 2},
    )
    text = tool_result(result, server="fs", tool="find").content
    assert text.splitlines() == [
        "Found 2 files.",
        "[image: image/png, 2.9 KiB; not shown, since the model here reads text only]",
        "[resource link: file:///a.txt (a.txt)]",
        "[resource mem://n (text/plain)]",
        "note",
        "[resource mem://b: application/zip, 3 bytes; binary data, not shown]",
        "[structured content]",
        '{"count":2}',
    ]
    said_twice = CallToolResult(
        content=[TextContent(type="text", text='{"count": 2}')], structured_content={"count": 2}
    )
    assert tool_result(said_twice, server="fs", tool="find").content == '{"count": 2}'
    failed = tool_result(CallToolResult(content=[], is_error=True), server="fs", tool="find")
    assert not failed.ok and failed.content == "find (MCP server 'fs') failed without a message"
    long = cap("a" * 100_000)
    assert len(long) < 16_200 and "84,000 characters cut" in long


# -- the start-up budget ------------------------------------------------------------------------
RUN_UNTIL_FIRST_REQUEST = (
    "def hook(event, args):\n"
    "    if event == 'socket.connect':\n"
    "        dump()\n"
    "sys.addaudithook(hook)\n"
    "sys.argv = ['localhand', *sys.argv[1:]]\n"
    "from localhand.cli import main\n"
    "main()\n"
)


@pytest.mark.parametrize("configured", [False, True])
def test_run_imports_mcp_only_when_a_server_is_configured(tmp_path: Path, configured: bool) -> None:
    import sys

    workspace = tmp_path / "ws"
    workspace.mkdir()
    extra: tuple[str, ...] = ()
    if configured:
        hostile = str(Path(__file__).parent / "test_mcp_hostile.py")
        server = {"command": sys.executable, "args": [hostile]}
        extra = ("--mcp-config", str(write(tmp_path / "mcp.json", {"mcpServers": {"h": server}})))
    with FakeOllama(script=[{"content": "Done."}], models={"qwen3:8b": {}}) as server:
        modules = loaded_modules(
            RUN_UNTIL_FIRST_REQUEST,
            tmp_path,
            *("run", "List the files.", "--agentic", "--workspace", str(workspace)),
            *("--model", "qwen3:8b", "--host", server.url, "--backend", "ollama", "--json"),
            *extra,
        )
        assert server.requests, "the run never reached the server"
    assert "localhand.run.agent" in modules  # the dump is from the run, not an early exit
    mcp = {m for m in modules if m.split(".")[0] in ("mcp", "mcp_types", "httpx2")}
    mcp |= {m for m in modules if m.startswith("localhand.mcp")}
    if configured:
        assert {"mcp", "localhand.mcp.client"} <= mcp
    else:
        assert mcp == set(), sorted(mcp)

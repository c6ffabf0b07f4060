"""MCP servers' tools as localhand ``Tool``s, for the run's lifetime, behind the approval policy.

    with mcp_registry(registry, settings.mcp_servers, policy="dangerous", approver=approver,
                      bus=bus, task_id=task.id) as tools:
        Agent(model, workspace, tools=tools, ...).run(...)

An MCP tool is not a workspace tool: it runs in another program, outside the sandbox, with
whatever reach that program has. So under ``--approve dangerous`` (the default) each call
needs a person's yes, unless the server's entry says ``trust = "allow"`` (or lists the tool in
``trust = [...]``); ``--approve always`` asks for every call, trusted or not, and ``never`` for
none. The question names the server, the tool and the arguments, and is announced as
``approval_needed`` / ``approval_decided`` events like a command's. A run without a person
refuses, and the model reads why.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from localhand.errors import ConfigError
from localhand.events import ApprovalNeeded, EventBus, Warning
from localhand.mcp.config import McpServer
from localhand.mcp.labels import call_risk
from localhand.mcp.naming import offered_names, shown
from localhand.mcp.offering import offer_within
from localhand.mcp.results import tool_result
from localhand.mcp.schema import arguments_model, description, flat_schema
from localhand.safety.approval.announce import ask_announced
from localhand.safety.approval.approver import ApprovalPolicy, Approver
from localhand.tools import Tool, ToolRegistry
from localhand.tools.deadline import mark_reached, remaining_s
from localhand.types import ToolResult

if TYPE_CHECKING:
    from pydantic import BaseModel

    from localhand.mcp.client import McpClients

MANY_TOOLS = 16
"""More MCP tools than this, and the run warns that small models do better with fewer."""


@dataclass(frozen=True)
class McpTool(Tool):
    """A tool of an MCP server: ``name`` is what the model calls, ``server`` the server's name
    (the ``tool_call`` event carries it)."""

    server: str = ""
    model: Any = field(default=None, repr=False, compare=False)
    """The pydantic model of the flat schema (``schema.arguments_model``)."""
    aliases: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)
    """The model's field names to the arguments' names."""

    @property
    def arguments_model(self) -> type[BaseModel]:
        return self.model

    def __call__(self, arguments: Mapping[str, Any]) -> ToolResult:
        """Check the arguments as for a built-in tool, then call the server with those the
        model gave (coerced): the server's own defaults stand for the rest."""
        values = self.validate(arguments)
        required = set(self.parameters["required"])
        sent = {}
        for field_name, value in values.items():
            name = self.aliases[field_name]
            if name in arguments and not (value is None and name not in required):
                sent[name] = value
        result: ToolResult = self.function(sent)
        return result


@dataclass(frozen=True, slots=True)
class McpGate:
    """Asks before an MCP call when the policy says so (see the module docstring)."""

    policy: ApprovalPolicy
    approver: Approver
    bus: EventBus
    task_id: str

    def refusal(
        self, server: McpServer, tool: str, arguments: dict[str, Any], annotations: Any = None
    ) -> str | None:
        """None when the call may go; otherwise the tool result that tells the model why not.
        ``annotations``: the tool's, as the server listed it (what the question calls it)."""
        if self.policy == "never" or (self.policy == "dangerous" and server.trusted(tool)):
            return None
        args = json.dumps(arguments, ensure_ascii=False, indent=1, default=str)
        command = f"MCP server '{server.name}', tool '{tool}', arguments:\n{args}"
        risk = call_risk(server.name, tool, annotations, always=self.policy == "always")
        reason = risk.reasons[0]
        needed = ApprovalNeeded(
            task_id=self.task_id,
            step_id=f"mcp:{server.name}/{tool}",
            command=command,
            risk=risk.level,
            reasons=list(risk.reasons),
            warning_message=f"MCP call: {reason}",
            description=f"{tool} on the MCP server {server.describe()}",
            added_by_agent=True,
        )
        approved = ask_announced(self.approver, risk, needed, self.bus.emit)
        if approved:
            return None
        why = self.approver.refusal
        return (
            f"Refused: calling {tool} of the MCP server '{server.name}' needs the user's "
            f"approval (approval policy '{self.policy}'), and {why}. Nothing was called. Do "
            "not retry it; do the task another way, or finish and tell the user which call "
            "you wanted to make."
        )


@contextmanager
def mcp_registry(
    registry: ToolRegistry,
    servers: Sequence[McpServer],
    *,
    policy: ApprovalPolicy,
    approver: Approver,
    bus: EventBus,
    task_id: str,
    window: Callable[[], int | None] | None = None,
) -> Iterator[ToolRegistry]:
    """``registry`` plus the tools of ``servers``, which run for the block and stop after it.
    Those past a tenth of the context ``window`` (asked once the servers listed their tools:
    it may cost the server a request) wait behind ``find_tools`` (``offering``).

    A server that cannot start raises ``ConfigError`` (with its stderr's tail)."""

    def warn(message: str) -> None:
        bus.emit(Warning(task_id=task_id, message=message))

    try:
        from localhand.mcp.client import McpClients  # the SDK, and anyio with it
    except ImportError as exc:
        names = ", ".join(server.name for server in servers)
        raise ConfigError(
            f"MCP servers are configured ({names}) but the MCP SDK is not installed "
            f"({exc.name} is missing): pip install 'localhand[mcp]'"
        ) from None
    with McpClients(servers, warn=warn) as clients:
        gate = McpGate(policy, approver, bus, task_id)
        tools = build_tools(clients, registry.names, gate, warn)
        yield offer_within(registry, tools, window() if window else None)


def build_tools(
    clients: McpClients,
    taken: Sequence[str],
    gate: McpGate,
    warn: Callable[[str], None],
) -> list[McpTool]:
    """The tools of ``clients``' servers that their entries offer, named for the model."""
    listed = [(server, tool) for server, tool in clients.tools() if server.offers(tool.name)]
    _warn_missing(clients, warn)
    names = offered_names([(s.name, t.name) for s, t in listed], taken, warn)
    tools = []
    for (server, listing), name in zip(listed, names, strict=True):
        if name is None:
            continue
        parameters = flat_schema(listing.input_schema)
        model, aliases = arguments_model(name, parameters)
        tools.append(
            McpTool(
                name=name,
                description=description(listing.description) or f"{listing.name} ({server.name})",
                parameters=parameters,
                function=_caller(clients, server, listing, gate),
                server=server.name,
                model=model,
                aliases=aliases,
            )
        )
    if len(tools) > MANY_TOOLS:
        warn(
            f"the model is offered {len(tools)} tools from MCP servers besides its own; small "
            "models choose better among few: keep the ones the task needs with "
            "tools = [...] (or exclude = [...]) in each server's entry"
        )
    return tools


def _caller(
    clients: McpClients, server: McpServer, listing: Any, gate: McpGate
) -> Callable[[dict[str, Any]], ToolResult]:
    # loads anyio, sniffio, typing_extensions: only when needed
    from localhand.mcp.client import McpCallError

    tool = listing.name
    annotations = getattr(listing, "annotations", None)  # readOnlyHint: what the question says

    def call(arguments: dict[str, Any]) -> ToolResult:
        refused = gate.refusal(server, tool, arguments, annotations)
        if refused is not None:
            return ToolResult(refused, ok=False)
        timeout = server.timeout_s
        left = remaining_s()  # the task's wall clock, when the loop set one
        clock = left is not None and left < timeout
        if clock:
            timeout = max(left or 0.0, 0.001)
        started = time.monotonic()
        try:
            result = clients.call(server.name, tool, arguments, timeout)
        except McpCallError as exc:
            if clock and time.monotonic() - started >= timeout:
                mark_reached()  # cut by the task's wall clock: the run is out of time
            return ToolResult(str(exc), ok=False)
        return tool_result(result, server=server.name, tool=tool)

    return call


def _warn_missing(clients: McpClients, warn: Callable[[str], None]) -> None:
    """A name in ``tools`` or ``exclude`` that the server does not have is most likely a typo."""
    tools = clients.tools()
    have = {s.name: {tool.name for server, tool in tools if server is s} for s in clients.servers}
    for server in clients.servers:
        name = server.name
        for listed in (*(server.tools or ()), *server.exclude):
            if listed not in have[name]:
                available = ", ".join(sorted(have[name])[:20])
                warn(
                    f"MCP server '{name}' has no tool {shown(listed)} (named in its tools or "
                    f"exclude); it has: {available}"
                )


__all__ = ["McpGate", "McpTool", "build_tools", "mcp_registry"]

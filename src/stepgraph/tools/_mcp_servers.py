"""Where MCP servers enter the engine; the `mcp` SDK is imported only when a server is named."""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from stepgraph.exceptions import ToolDefinitionError
from stepgraph.model import McpServerSpec
from stepgraph.tools._registry import ToolRegistry


def as_spec(server: McpServerSpec | str | dict[str, Any]) -> McpServerSpec:
    """A server spec from a spec, a mapping, a URL or a command line."""
    if isinstance(server, McpServerSpec):
        return server
    if isinstance(server, dict):
        return McpServerSpec.model_validate(server)
    if server.startswith(("http://", "https://")):
        return McpServerSpec(url=server)
    command, *args = server.split()
    return McpServerSpec(command=command, args=args)


def start_servers(
    servers: Iterable[McpServerSpec], registry: ToolRegistry, base_dir: Path
) -> ExitStack:
    """Start the servers and register their tools; the returned stack stops them.

    If one server fails to start, or a tool's name is taken, the ones started are stopped.
    """
    stack = ExitStack()
    servers = list(servers)
    if not servers:
        return stack
    try:  # the SDK is an extra: a task without servers never needs it
        from stepgraph.tools._mcp import connect_servers
    except ImportError as e:
        raise ToolDefinitionError(
            f"MCP servers need the 'mcp' package ({e}): pip install 'stepgraph[mcp]'"
        ) from e
    try:
        for item in connect_servers(servers, base_dir, stack):
            registry.register(item)
    except BaseException:
        stack.close()
        raise
    return stack

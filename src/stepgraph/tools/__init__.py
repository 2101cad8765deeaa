"""Tools: the @tool decorator, the registry, the built-ins with their reverse checks, MCP servers.

The expression language of `calculate` is the public module `stepgraph.tools.expression`.
"""

from stepgraph.tools._builtins import BUILTIN_TOOLS, QuantityLike, calculate, unit_convert
from stepgraph.tools._mcp_servers import as_spec, start_servers
from stepgraph.tools._mcp_tool import McpTool, McpToolDefinition, mcp_definitions, recorded_tools
from stepgraph.tools._registry import (
    UNKNOWN,
    Inferrer,
    Reverser,
    Tool,
    ToolRegistry,
    load_plugin,
    tool,
)
from stepgraph.tools._reverse import reverse_calculate, reverse_convert


def default_registry() -> ToolRegistry:
    """A registry holding the built-in tools."""
    return ToolRegistry(BUILTIN_TOOLS)


__all__ = [
    "BUILTIN_TOOLS",
    "UNKNOWN",
    "Inferrer",
    "McpTool",
    "McpToolDefinition",
    "QuantityLike",
    "Reverser",
    "Tool",
    "ToolRegistry",
    "as_spec",
    "calculate",
    "default_registry",
    "load_plugin",
    "mcp_definitions",
    "recorded_tools",
    "reverse_calculate",
    "reverse_convert",
    "start_servers",
    "tool",
    "unit_convert",
]

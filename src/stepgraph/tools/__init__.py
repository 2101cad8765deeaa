"""Tools: the @tool decorator, the registry, and the built-ins `calculate` and `unit_convert`."""

from stepgraph.tools._builtins import BUILTIN_TOOLS, QuantityLike, calculate, unit_convert
from stepgraph.tools._registry import UNKNOWN, Tool, ToolRegistry, load_plugin, tool


def default_registry() -> ToolRegistry:
    """A registry holding the built-in tools."""
    return ToolRegistry(BUILTIN_TOOLS)


__all__ = [
    "BUILTIN_TOOLS",
    "UNKNOWN",
    "QuantityLike",
    "Tool",
    "ToolRegistry",
    "calculate",
    "default_registry",
    "load_plugin",
    "tool",
    "unit_convert",
]

"""Tools: the @tool decorator, the registry, and the built-ins with their reverse checks.

The expression language of `calculate` is the public module `stepgraph.tools.expression`.
"""

from stepgraph.tools._builtins import BUILTIN_TOOLS, QuantityLike, calculate, unit_convert
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
    "QuantityLike",
    "Reverser",
    "Tool",
    "ToolRegistry",
    "calculate",
    "default_registry",
    "load_plugin",
    "reverse_calculate",
    "reverse_convert",
    "tool",
    "unit_convert",
]

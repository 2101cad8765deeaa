"""Tools: the @tool decorator, the registry, the built-ins `calculate` and `unit_convert`
with their reverse checks, and (in `stepgraph.tools.expression`) the expression language.
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

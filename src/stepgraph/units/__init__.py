"""One pint unit registry for the whole engine, tuned for data-transfer arithmetic.

Two ideas, two rooms: `_registry.py` builds the registry (a bit is information, not a
plain number: why, there) and reads units and quantities, count nouns and dollar signs
included; `_display.py` writes numbers and units for people. `_convert.py` converts,
naming the value as people read it when it cannot, so it sits above both.
"""

from stepgraph.units._convert import compatible, convert
from stepgraph.units._display import (
    DISPLAY_DIGITS,
    HUGE_INT_BITS,
    MAX_DEPTH,
    display_data,
    format_alike,
    format_number,
    format_pair,
    format_unit,
    format_value,
    round_significant,
)
from stepgraph.units._registry import (
    Quantity,
    dimension_name,
    dollars,
    is_count_unit,
    normalize,
    parse_quantity,
    parse_unit,
    quantity,
    registry,
)

__all__ = [
    "DISPLAY_DIGITS",
    "HUGE_INT_BITS",
    "MAX_DEPTH",
    "Quantity",
    "compatible",
    "convert",
    "dimension_name",
    "display_data",
    "dollars",
    "format_alike",
    "format_number",
    "format_pair",
    "format_unit",
    "format_value",
    "is_count_unit",
    "normalize",
    "parse_quantity",
    "parse_unit",
    "quantity",
    "registry",
    "round_significant",
]

"""Conversion between units: the one place where the registry meets the display.

A failed conversion names the value as people read it (`format_value`), so this sits
above both the registry and the display instead of tying the two into a circle.
"""

from __future__ import annotations

from typing import Any

import pint

from stepgraph.exceptions import UnitError
from stepgraph.units._display import format_value
from stepgraph.units._registry import dimension_name, is_count_unit, parse_unit, registry


def compatible(value: Any, unit: str) -> bool:
    """Tell whether a value can be expressed in `unit` (a plain number in any count)."""
    target = parse_unit(unit)
    if isinstance(value, pint.Quantity):
        if value.units.dimensionless and is_count_unit(target):
            return True
        return bool(value.is_compatible_with(target))
    return bool(target.dimensionless) or is_count_unit(target)


def convert(value: Any, unit: str) -> Any:
    """Express `value` in `unit`; raise `UnitError` naming both dimensions when impossible.

    A plain number asked for in a count (``nights``) stays a plain number: the count
    names what it counts, and the number keeps working in checks like ``${n} * ${per}``.
    """
    target = parse_unit(unit)
    if is_count_unit(target) and not (
        isinstance(value, pint.Quantity) and not value.units.dimensionless
    ):
        return value
    quantity = value if isinstance(value, pint.Quantity) else registry().Quantity(value)
    try:
        return quantity.to(target)
    except pint.DimensionalityError as e:
        raise UnitError(
            f"cannot convert {format_value(value)} ({dimension_name(quantity)}) "
            f"to '{unit}' ({dimension_name(target)})"
        ) from e

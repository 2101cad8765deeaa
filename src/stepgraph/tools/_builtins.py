"""The built-in tools: `calculate` and `unit_convert`."""

from __future__ import annotations

import math
from typing import Annotated, Any

import pint
from pydantic import BeforeValidator, WithJsonSchema

import stepgraph.tools.expression as expr
from stepgraph.exceptions import CalculationError, UnitError, UnitsDoNotCancelError
from stepgraph.references import find_references
from stepgraph.tools._registry import UNKNOWN, tool
from stepgraph.tools._reverse import reverse_calculate_args, reverse_convert
from stepgraph.units import (
    Quantity,
    compatible,
    convert,
    format_value,
    parse_quantity,
    parse_unit,
    quantity,
)


def _quantity_like(value: Any) -> Any:
    if isinstance(value, Quantity):
        return value
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        return parse_quantity(value)
    raise ValueError(f"expected a number or a number with a unit, got {type(value).__name__}")


QuantityLike = Annotated[
    Any,
    BeforeValidator(_quantity_like),
    WithJsonSchema(
        {
            "anyOf": [{"type": "number"}, {"type": "string"}],
            "description": "a number, or a number with a unit such as '2.5 TB'",
        }
    ),
]


def _expression(value: Any) -> expr.Expression:
    try:
        return expr.Expression.from_data(value)
    except CalculationError as e:
        raise ValueError(str(e)) from e


ExpressionArg = Annotated[
    expr.Expression,
    BeforeValidator(_expression),
    WithJsonSchema({"type": "string", "description": "an arithmetic expression"}),
]


def _infer_calculate(args: dict[str, Any]) -> Any:
    expression = args.get("expression")
    if expression is UNKNOWN or not isinstance(expression, str | expr.Expression):
        return UNKNOWN
    text = expression.text if isinstance(expression, expr.Expression) else expression
    expr.check_syntax(text)
    bound = expression if isinstance(expression, expr.Expression) else expr.Expression(text)
    # A text input (an actual value here, not a prototype) used as a number is a plan
    # problem before the run, even when another reference's unit is still unknown.
    known = {ref: value for ref, value in bound.bindings.items() if value is not UNKNOWN}
    expr.check_operands(expr.Expression(text, known))
    if any(bound.bindings.get(ref.text, UNKNOWN) is UNKNOWN for ref in find_references(text)):
        return UNKNOWN  # some upstream unit is unknown before the run
    try:
        return expr.evaluate(bound)
    except CalculationError as e:
        if next(find_references(text), None) is None and not isinstance(
            e.__cause__, ArithmeticError
        ):
            # A constant the evaluator's own rules refuse (a limit, a name) is refused the
            # same way at run time; an arithmetic failure (1 / 0) is the step's, when it runs.
            raise
        # Units, not magnitudes, decide both: a prototype's unit is the real one.
        if isinstance(e, UnitsDoNotCancelError):
            if any(ref.step != "inputs" for ref in find_references(text)):
                raise expr.without_magnitude(e) from None  # a step's prototype is 1 of its unit
            raise
        if isinstance(e.__cause__, pint.DimensionalityError):
            raise
        return UNKNOWN  # prototypes have magnitude 1; only their units mean anything


@tool(infer=_infer_calculate, reverse=reverse_calculate_args, expression_args=("expression",))
def calculate(expression: ExpressionArg) -> Any:
    """Evaluate arithmetic with units, e.g. '${rate} * 6 h * 0.9' or 'ceil(${a} / ${b})'.

    Use it for every computation; do not compute in your head. Supports + - * / ** %,
    parentheses, comparisons, ceil floor round min max abs sqrt log, numbers with
    units (6 h, 2.5 TB, 450 Mbit/s) and references to earlier steps, which keep
    their units.

    Args:
        expression: The expression; ${id} references stand for the exact values of the steps.
    """
    return expr.evaluate(expr.Expression.from_data(expression))


def _convertible(value: Any, to_unit: str) -> None:
    """Raise naming both dimensions, and the fix: combining quantities is calculate's job."""
    try:
        convert(value, to_unit)
    except UnitError as e:
        raise UnitError(
            f"{e}; unit_convert only changes the unit of one kind of quantity: to get a "
            "rate, a time or a size from others, divide or multiply them with calculate "
            "(e.g. '2.5 TB / 6 h')"
        ) from e


def _infer_unit_convert(args: dict[str, Any]) -> Any:
    to_unit, from_unit, value = args.get("to_unit"), args.get("from_unit"), args.get("value")
    if not isinstance(to_unit, str):
        return UNKNOWN
    target = parse_unit(to_unit)
    try:
        given = UNKNOWN if value is UNKNOWN else _quantity_like(value)
    except ValueError:
        return UNKNOWN  # a wrong type, reported by the schema check
    source = parse_unit(from_unit) if isinstance(from_unit, str) and from_unit else None
    if isinstance(given, Quantity):
        if source is not None and not compatible(given, str(from_unit)):
            raise UnitError(f"value {format_value(given)} does not match from_unit '{from_unit}'")
        _convertible(given, to_unit)
    elif source is not None:
        _convertible(quantity(1, source), to_unit)
    elif given is not UNKNOWN:
        raise UnitError("value has no unit: give 'from_unit', or a value like '2.5 TB'")
    return quantity(1, target)


@tool(name="unit_convert", infer=_infer_unit_convert, reverse=reverse_convert)
def unit_convert(value: QuantityLike, to_unit: str, from_unit: str = "") -> Any:
    """Convert a value between units of the same dimension, e.g. 450 Mbit/s to MB/s.

    Knows data sizes in bits and bytes with decimal and binary prefixes (b, B, kB, MB,
    GB, TB, PB, KiB..PiB, Mbit, Gb), rates (bps, kbps, Mbps, Gbps, Mbit/s, MB/s, GB/s)
    and time (s, min, h, day). Lowercase b is bit, uppercase B is byte.

    Args:
        value: The number, or a number with its unit ('2.5 TB'), or a ${reference}.
        to_unit: The unit to convert to.
        from_unit: The unit of a bare number; must match the value's own unit if it has one.
    """
    if not isinstance(value, Quantity):
        if not from_unit:
            raise UnitError("value has no unit: give 'from_unit', or a value like '2.5 TB'")
        value = quantity(value, parse_unit(from_unit))
    elif from_unit and not compatible(value, from_unit):
        raise UnitError(f"value {format_value(value)} does not match from_unit '{from_unit}'")
    converted = convert(value, to_unit)
    if not math.isfinite(float(converted.magnitude)):  # 1e300 TB in bits
        raise UnitError(f"{format_value(value)} in {to_unit} is no finite number (an overflow)")
    return converted


BUILTIN_TOOLS = (calculate, unit_convert)

__all__ = ["BUILTIN_TOOLS", "QuantityLike", "calculate", "unit_convert"]

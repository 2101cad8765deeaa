"""How the built-in tools check their results backwards: undo the operation that made it.

Each tool states its own reverse check (`@tool(reverse=...)`); these are the built-ins'.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from typing import Any

import pint

from stepgraph.exceptions import CalculationError, StepgraphError
from stepgraph.model import Verdict, VerdictKind
from stepgraph.tools.expression import (
    TOLERANCE,
    Expression,
    close,
    describe_operand,
    evaluate_node,
    has_units,
    is_number,
    parse,
    units_do_not_cancel,
)
from stepgraph.units import (
    convert,
    format_alike,
    format_value,
    normalize,
    parse_quantity,
    parse_unit,
    quantity,
)


def _at_least(left: Any, right: Any, tolerance: float) -> bool:
    """Left >= right, forgiving a relative rounding error of `tolerance`."""
    return bool(left >= right) or close(left, right, tolerance)


def _verdict(step: str, passed: bool, description: str, **values: Any) -> Verdict:
    return Verdict(
        kind=VerdictKind.REVERSE,
        step=step,
        passed=passed,
        description=description,
        values={name: format_value(value) for name, value in values.items()},
        tolerance=TOLERANCE,
    )


def _rounding_check(step: str, name: str, n: Any, a: Any, b: Any) -> Verdict:
    # One more or one fewer in the result's own unit: ceil(5 GB / (2 MB/s)) is in seconds.
    one = quantity(1, str(n.units)) if isinstance(n, pint.Quantity) else 1
    covered = normalize(n * b)
    # One unit for the message, the divisor's as it is written: 3 x 962.28 GB = 2,886.84 GB.
    if name == "ceil":
        fewer = normalize((n - one) * b)
        passed = _at_least(covered, a, TOLERANCE) and not _at_least(fewer, a, TOLERANCE)
        count, per, total, shown, other = format_alike([n, b, a, covered, fewer])
        text = f"ceil: {count} x {per} = {shown} >= {total}, and one fewer ({other}) falls short"
    else:
        more = normalize((n + one) * b)
        passed = _at_least(a, covered, TOLERANCE) and not _at_least(a, more, TOLERANCE)
        count, per, total, shown, other = format_alike([n, b, a, covered, more])
        text = f"floor: {count} x {per} = {shown} <= {total}, and one more ({other}) exceeds it"
    return _verdict(step, passed, text, result=n, numerator=a, denominator=b)


_OPERATIONS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Div: operator.truediv,
    ast.Mult: operator.mul,
    ast.Add: operator.add,
    ast.Sub: operator.sub,
}
_INVERSES: dict[type, tuple[str, Callable[[Any, Any], Any]]] = {
    ast.Div: ("x", lambda result, right: result * right),
    ast.Mult: ("/", lambda result, right: result / right),
    ast.Add: ("-", lambda result, right: result - right),
    ast.Sub: ("+", lambda result, right: result + right),
}


def reverse_calculate(step: str, expression: Any, result: Any) -> Verdict | None:
    """Undo the outermost operation of a bound expression; None if it has no inverse."""
    bound = Expression.from_data(expression)
    parsed = parse(bound.text, bound.bindings)
    node = parsed.tree.body
    undoable = isinstance(node, ast.Call | ast.BinOp)
    if undoable and not is_number(result):  # a recorded result (an old journal) may be text
        raise CalculationError(f"the result is {describe_operand(result)}, not a number")
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("ceil", "floor")
        and len(node.args) == 1
        and isinstance(node.args[0], ast.BinOp)
        and isinstance(node.args[0].op, ast.Div)
    ):
        inner = node.args[0]
        a, b = evaluate_node(inner.left, parsed), evaluate_node(inner.right, parsed)
        if has_units(a / b) or has_units(result):  # an old journal's 8 GB/Mbps: no count
            argument = bound.text.strip().partition("(")[2].rstrip()[:-1].strip()
            error = units_do_not_cancel(node.func.id, argument, a / b)
            return _verdict(step, False, str(error), result=result, numerator=a, denominator=b)
        return _rounding_check(step, node.func.id, result, a, b)
    if isinstance(node, ast.BinOp) and type(node.op) in _INVERSES:
        symbol, inverse = _INVERSES[type(node.op)]
        left, right = evaluate_node(node.left, parsed), evaluate_node(node.right, parsed)
        if isinstance(node.op, ast.Mult) and normalize(right) == 0:
            return None
        try:
            back = normalize(inverse(result, right))
        except OverflowError:  # integers too large to divide into a float: check forwards
            forward = normalize(_OPERATIONS[type(node.op)](left, right))
            expected, shown = format_alike([result, forward])
            return _verdict(
                step,
                close(forward, result),
                f"recomputed forwards (too large to undo): {shown}, expected {expected}",
                result=result,
                recomputed=forward,
            )
        # The operands first: what they recompute is written in their units.
        value, operand, expected, shown = format_alike([result, right, left, back])
        return _verdict(
            step,
            close(back, left),
            f"{value} {symbol} {operand} = {shown}, expected {expected}",
            result=result,
            operand=right,
            recomputed=back,
            expected=left,
        )
    return None


def reverse_convert(step: str, args: dict[str, Any], result: Any) -> Verdict:
    """Convert a conversion's result back to the original unit and compare."""
    original = args["value"]
    if isinstance(original, str):
        original = parse_quantity(original)
    if not isinstance(original, pint.Quantity):
        original = quantity(original, parse_unit(args["from_unit"]))
    try:
        back = convert(result, str(original.units))
        passed = close(back, original)
    except StepgraphError:
        back, passed = None, False
    # The result in the unit it was converted to; what is compared, in the original's.
    expected, shown = format_alike([original, back])
    if back is None:
        shown = "impossible"
    return _verdict(
        step,
        passed,
        f"{format_value(result)} converted back is {shown}, expected {expected}",
        result=result,
        recomputed=back,
        expected=original,
    )


def reverse_calculate_args(step: str, args: dict[str, Any], result: Any) -> Verdict | None:
    """`calculate`'s reverse hook: undo the outermost operation of its expression."""
    return reverse_calculate(step, args["expression"], result)

"""The `calculate` tool: arithmetic with units, on simpleeval.

simpleeval over asteval: we want one expression, not a Python subset with loops and
function definitions, and simpleeval lets us replace each AST node handler, so
attributes, subscripts, strings and unknown names can be refused outright, while
asteval would have to be trimmed down from a much larger surface.
"""

from __future__ import annotations

import ast
import math
import operator
import re
import time
from collections.abc import Callable
from typing import Any

import pint
import simpleeval

from stepgraph.exceptions import CalculationError, UnitError
from stepgraph.references import REFERENCE_PATTERN
from stepgraph.units import normalize, parse_unit, registry

MAX_EXPRESSION_LENGTH = 2_000
MAX_EXPONENT = 1_000
MAX_INTEGER_BITS = 4_096
TIME_LIMIT_SECONDS = 1.0

# "6 h", "2.5TB", "1e3 MB" -> "6 * h": a number followed by a name is a quantity.
_IMPLICIT_PRODUCT = re.compile(r"(?<![\w.])(\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)\s*(?=[A-Za-z_µ°])")


def _magnitude_op(func: Callable[[float], Any]) -> Callable[[Any], Any]:
    def apply(value: Any) -> Any:
        if isinstance(value, pint.Quantity):
            if value.dimensionless:
                return func(value.to("dimensionless").magnitude)
            return registry().Quantity(func(value.magnitude), value.units)
        return func(value)

    return apply


def _round(value: Any, digits: int = 0) -> Any:
    return _magnitude_op(lambda number: round(number, int(digits)))(value)


def _log(value: Any, base: float = math.e) -> float:
    value = normalize(value)
    if isinstance(value, pint.Quantity):
        raise CalculationError(f"log needs a dimensionless number, got {value:~}")
    return math.log(value, base)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "abs": abs,
    "ceil": _magnitude_op(math.ceil),
    "floor": _magnitude_op(math.floor),
    "log": _log,
    "max": max,
    "min": min,
    "round": _round,
    "sqrt": lambda value: value**0.5,
}


def _guard_number(value: Any) -> Any:
    magnitude = value.magnitude if isinstance(value, pint.Quantity) else value
    if isinstance(magnitude, int) and magnitude.bit_length() > MAX_INTEGER_BITS:
        raise CalculationError(f"intermediate result too large (over {MAX_INTEGER_BITS} bits)")
    return value


def _power(base: Any, exponent: Any) -> Any:
    exponent = normalize(exponent)
    if isinstance(exponent, pint.Quantity):
        raise CalculationError("an exponent must be a plain number")
    if abs(exponent) > MAX_EXPONENT:
        raise CalculationError(f"exponent {exponent} is larger than the limit of {MAX_EXPONENT}")
    return _guard_number(operator.pow(base, exponent))


def _checked(op: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    return lambda left, right: _guard_number(op(left, right))


_OPERATORS: dict[type, Callable[..., Any]] = {
    ast.Add: _checked(operator.add),
    ast.Sub: _checked(operator.sub),
    ast.Mult: _checked(operator.mul),
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: _power,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Gt: operator.gt,
    ast.Lt: operator.lt,
    ast.GtE: operator.ge,
    ast.LtE: operator.le,
    ast.Not: operator.not_,
}


def _refuse(what: str) -> Callable[[ast.AST], Any]:
    def handler(node: ast.AST) -> Any:
        raise CalculationError(f"{what} is not allowed in an expression")

    return handler


class _Evaluator(simpleeval.SimpleEval):  # type: ignore[misc]  # simpleeval ships no types
    def __init__(self, names: dict[str, Any], deadline: float) -> None:
        super().__init__(operators=_OPERATORS, functions=FUNCTIONS, names=names)
        self.deadline = deadline
        self.nodes[ast.Attribute] = _refuse("attribute access")
        self.nodes[ast.Subscript] = _refuse("subscripting")
        self.nodes[ast.Name] = self._name
        self.nodes[ast.Constant] = self._constant
        for refused in ("JoinedStr", "FormattedValue", "Lambda", "ListComp", "DictComp"):
            node_type = getattr(ast, refused, None)
            if node_type is not None:
                self.nodes[node_type] = _refuse(refused)

    def _eval(self, node: ast.AST) -> Any:
        if time.monotonic() > self.deadline:
            raise CalculationError(f"expression took longer than {TIME_LIMIT_SECONDS} s")
        return super()._eval(node)

    def _constant(self, node: ast.Constant) -> Any:
        if isinstance(node.value, bool) or not isinstance(node.value, int | float):
            raise CalculationError(f"only numbers are allowed, not {node.value!r}")
        return node.value

    def _name(self, node: ast.Name) -> Any:
        if node.id in self.names:
            return self.names[node.id]
        if node.id in self.functions:
            raise CalculationError(f"'{node.id}' is a function: call it, e.g. {node.id}(x)")
        try:
            unit = parse_unit(node.id)
        except UnitError:
            allowed = ", ".join(sorted(FUNCTIONS))
            raise CalculationError(
                f"unknown name '{node.id}': use numbers, units (6 h, 2.5 TB), "
                f"${{step}} references and the functions {allowed}"
            ) from None
        return registry().Quantity(1, unit)

    def _eval_call(self, node: ast.Call) -> Any:
        if not isinstance(node.func, ast.Name) or node.func.id not in self.functions:
            name = node.func.id if isinstance(node.func, ast.Name) else ast.unparse(node.func)
            raise CalculationError(
                f"call to '{name}' is not allowed (allowed: {', '.join(sorted(FUNCTIONS))})"
            )
        if node.keywords:
            raise CalculationError("keyword arguments are not allowed in an expression")
        func = self.functions[node.func.id]
        return func(*(self._eval(arg) for arg in node.args))


_ALLOWED_NODES = (
    ast.Expression,
    ast.BinOp,
    ast.UnaryOp,
    ast.Compare,
    ast.BoolOp,
    ast.Call,
    ast.Name,
    ast.Constant,
    ast.Load,
    ast.operator,
    ast.unaryop,
    ast.cmpop,
    ast.boolop,
    ast.IfExp,
)


def parse(expression: str) -> ast.Expression:
    """Check length and syntax, make implicit unit products explicit, and parse."""
    if len(expression) > MAX_EXPRESSION_LENGTH:
        raise CalculationError(
            f"expression is {len(expression):,} characters; the limit is {MAX_EXPRESSION_LENGTH:,}"
        )
    if REFERENCE_PATTERN.search(expression):
        raise CalculationError(f"unresolved reference in {expression!r}")
    prepared = _IMPLICIT_PRODUCT.sub(r"\1 * ", expression).strip()
    try:
        return ast.parse(prepared, mode="eval")
    except SyntaxError as e:
        raise CalculationError(f"invalid expression syntax: {e.msg}") from e


def check_syntax(expression: str) -> None:
    """Refuse, without evaluating, what `evaluate` would refuse (references allowed)."""
    tree = parse(REFERENCE_PATTERN.sub(" ref_ ", expression))
    evaluator = _Evaluator({"ref_": 1}, math.inf)
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED_NODES):
            evaluator.nodes.get(type(node), _refuse(type(node).__name__))(node)
        elif isinstance(node, ast.Constant):
            evaluator._constant(node)
        elif isinstance(node, ast.Name) and node.id not in FUNCTIONS:
            evaluator._name(node)
        elif isinstance(node, ast.Call) and (
            not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS
        ):
            evaluator._eval_call(node)


def evaluate(expression: str) -> Any:
    """Evaluate an expression whose references have been resolved to literals."""
    return evaluate_node(parse(expression).body)


def evaluate_node(node: ast.AST) -> Any:
    """Evaluate one parsed (sub)expression."""
    evaluator = _Evaluator({}, time.monotonic() + TIME_LIMIT_SECONDS)
    try:
        result = evaluator._eval(node)
    except CalculationError:
        raise
    except pint.DimensionalityError as e:
        raise CalculationError(f"units do not match: {e}") from e
    except (ArithmeticError, ValueError, TypeError) as e:
        raise CalculationError(f"{type(e).__name__}: {e}") from e
    except simpleeval.InvalidExpression as e:
        raise CalculationError(str(e)) from e
    return normalize(result)

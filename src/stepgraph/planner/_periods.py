"""A time multiplied by a time or a measure: a count of its periods.

"20 minutes a day, six days a week, for four weeks" is read as three durations; a plan
that multiplies them (as a person would: 20 × 6 × 4 = 480 minutes) gets min·day·week, a
unit no answer is in (GSM8K train 46 reported 1,920 as 0.0272 week³; 2853's "4 weeks of
episodes" and 5053's "two hours ... sixty minutes" were refused for time²). No quantity
of a GSM8K goal is a time squared: where a product's times multiply into one, each
coarser time is the number of its periods (6 days: 6), and the finest keeps its unit.
Only where one time is strictly the finest; anything else is left for the checks. A
time that multiplies a sum of money or a measure with no time in it is a count too ("$13
each visit ... over 4 weeks" is 52 USD, not 52 USD·week); a plain number times a time (3
workers for 8 hours) stays a time, and a rate times a time converts.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from typing import Any

import pint

from stepgraph.executor import static_outputs
from stepgraph.model import StepGraph
from stepgraph.planner._lines import replace_node
from stepgraph.tools import ToolRegistry

_REFERENCE = re.compile(r"\$\{(?P<name>(?:inputs\.)?\w+)\}")
_TIME = "[time]"


def count_periods(
    plan: StepGraph, values: Mapping[str, Any], repairs: list[str], tools: ToolRegistry
) -> StepGraph:
    """The plan with each product of times rewritten so; each one said in `repairs`."""
    for _ in plan.steps:  # one step at a time: a rewritten step changes the units after it
        units = _units(plan, values, tools)
        for at, step in enumerate(plan.steps):
            expression = step.args.get("expression") if step.tool == "calculate" else None
            if not isinstance(expression, str):
                continue
            rewritten = _counted(expression, units)
            if rewritten is None:
                continue
            counted, text = rewritten
            repairs.append(
                f"step '{step.id}': {', '.join(counted)} counted as numbers of their periods; "
                "a time times a time, or a sum of money or a measure times a time, is no "
                "quantity"
            )
            steps = list(plan.steps)
            steps[at] = step.model_copy(update={"args": {**step.args, "expression": text}})
            plan = plan.model_copy(update={"steps": steps})
            break
        else:
            return plan
    return plan


def _units(plan: StepGraph, values: Mapping[str, Any], tools: ToolRegistry) -> dict[str, Any]:
    units = {
        f"inputs.{name}": value.units
        for name, value in values.items()
        if isinstance(value, pint.Quantity)
    }
    for step_id, output in static_outputs(plan, tools, values).items():
        if isinstance(output, pint.Quantity):
            units[step_id] = output.units
    return units


def _counted(expression: str, units: Mapping[str, Any]) -> tuple[list[str], str] | None:
    """The factors counted and the expression rewritten, where a product needs it."""
    names: dict[str, str] = {}

    def placeholder(match: re.Match[str]) -> str:
        return names.setdefault(match.group("name"), f"__ref{len(names)}")

    try:
        tree = ast.parse(_REFERENCE.sub(placeholder, expression), mode="eval")
    except SyntaxError:
        return None
    prototypes = {value: 1 * units[name] for name, value in names.items() if name in units}
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    divisors: dict[str, str] = {}  # a placeholder of its own -> the period it counts
    counted: list[ast.expr] = []
    for product in _products(tree):
        times = [(factor, unit) for factor in product if (unit := _time(factor, prototypes))]
        if len(times) == 1 and _timeless_measure(
            [f for f in product if f is not times[0][0]], prototypes
        ):
            finest = 0.0  # "$15 a visit ... over 4 weeks": the weeks count visits
        elif len(times) >= 2:
            finest = min(_seconds(unit) for _, unit in times)
            if sum(_seconds(unit) == finest for _, unit in times) > 1:
                continue  # two times of the finest unit: which one is counted, nothing says
        else:
            continue
        for factor, unit in times:
            if _seconds(unit) != finest:
                divisor = f"__period{len(divisors)}"
                divisors[divisor] = f"(1 {unit:D})"
                counted.append(factor)
                replace_node(factor, ast.BinOp(factor, ast.Div(), ast.Name(divisor)), parents)
    if not counted:
        return None
    shown = [ast.unparse(factor) for factor in counted]
    text = ast.unparse(tree)
    for divisor, period in divisors.items():
        text = text.replace(divisor, period)
    for name, value in sorted(names.items(), key=lambda item: -len(item[1])):
        text = text.replace(value, f"${{{name}}}")
        shown = [part.replace(value, f"${{{name}}}") for part in shown]
    return shown, text


def _time(node: ast.expr, prototypes: Mapping[str, Any]) -> Any:
    """The unit of `node` where it is a time (a reference, or a sum of them), else None."""
    try:
        value = _evaluate(node, prototypes)
    except (pint.PintError, KeyError, TypeError, ValueError, ZeroDivisionError):
        return None
    is_time = isinstance(value, pint.Quantity) and str(value.dimensionality) == _TIME
    return value.units if is_time else None


def _timeless_measure(factors: list[ast.expr], prototypes: Mapping[str, Any]) -> bool:
    """Whether `factors` multiply into a measure with no time in it (money, litres, km).

    Such a measure times a time (USD·week, l·d) is no quantity anyone asks for; a plain
    number times a time (3 workers for 8 hours: 24 h) and a rate times a time are.
    """
    product: Any = 1
    try:
        for factor in factors:
            product = product * _evaluate(factor, prototypes)
    except (pint.PintError, KeyError, TypeError, ValueError, ZeroDivisionError):
        return False
    if not isinstance(product, pint.Quantity) or product.dimensionless:
        return False
    return "[time]" not in product.dimensionality


def _evaluate(node: ast.expr, prototypes: Mapping[str, Any]) -> Any:
    """`node` on prototypes (magnitude 1, real units): arithmetic on names and numbers only."""
    if isinstance(node, ast.Name):
        return prototypes[node.id]
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub | ast.Mult | ast.Div):
        left, right = _evaluate(node.left, prototypes), _evaluate(node.right, prototypes)
        if isinstance(node.op, ast.Add | ast.Sub):
            return left + right if isinstance(node.op, ast.Add) else left - right
        return left * right if isinstance(node.op, ast.Mult) else left / right
    raise ValueError(ast.unparse(node))


def _products(tree: ast.AST) -> list[list[ast.expr]]:
    """The factors of each product in `tree` that is not itself a factor of a larger one."""
    found = []
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and _is_product(node) and not _is_product(parents.get(node)):
            found.append(_factors(node))
    return found


def _is_product(node: ast.AST | None) -> bool:
    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult)


def _factors(node: ast.expr) -> list[ast.expr]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return [*_factors(node.left), *_factors(node.right)]
    return [node]


def _seconds(unit: Any) -> float:
    return float((1 * unit).to("second").magnitude)

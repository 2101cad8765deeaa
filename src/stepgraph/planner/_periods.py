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
from typing import Any, NamedTuple

import pint

from stepgraph.executor import static_outputs
from stepgraph.model import StepGraph
from stepgraph.planner._lines_source import replace_node
from stepgraph.tools import ToolRegistry

_REFERENCE = re.compile(r"\$\{(?P<name>(?:inputs\.)?\w+)\}")
_TIME = "[time]"


def count_periods(
    plan: StepGraph, values: Mapping[str, Any], repairs: list[str], tools: ToolRegistry
) -> StepGraph:
    """The plan with each product of times rewritten so; each one said in `repairs`."""
    for _ in plan.steps:  # one step at a time: a rewritten step changes the units after it
        units = plan_units(plan, values, tools)
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


def plan_units(plan: StepGraph, values: Mapping[str, Any], tools: ToolRegistry) -> dict[str, Any]:
    """The unit of each input and step whose value is known before the run (1: a plain number)."""
    known = {f"inputs.{name}": value for name, value in values.items()}
    known.update(static_outputs(plan, tools, values))
    return {name: _unit(value) for name, value in known.items() if _unit(value) is not None}


def _unit(value: Any) -> Any:
    if isinstance(value, pint.Quantity):
        return value.units
    is_number = isinstance(value, int | float) and not isinstance(value, bool)
    return 1 if is_number else None


class Placeheld(NamedTuple):
    """An expression parsed with each reference a plain name (``${inputs.a}`` -> ``__ref0``)."""

    tree: ast.Expression
    names: dict[str, str]  # the reference's name -> its placeholder

    def prototypes(self, units: Mapping[str, Any]) -> dict[str, Any]:
        """Each placeholder as one of its reference's unit, where that is known."""
        return {value: 1 * units[name] for name, value in self.names.items() if name in units}

    def placeholder(self, name: str) -> str:
        return self.names.setdefault(name, f"__ref{len(self.names)}")

    def text(self) -> str:
        """The tree written back, each placeholder its reference again."""
        text = ast.unparse(self.tree)
        for name, value in sorted(self.names.items(), key=lambda item: -len(item[1])):
            text = text.replace(value, f"${{{name}}}")
        return text


def placeheld(expression: str) -> Placeheld | None:
    """`expression` parsed with its references as names, or None where it is no Python."""
    names: dict[str, str] = {}
    text = _REFERENCE.sub(
        lambda match: names.setdefault(match.group("name"), f"__ref{len(names)}"), expression
    )
    try:
        return Placeheld(ast.parse(text, mode="eval"), names)
    except SyntaxError:
        return None


def _counted(expression: str, units: Mapping[str, Any]) -> tuple[list[str], str] | None:
    """The factors counted and the expression rewritten, where a product needs it."""
    if (held := placeheld(expression)) is None:
        return None
    tree, names = held
    prototypes = held.prototypes(units)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    divisors: dict[str, str] = {}  # a placeholder of its own -> the period it counts
    counted: list[ast.expr] = []
    for product in products(tree):
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
    text = held.text()
    for divisor, period in divisors.items():
        text = text.replace(divisor, period)
    for name, value in sorted(names.items(), key=lambda item: -len(item[1])):
        shown = [part.replace(value, f"${{{name}}}") for part in shown]
    return shown, text


def _time(node: ast.expr, prototypes: Mapping[str, Any]) -> Any:
    """The unit of `node` where it is a time (a reference, or a sum of them), else None."""
    value = quantity_of(node, prototypes)
    return value.units if value is not None and str(value.dimensionality) == _TIME else None


def quantity_of(node: ast.expr, prototypes: Mapping[str, Any]) -> Any:
    """`node` worked out on prototypes, where it is a quantity (None: plain, or unknown)."""
    try:
        value = evaluate_on(node, prototypes)
    except (pint.PintError, KeyError, TypeError, ValueError, ZeroDivisionError):
        return None
    return value if isinstance(value, pint.Quantity) else None


def _timeless_measure(factors: list[ast.expr], prototypes: Mapping[str, Any]) -> bool:
    """Whether `factors` multiply into a measure with no time in it (money, litres, km).

    Such a measure times a time (USD·week, l·d) is no quantity anyone asks for; a plain
    number times a time (3 workers for 8 hours: 24 h) and a rate times a time are.
    """
    product: Any = 1
    try:
        for factor in factors:
            product = product * evaluate_on(factor, prototypes)
    except (pint.PintError, KeyError, TypeError, ValueError, ZeroDivisionError):
        return False
    if not isinstance(product, pint.Quantity) or product.dimensionless:
        return False
    return "[time]" not in product.dimensionality


def evaluate_on(node: ast.expr, prototypes: Mapping[str, Any]) -> Any:
    """`node` on prototypes (magnitude 1, real units): arithmetic on names and numbers only."""
    if isinstance(node, ast.Name):
        return prototypes[node.id]
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub | ast.Mult | ast.Div):
        left, right = evaluate_on(node.left, prototypes), evaluate_on(node.right, prototypes)
        if isinstance(node.op, ast.Add | ast.Sub):
            return left + right if isinstance(node.op, ast.Add) else left - right
        return left * right if isinstance(node.op, ast.Mult) else left / right
    raise ValueError(ast.unparse(node))


def products(tree: ast.AST) -> list[list[ast.expr]]:
    """The factors of each product in `tree` that is not itself a factor of a larger one."""
    found = []
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and _is_product(node) and not _is_product(parents.get(node)):
            found.append(chain(node, ast.Mult))
    return found


def _is_product(node: ast.AST | None) -> bool:
    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult)


def chain(node: ast.expr, operator: type[ast.operator]) -> list[ast.expr]:
    """The operands of a chain of one operator (`a * b * c`: a, b, c), in order."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, operator):
        return [*chain(node.left, operator), *chain(node.right, operator)]
    return [node]


def _seconds(unit: Any) -> float:
    return float((1 * unit).to("second").magnitude)

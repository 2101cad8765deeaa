"""A conversion done by hand with a named constant, whose name and why say which units.

A program converts with a named factor: ``km_per_mile = 1.609344  # one mile is 1.609344
kilometres``, then ``km = miles * km_per_mile``. The constant is a plain number, so the
goal's 26.2 miles stayed miles: "42.1648 mi" for "How many kilometres is a 26.2 mile
marathon?", and every check passed (a new user's question, 2026-12-06); with the step's
unit declared as km, the units converted the miles a second time (67.86 km). Where a step
is one value times or over such a constant, the value is in a unit the constant's words
name, the constant's words name one other unit of that kind, and the constant is what
converts the one into the other (to 0.1%: people write 1.60934 and 28.35), the step is
that value converted by the units, and the repair is said. A constant no step uses then
is dropped with it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

import pint

from stepgraph.exceptions import StepgraphError
from stepgraph.model import Constant, StepGraph
from stepgraph.planner._hand import ROUNDED, measure_unit, operand_units
from stepgraph.references import find_references
from stepgraph.tools import ToolRegistry
from stepgraph.units import format_unit, parse_unit, quantity

# Words that read as a unit but are nearly always English ("a" is an annum, "in" an inch).
_ENGLISH = {"a", "in", "at", "per", "to", "is"}
_REF = r"\$\{(?:inputs\.)?\w+\}"
# `x * ${inputs.c}`, `x / ${inputs.c}`, `${inputs.c} * x`
_BY_CONSTANT = re.compile(
    rf"^\s*(?:(?P<operand>{_REF})\s*(?P<op>[*/])\s*\$\{{inputs\.(?P<constant>\w+)\}}"
    rf"|\$\{{inputs\.(?P<first>\w+)\}}\s*\*\s*(?P<second>{_REF}))\s*$"
)


def undo_named_factors(
    plan: StepGraph, values: Mapping[str, Any], repairs: list[str], tools: ToolRegistry
) -> StepGraph:
    """The plan with each step that converts by a named constant converted by the units.

    `values` are the plan's inputs and constants, as read.
    """
    named = {name: found for name, c in plan.constants.items() if (found := _named(name, c))}
    if not named:
        return plan
    units = operand_units(plan, values, tools)
    steps, changed = [], False
    for step in plan.steps:
        expression = step.args.get("expression") if step.tool == "calculate" else None
        match = _BY_CONSTANT.match(expression) if isinstance(expression, str) else None
        if match is None:
            steps.append(step)
            continue
        constant = match.group("constant") or match.group("first")
        operand = match.group("operand") or match.group("second")
        multiplies = match.group("op") != "/"
        target = _target(
            values.get(constant), named.get(constant, []), units.get(_key(operand)), multiplies
        )
        declared = step.expect_unit
        if target is None or (declared and not _same_unit(declared, target)):
            steps.append(step)
            continue
        unit = declared or format_unit(target)
        changed = True
        repairs.append(
            f"step '{step.id}': the constant {constant} ({plan.constants[constant].value}) "
            f"converted {_key(operand)} to {unit} by hand, as its name and why say; the "
            "units convert it"
        )
        if "unit_convert" in tools.names():  # converted back by the reflection stage
            call = {"tool": "unit_convert", "args": {"value": operand, "to_unit": unit}}
        else:
            call = {"args": {**step.args, "expression": operand}}
        steps.append(step.model_copy(update={**call, "expect_unit": unit}))
    if not changed:
        return plan
    places = [*(s.args for s in steps), *(c.expression for c in plan.checks), plan.answer or ""]
    used = {r.path[0] for r in find_references(places) if r.step == "inputs" and r.path}
    kept = {name: c for name, c in plan.constants.items() if name not in named or name in used}
    return plan.model_copy(update={"steps": steps, "constants": kept})


def _key(operand: str) -> str:
    """`${inputs.x}` as `inputs.x`, `${step}` as `step`: how `operand_units` names them."""
    return operand[2:-1]


def _named(name: str, item: Constant) -> list[pint.Unit]:
    """The units of measure a plain constant's name and why name, or [] (not plain)."""
    value = item.value
    if isinstance(value, bool) or not isinstance(value, int | float):
        return []
    found: dict[str, pint.Unit] = {}
    for word in re.findall(r"[a-z]+", f"{name.replace('_', ' ')} {item.why}".casefold()):
        unit = measure_unit(word) if len(word) >= 2 and word not in _ENGLISH else None
        if unit is not None:
            found.setdefault(str(unit), unit)
    return list(found.values())


def _target(
    number: Any, named: list[pint.Unit], operand: pint.Unit | None, multiplies: bool
) -> pint.Unit | None:
    """The one named unit the operand's unit converts into by `number`, else None."""
    if operand is None or not isinstance(number, int | float) or isinstance(number, bool):
        return None
    if number <= 0 or str(operand) not in {str(unit) for unit in named}:
        return None
    if any(_kind(unit) != _kind(operand) for unit in named):
        return None  # "dollars per kilometre" beside miles: a price, whatever its number
    by_hand = number if multiplies else 1 / number
    fits = []
    for unit in named:  # all of the operand's kind: each converts
        ratio = float(quantity(1, operand).to(unit).magnitude)
        if not math.isclose(ratio, 1.0) and math.isclose(ratio, by_hand, rel_tol=ROUNDED):
            fits.append(unit)
    return fits[0] if len(fits) == 1 else None


def _kind(unit: pint.Unit) -> str:
    return str(quantity(1, unit).dimensionality)


def _same_unit(declared: str, unit: pint.Unit) -> bool:
    try:
        ratio = quantity(1, parse_unit(declared, counts=False)).to(unit).magnitude
    except (pint.PintError, StepgraphError):
        return False
    return math.isclose(float(ratio), 1.0)

"""A number several inputs share, in a sum: the input in the unit it is added to.

"3 horses ... each horse consumes 5 liters of water for drinking and 2 liters for bathing
... If he added 5 horses": a program's ``water = 5 + 2`` writes a 5 that is both "5
liters" and "5 horses", so the reader binds it to neither and it stays a plain 5, which
cannot be added to 2 liters (GSM8K train 6390; 4575: "5 posters per day" beside "$5",
subtracted from two posters a day). In a sum both sides have one unit: where exactly one
of the inputs with that number has the other side's dimension, the number is that input.
A plain other side (a count) leaves the number plain, as before.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

import pint

from stepgraph.exceptions import StepgraphError
from stepgraph.model import GroundedInput, StepGraph
from stepgraph.planner._periods import evaluate_on, placeheld, plan_units
from stepgraph.planner._read_goal import bind_read_inputs
from stepgraph.task import parse_input
from stepgraph.tools import ToolRegistry


def bind_by_sibling_units(
    plan: StepGraph,
    values: Mapping[str, Any],
    read: Mapping[str, GroundedInput],
    repairs: list[str],
    tools: ToolRegistry,
) -> StepGraph:
    """The plan with each such number written as its input; each one said in `repairs`."""
    shared = _shared_numbers(read)
    if not shared:
        return plan
    units = plan_units(plan, values, tools)
    steps = list(plan.steps)
    for at, step in enumerate(steps):
        expression = step.args.get("expression") if step.tool == "calculate" else None
        if isinstance(expression, str) and (bound := _bound(expression, units, shared)):
            text, said = bound
            steps[at] = step.model_copy(update={"args": {**step.args, "expression": text}})
            repairs += [f"step '{step.id}': {what}" for what in said]
    if steps == plan.steps:
        return plan
    return bind_read_inputs(plan.model_copy(update={"steps": steps}), read)


def _shared_numbers(read: Mapping[str, GroundedInput]) -> dict[float, dict[str, Any]]:
    """Each number that two or more read inputs have, with those inputs' values."""
    by_number: dict[float, dict[str, Any]] = {}
    for name, item in read.items():
        try:
            value = parse_input(item.value)
        except StepgraphError:
            continue
        magnitude = getattr(value, "magnitude", value)
        if isinstance(magnitude, int | float) and not isinstance(magnitude, bool):
            by_number.setdefault(float(magnitude), {})[name] = value
    return {number: named for number, named in by_number.items() if len(named) > 1}


def _bound(
    expression: str, units: Mapping[str, Any], shared: Mapping[float, Mapping[str, Any]]
) -> tuple[str, list[str]] | None:
    if (held := placeheld(expression)) is None:
        return None
    prototypes = held.prototypes(units)
    said = []
    for node in ast.walk(held.tree):
        if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub)):
            continue
        for side, other in ((node.left, node.right), (node.right, node.left)):
            number = _number(side)
            if number is None or number not in shared:
                continue
            found = _in_dimension_of(other, prototypes, shared[number])
            if found is None:
                continue
            replacement = ast.Name(held.placeholder(f"inputs.{found}"))
            if side is node.left:
                node.left = replacement
            else:
                node.right = replacement
            said.append(f"the goal's {number:g} read as {found}, in the unit it is added to")
    return (held.text(), said) if said else None


def _number(node: ast.expr) -> float | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return None if isinstance(node.value, bool) else float(node.value)
    return None


def _in_dimension_of(
    other: ast.expr, prototypes: Mapping[str, Any], candidates: Mapping[str, Any]
) -> str | None:
    """The one candidate with the dimension of `other`, where that is not a plain number."""
    try:
        value = evaluate_on(other, prototypes)
    except (pint.PintError, KeyError, TypeError, ValueError, ZeroDivisionError):
        return None
    if not isinstance(value, pint.Quantity) or value.dimensionless:
        return None
    alike = [
        name
        for name, candidate in candidates.items()
        if isinstance(candidate, pint.Quantity) and candidate.dimensionality == value.dimensionality
    ]
    return alike[0] if len(alike) == 1 else None

"""What the other side of a sum says: a shared number's input, a hand conversion's unit.

"3 horses ... each horse consumes 5 liters of water for drinking and 2 liters for bathing
... If he added 5 horses": a program's ``water = 5 + 2`` writes a 5 that is both "5
liters" and "5 horses", so the reader binds it to neither and it stays a plain 5, which
cannot be added to 2 liters (GSM8K train 6390; 4575: "5 posters per day" beside "$5",
subtracted from two posters a day). In a sum both sides have one unit: where exactly one
of the inputs with that number has the other side's dimension, the number is that input.
A plain other side (a count) leaves the number plain, as before.

The same sum says what a term converted by hand was converted into: `7 * 60 + 23` for
"7 minutes and 23 seconds" (`undo_conversions_in_sums`).
"""

from __future__ import annotations

import ast
import math
from collections.abc import Mapping
from typing import Any, cast

import pint

from stepgraph.exceptions import StepgraphError
from stepgraph.model import GroundedInput, StepGraph
from stepgraph.planner._periods import chain, placeheld, plan_units, quantity_of
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
    value = quantity_of(other, prototypes)
    if value is None or value.dimensionless:
        return None
    alike = [
        name
        for name, candidate in candidates.items()
        if isinstance(candidate, pint.Quantity) and candidate.dimensionality == value.dimensionality
    ]
    return alike[0] if len(alike) == 1 else None


def undo_conversions_in_sums(
    plan: StepGraph, values: Mapping[str, Any], repairs: list[str], tools: ToolRegistry
) -> StepGraph:
    """The plan with each term converted by hand into its sum's unit written as it is.

    "7 minutes and 23 seconds" is written ``7 * 60 + 23`` (GSM8K train 3411), its 60 refused
    as a conversion done by hand. In a sum with a term in seconds, minutes times exactly the
    seconds in a minute are those minutes: the factor is dropped, the units convert, and a
    term in the sum's unit goes first, so the sum is in it (443 s, not 7.38 min).
    """
    units = plan_units(plan, values, tools)
    steps = list(plan.steps)
    for at, step in enumerate(steps):
        expression = step.args.get("expression") if step.tool == "calculate" else None
        if not isinstance(expression, str) or (held := placeheld(expression)) is None:
            continue
        prototypes = held.prototypes(units)
        dropped = [
            dropped
            for node in ast.walk(held.tree)
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add)
            for dropped in _unconverted(node, prototypes)
        ]
        dropped += [
            dropped
            for node in ast.walk(held.tree)
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub)
            for dropped in _subtracted_unconverted(node, prototypes)
        ]
        if dropped:
            steps[at] = step.model_copy(update={"args": {**step.args, "expression": held.text()}})
            repairs.append(
                f"step '{step.id}': dropped the {', '.join(dropped)} that converted a term of "
                "its sum by hand; the units convert it"
            )
    return plan if steps == plan.steps else plan.model_copy(update={"steps": steps})


def _unconverted(node: ast.BinOp, prototypes: Mapping[str, Any]) -> list[str]:
    """The factors dropped from the sum `node`, rewritten in place without them.

    A term is dropped to its operand where its factor is exactly what converts the
    operand's unit into the one other unit of the sum's terms.
    """
    terms = chain(node, ast.Add)
    units = {unit for term in terms if (unit := _unit_of(term, prototypes)) is not None}
    dropped, first = [], None
    for index, term in enumerate(terms):
        if (factored := _factored_term(term, prototypes)) is None:
            continue
        operand, number, unit, ratio = factored
        into = [u for u in units if u != unit and _converts(unit, u, ratio)]
        if len(into) != 1:
            continue
        terms[index], first = operand, into[0]
        dropped.append(f"{number:g}")
    if first is None:
        return []
    terms.sort(key=lambda term: _unit_of(term, prototypes) != first)  # stable: one goes first
    rebuilt: ast.expr = terms[0]
    for term in terms[1:]:
        rebuilt = ast.BinOp(rebuilt, ast.Add(), term)
    node.left, node.right = cast(ast.BinOp, rebuilt).left, cast(ast.BinOp, rebuilt).right
    return dropped


def _subtracted_unconverted(node: ast.BinOp, prototypes: Mapping[str, Any]) -> list[str]:
    """The factor dropped from what `node` subtracts, where it converts it into the left's unit.

    "a shift of 9:15 to 17:45 (8.5 h) less a 30 minute break" was written ``shift_hours -
    lunch_minutes / 60  # 60 minutes in an hour`` (a new user's question, 2026-12-06) and
    refused for its 60, which the program prompt asks to comment just so. Only the
    subtracted term: the difference stays in the unit of what it is taken from.
    """
    factored = _factored_term(node.right, prototypes)
    into = _unit_of(node.left, prototypes)
    if factored is None or into is None:
        return []
    operand, number, unit, ratio = factored
    if unit == into or not _converts(unit, into, ratio):
        return []
    node.right = operand
    return [f"{number:g}"]


def _factored_term(
    term: ast.expr, prototypes: Mapping[str, Any]
) -> tuple[ast.expr, float, Any, float] | None:
    """``x * 60``, ``60 * x`` or ``x / 60`` with `x` in a unit: (x, 60, its unit, the ratio).

    The ratio is what one of `x`'s unit is taken to be in the other (60, or 1/60 divided).
    """
    if not (isinstance(term, ast.BinOp) and isinstance(term.op, ast.Mult | ast.Div)):
        return None
    by_right = isinstance(term.right, ast.Constant)
    operand, factor = (term.left, term.right) if by_right else (term.right, term.left)
    number, unit = _number(factor), _unit_of(operand, prototypes)
    if number is None or unit is None or (isinstance(term.op, ast.Div) and not by_right):
        return None
    return operand, number, unit, number if isinstance(term.op, ast.Mult) else 1 / number


def _unit_of(node: ast.expr, prototypes: Mapping[str, Any]) -> Any:
    """The unit of a term with one (a plain number or an unknown: None)."""
    value = quantity_of(node, prototypes)
    return value.units if value is not None and not value.dimensionless else None


def _converts(unit: Any, into: Any, ratio: float) -> bool:
    """Whether one `unit` is exactly `ratio` of `into` (a minute: 60 seconds)."""
    try:
        exact = (1 * unit).to(into).magnitude
    except pint.PintError:
        return False
    return math.isclose(float(exact), ratio, rel_tol=1e-9)

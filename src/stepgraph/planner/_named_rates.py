"""A number the plan names as a rate, where the goal's words say it is one.

"Rachel solved 5 math problems each minute for 12 minutes" is read as a plain 5: the words
between the number and "each minute" may just as well say a count per day is not meant
("50 text messages each day" counted over a week). A program that names it
``problems_per_minute = 5`` says which; multiplied by 12 minutes it is 60 problems, not 60
minutes, which the 16 problems of the next day cannot be added to (GSM8K train 2842). So
a step named ``..._per_<unit>`` that is exactly one input, whose quote says "each", "per",
"a" or "every" before that unit, is that input per one unit. Not where the input is already
a rate, nor where it has the unit's own dimension (cups per gallon is a plain number
once reduced, and would no longer count cups), and only where each step that uses it
multiplies it by a quantity in that very unit (the 12 minutes): "16 eggs per day" named
`eggs_per_day`, less the 3 eaten every morning, is a day's eggs in plain numbers. A quote
that ends in "per" is one whose unit the reader took as a number of its own ("$6 per 1
kilogram", train 2701: kilograms times dollars).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from typing import Any

import pint

from stepgraph.exceptions import StepgraphError
from stepgraph.model import GroundedInput, StepGraph
from stepgraph.planner._hand import measure_word
from stepgraph.planner._periods import placeheld, plan_units, products, quantity_of
from stepgraph.task import parse_input
from stepgraph.tools import ToolRegistry
from stepgraph.units import parse_unit

_ONE_INPUT = re.compile(r"\$\{inputs\.(\w+)\}")
# each word after "_per_": `posts_per_day_per_member` is per day (GSM8K test 613), per member
_PER_WORD = re.compile(r"(?<=\w)_per_([a-z]+)")
_EACH = r"\b(?:each|per|a|an|every)\s+{}s?\b"
# "$6 per 1 kilogram": the quote stops before the next number, so it ends in "per"
_PER_END = re.compile(r"\bper$", re.IGNORECASE)


def read_named_rates(
    plan: StepGraph,
    values: Mapping[str, Any],
    read: Mapping[str, GroundedInput],
    repairs: list[str],
    tools: ToolRegistry,
) -> StepGraph:
    """The plan with each such step divided by its one unit; each one said in `repairs`."""
    units: dict[str, Any] | None = None
    steps = list(plan.steps)
    for at, step in enumerate(steps):
        expression = step.args.get("expression") if step.tool == "calculate" else None
        if not isinstance(expression, str) or not (whole := _ONE_INPUT.fullmatch(expression)):
            continue
        name = whole.group(1)
        if name not in read:
            continue
        words = _PER_WORD.findall(step.id.casefold())
        unit = next((u for word in words if (u := _rate_unit(word, read[name]))), None)
        if unit is None:
            continue
        units = units if units is not None else plan_units(plan, values, tools)
        if not _times_its_unit(plan, step.id, parse_unit(unit, counts=False), units):
            continue
        steps[at] = step.model_copy(
            update={"args": {**step.args, "expression": f"{expression} / (1 {unit})"}}
        )
        repairs.append(
            f"step '{step.id}': {read[name].quote!r} read as {name} per {unit}, as its name "
            "and the goal's words say"
        )
    return plan if steps == plan.steps else plan.model_copy(update={"steps": steps})


def _rate_unit(word: str, item: GroundedInput) -> str | None:
    """The unit the input is per, where the name's word is one and the quote says so."""
    if (unit := measure_word(word)) is None:
        return None
    said = re.search(_EACH.format(re.escape(word)), item.quote, re.IGNORECASE)
    if not said and not _PER_END.search(item.quote.strip()):
        return None
    try:
        per: Any = parse_unit(unit, counts=False)
        value = parse_input(item.value)
    except StepgraphError:
        return None
    dimensions = getattr(value, "dimensionality", {})
    if isinstance(value, pint.Quantity) and (
        value.dimensionality == per.dimensionality
        or any(exponent < 0 for exponent in dimensions.values())
    ):
        return None
    return unit


def _times_its_unit(plan: StepGraph, step_id: str, per: Any, units: Mapping[str, Any]) -> bool:
    """Whether each use of the step is a factor of a product with a quantity in `per`."""
    uses = 0
    for step in plan.steps:
        expression = step.args.get("expression") if step.tool == "calculate" else None
        if not isinstance(expression, str) or f"${{{step_id}}}" not in expression:
            continue
        if (held := placeheld(expression)) is None or step_id not in held.names:
            return False
        prototypes, own = held.prototypes(units), held.names[step_id]
        found = [n for n in ast.walk(held.tree) if isinstance(n, ast.Name) and n.id == own]
        timed = [
            factors
            for factors in products(held.tree)
            if any(isinstance(f, ast.Name) and f.id == own for f in factors)
            and any(_in_unit(f, per, prototypes) for f in factors)
        ]
        if len(timed) != len(found):
            return False  # added, compared or divided by somewhere: a plain amount there
        uses += len(found)
    return uses > 0


def _in_unit(node: ast.expr, per: Any, prototypes: Mapping[str, Any]) -> bool:
    """Whether `node` is in the unit `per` itself: 12 minutes for "each minute", not a day."""
    value = quantity_of(node, prototypes)
    return value is not None and value.units == per

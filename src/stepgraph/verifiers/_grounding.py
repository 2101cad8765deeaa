"""Grounding: a plan's numbers must come from the goal, each where the goal says it.

Checked before anything runs, for a goal typed with its numbers (or a task that opts in
with ``grounded: true``):

- each input the plan declares quotes the goal (whitespace and case aside), and its value
  is the quantity the quote states: 450 Mbps typed as 450 MB/s, or 2.5 TB as 2.5 TiB, is
  refused;
- each number the goal states is used (by an input, a step or a check) or listed under
  ``unused`` with a reason;
- no literal in a step or check is a number the goal does not state (a conversion factor
  such as 8 or 3600 done by hand, a made-up 0.98) unless the plan declares it under
  ``constants`` with a reason.

Each problem says what to write instead; the planner sends it back to the model.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pint

from stepgraph.exceptions import PlanProblem, StepgraphError, UnitError
from stepgraph.model import StepGraph
from stepgraph.task import PreparedTask, parse_input
from stepgraph.units import format_value, is_count_unit, parse_unit, quantity
from stepgraph.verifiers._coverage import unused_numbers
from stepgraph.verifiers._numbers import GoalNumber, goal_numbers, literal_numbers, matches

# Always allowed as literals: 0 and 1 are structure ("1 - ${loss}"), not data.
_STRUCTURAL = (0.0, 1.0)
# Literals a model writes when it converts by hand, and what they usually stand for.
_CONVERSION_FACTORS = {
    8: "bits per byte",
    24: "hours per day",
    7: "days per week",
    60: "seconds per minute or minutes per hour",
    100: "percent",
    365: "days per year",
    1000: "a decimal prefix (k, M, G)",
    1024: "a binary prefix (Ki, Mi, Gi)",
    1440: "minutes per day",
    3600: "seconds per hour",
    86400: "seconds per day",
    1e6: "a decimal prefix (M)",
    1e9: "a decimal prefix (G)",
    1e12: "a decimal prefix (T)",
    1048576: "a binary prefix (Mi)",
    1073741824: "a binary prefix (Gi)",
}
_QUANTITY = re.compile(r"(?<![\w.])(\d[\d_]*(?:\.\d+)?)\s*([A-Za-z%][A-Za-z]*(?:/[A-Za-z]+)?)")
_PER = {"per"}
_PER_OR_NOT = {"a", "an", "each", "every"}
_WORD = re.compile(r"[A-Za-z%/][A-Za-z0-9%/^*.]*")


def _normalized(text: str) -> str:
    return " ".join(text.split()).casefold()


@dataclass(frozen=True)
class _Stated:
    """A quantity a quote states: its number and, where the words say one, its unit."""

    text: str
    number: float
    unit: pint.Unit | None


def _stated(quote: str) -> list[_Stated]:
    """Each number of a quote with the unit written right after it, if it is a known unit."""
    found = []
    for number in goal_numbers(quote):
        if number.clock_hours is not None:
            found.append(_Stated(number.text, number.clock_hours, parse_unit("h")))
            continue
        if number.percent:
            found.append(_Stated(number.text, number.value, parse_unit("percent")))
            continue
        units: list[pint.Unit | None] = [*_units_after(quote[number.end :])] or [None]
        found.extend(_Stated(number.text, number.value, unit) for unit in units)
    return found


def _units_after(rest: str) -> list[pint.Unit]:
    """The known units the words right after a number may mean: one word, or a rate.

    "60 L per minute" is a rate; "7.5 hours a day" is a rate or a duration (both are
    accepted). Only one word otherwise: in "a 450 Mbps link", link is a unit of length.
    """
    words = [word.strip(".,;:()") for word in rest.split()[:3]]
    joiner = words[1].casefold() if len(words) == 3 else ""
    texts = [f"{words[0]} / {words[2]}"] if joiner in _PER | _PER_OR_NOT else []
    if joiner not in _PER:
        texts += words[:1]
    units = []
    for text in texts:
        if not text or not _WORD.fullmatch(text.replace(" ", "")):
            continue
        try:
            units.append(parse_unit(text, counts=False))
        except UnitError:
            continue
    return units


def _states(stated: _Stated, value: Any) -> bool:
    """Whether `value` is the quantity `stated` (a rate "per" something counts too)."""
    magnitude = value.magnitude if isinstance(value, pint.Quantity) else value
    if stated.unit is None or is_count_unit(stated.unit):
        return isinstance(magnitude, int | float) and matches(float(magnitude), [stated.number])
    expected = quantity(stated.number, stated.unit)
    if not isinstance(value, pint.Quantity):
        return bool(stated.unit.dimensionless) and matches(
            float(value), [float(expected.to("dimensionless").magnitude)]
        )
    return bool(value.is_compatible_with(stated.unit)) and matches(
        float(value.to(stated.unit).magnitude), [stated.number]
    )


def _input_problems(plan: StepGraph, goal: str) -> list[PlanProblem]:
    problems = []
    written_goal = _normalized(goal)
    for name, item in plan.inputs.items():
        where = f"inputs.{name}"
        if _normalized(item.quote) not in written_goal:
            problems.append(
                PlanProblem(
                    None,
                    f"{where}: the quote '{item.quote}' is not in the goal; copy the goal's "
                    "words exactly, e.g. the few words around the number",
                )
            )
            continue
        try:
            value = parse_input(item.value)
        except StepgraphError:
            continue  # reported by the inputs' own check
        stated = _stated(item.quote)
        if not stated:
            problems.append(
                PlanProblem(None, f"{where}: the quote '{item.quote}' states no number")
            )
        elif not any(_states(candidate, value) for candidate in stated):
            written = ", ".join(
                f"{c.text}"
                + (
                    f" ({format_value(quantity(1, c.unit)).removeprefix('1 ')})"
                    if c.unit is not None
                    else ""
                )
                for c in stated
            )
            problems.append(
                PlanProblem(
                    None,
                    f"{where}: the value {item.value!r} is not what the quote '{item.quote}' "
                    f"states ({written}); write the value with the goal's own number and unit",
                )
            )
    return problems


def _coverage_problems(
    plan: StepGraph, stated: list[GoalNumber], task_inputs: Mapping[str, Any]
) -> list[PlanProblem]:
    problems = [
        PlanProblem(None, f"unused: '{item.number}' needs a reason (why)")
        for item in plan.unused
        if not item.why.strip()
    ]
    for number in unused_numbers(plan, stated, task_inputs):
        as_written = f" (as {number.clock_hours:g} h)" if number.clock_hours is not None else ""
        problems.append(
            PlanProblem(
                None,
                f"the goal states '{number.text}' but no step or check uses it: write it "
                f'where it belongs{as_written}, or list it under "unused" with why the answer '
                "does not need it",
            )
        )
    return problems


def _literal_problems(plan: StepGraph, stated: list[GoalNumber], goal: str) -> list[PlanProblem]:
    allowed = [*_STRUCTURAL, *(value for number in stated for value in number.accepted)]
    for item in plan.constants.values():
        allowed += literal_numbers(item.value)
    if "%" in goal or "percent" in goal.casefold():
        allowed.append(100.0)  # "what percent": a share times 100
    problems = []
    places: list[tuple[str | None, str, Any]] = [(step.id, "", step.args) for step in plan.steps]
    places += [(None, f"check '{check.expression}': ", check.expression) for check in plan.checks]
    for step_id, prefix, content in places:
        for literal in sorted(set(literal_numbers(content))):
            if matches(literal, allowed):
                continue
            shown = f"{literal:g}"
            factor = _CONVERSION_FACTORS.get(literal)
            if factor is not None:
                why = (
                    f"{shown} looks like a conversion factor ({factor}) done by hand: write "
                    "each quantity with its unit and let the units convert (expect_unit, "
                    "unit_convert)"
                )
            else:
                why = f"{shown} is not a number of the goal"
            problems.append(
                PlanProblem(
                    step_id,
                    f"{prefix}{why}; use only the goal's numbers, or if the answer truly "
                    f'needs {shown}, declare it under "constants" with why',
                )
            )
        problems += [PlanProblem(step_id, prefix + text) for text in _unstated(content, goal)]
    return problems


def _unstated(content: Any, goal: str) -> list[str]:
    """Literal quantities whose number the goal states, but with another unit.

    "100 B/s" in a plan for "a 100 Mbps link" uses the goal's number for another
    quantity: the unit is what the goal's words say, or the number is not the goal's.
    """
    texts = [content] if isinstance(content, str) else []
    if isinstance(content, dict):
        texts = [value for value in content.values() if isinstance(value, str)]
    stated = _stated(goal)
    found = []
    for text in texts:
        for match in _QUANTITY.finditer(text):
            number = float(match.group(1).replace("_", ""))
            same = [s for s in stated if s.unit is not None and matches(number, [s.number])]
            if not same or any(s.unit is None for s in stated if matches(number, [s.number])):
                continue  # not the goal's number, or the goal gives it no unit
            try:
                value = quantity(number, parse_unit(match.group(2), counts=False))
            except UnitError:
                continue  # a count noun or a word: the number alone was checked
            if not any(_states(s, value) for s in same):
                goal_says = ", ".join(f"{s.text} {_unit_name(s.unit)}".strip() for s in same)
                found.append(
                    f"'{match.group(0)}' is not what the goal states ({goal_says}); write "
                    "the goal's number with the goal's unit"
                )
    return found


def _unit_name(unit: pint.Unit | None) -> str:
    if unit is None or unit.dimensionless and str(unit) == "percent":
        return ""
    return format_value(quantity(1, unit)).removeprefix("1 ")


def grounding_problems(plan: StepGraph, task: PreparedTask) -> list[PlanProblem]:
    """Everything that ties the plan's numbers to the goal's words, checked before running.

    Empty for a task that names its inputs and does not opt in with ``grounded: true``.
    """
    if not task.grounded:
        return []
    goal = task.task.goal
    stated = [number for number in goal_numbers(goal) if number.value != 0]
    return [
        *_input_problems(plan, goal),
        *_coverage_problems(plan, stated, task.inputs),
        *_literal_problems(plan, stated, goal),
    ]


__all__ = ["grounding_problems"]

"""Grounding: a plan's numbers must come from the goal, each where the goal says it.

Checked before anything runs, for a goal typed with its numbers (or a task that opts in
with ``grounded: true``):

- each input the plan declares, and under ``grounded: true`` each of the task's own inputs,
  quotes the goal (whitespace and case aside), and its value is the quantity the quote
  states (`states`, the notion coverage uses too): 450 Mbps typed as 450 MB/s, 2.5 TB as
  2.5 TiB, or "00:00 to 06:00" as 6 min is refused; 0.88 for "12% lost" passes, and 0.1
  for "90% utilisation" does not (a complement counts only where the words say a share is
  lost or left, `_numbers`);
- each such input is used by a step or a check (an input left unused is a number of the
  goal ignored);
- each number the goal states is used (by an input, a step or a check) or listed under
  ``unused`` with a reason;
- no literal in a step or check is a number the goal does not state (a conversion factor
  such as 8 or 3600 done by hand, a made-up 0.98) unless the plan declares it under
  ``constants`` with a reason, or it is a calendar fact whose two units the goal's words
  name (52 for "twice a week ... in a year") and the goal states no quantity in time.

Each problem says what to write instead; the planner sends it back to the model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

import pint

from stepgraph.exceptions import PlanProblem, StepgraphError, UnitError
from stepgraph.model import StepGraph
from stepgraph.task import PreparedTask, parse_input
from stepgraph.units import format_value, parse_unit, quantity
from stepgraph.verifiers._averages import averaged_counts
from stepgraph.verifiers._coverage import unused_numbers, used_inputs
from stepgraph.verifiers._denominators import added_denominators
from stepgraph.verifiers._direction import direction_problems
from stepgraph.verifiers._numbers import (
    LIST_SEPARATOR,
    GoalNumber,
    Stated,
    goal_numbers,
    literal_numbers,
    matches,
    normalized,
    quoted_quantities,
    read_numbers,
    stated_quantities,
    states,
    word_numbers,
    worded_fraction,
)
from stepgraph.verifiers._parts import divides_only, part_divisors

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
# Calendar facts people never state ("twice a week ... in a year": 52), each with the two
# units its words must both name.
CALENDAR = {
    7.0: ("day", "week"),
    12.0: ("month", "year"),
    24.0: ("hour", "day"),
    52.0: ("week", "year"),
    60.0: ("minute", "hour"),
    365.0: ("day", "year"),
}
_QUANTITY = re.compile(r"(?<![\w.])(\d[\d_]*(?:\.\d+)?)\s*([A-Za-z%][A-Za-z]*(?:/[A-Za-z]+)?)")


@dataclass(frozen=True)
class _Quoted:
    """An input held to the goal's words: the plan's (always quoted) or a grounded task's."""

    where: str  # "inputs.link", as the message names it
    written: Any  # the value as written, for the message
    value: Any  # the value the run uses
    quote: str | None


def _quoted_inputs(plan: StepGraph | None, task: PreparedTask) -> list[_Quoted]:
    """The task's own inputs (under ``grounded: true``), then the plan's, each with its quote."""
    own = task.task.inputs if task.task.grounded else {}
    written = [
        *((name, spec.value, spec.quote) for name, spec in own.items()),
        *((name, item.value, item.quote) for name, item in (plan.inputs if plan else {}).items()),
    ]
    items = []
    for name, raw, quote in written:
        try:  # what the run uses: a task's input as resolved (--set included)
            value = parse_input(raw)
            if name in own and task.inputs.get(name, value) is not value:
                set_value = task.inputs[name]
                if set_value != value:  # a --set goes against the goal's words
                    raw, value = f"{format_value(set_value)} (as set)", set_value
        except StepgraphError:
            continue  # reported by the inputs' own check
        items.append(_Quoted(f"inputs.{name}", raw, value, quote))
    return items


def _input_problems(items: list[_Quoted], goal: str) -> list[PlanProblem]:
    """Each input's quote is in the goal, and its value is what the quote states."""
    problems = []
    written_goal = normalized(goal)
    for item in items:
        where = item.where
        if item.quote is None:
            problems.append(
                PlanProblem(
                    None,
                    f"{where}: a grounded task's input quotes the goal's words that state it "
                    "(quote: ...); add the quote, or drop grounded: true",
                )
            )
            continue
        if normalized(item.quote) not in written_goal:
            problems.append(
                PlanProblem(
                    None,
                    f"{where}: the quote '{item.quote}' is not in the goal; copy the goal's "
                    "words exactly, e.g. the few words around the number",
                )
            )
            continue
        if isinstance(item.value, str):  # text, such as a name: the quote must say it
            if normalized(item.value) not in normalized(item.quote):
                problems.append(
                    PlanProblem(
                        None, f"{where}: the quote '{item.quote}' does not say {item.value!r}"
                    )
                )
            continue
        stated = quoted_quantities(item.quote, goal)
        if not stated:
            problems.append(
                PlanProblem(None, f"{where}: the quote '{item.quote}' states no number")
            )
        elif not any(states(candidate, item.value) for candidate in stated):
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
                    f"{where}: the value {item.written!r} is not what the quote '{item.quote}' "
                    f"states ({written}); write the value with the goal's own number and unit"
                    + _complement_hint(stated, item.value),
                )
            )
    return problems


def _complement_hint(stated: list[Stated], value: Any) -> str:
    """Why 0.1 is not 90%: the complement counts only where the words say a share is lost."""
    for candidate in stated:
        number = candidate.number
        as_rest = Stated(replace(number, complement=True), candidate.unit)
        if number.percent and not number.complement and states(as_rest, value):
            return (
                f" ({number.value / 100:g}); {format_value(value)} is the rest, 1 - "
                f"{number.text}, which counts only where the goal's words say a share is "
                'lost, taken off or left ("12% lost to retries")'
            )
    return ""


def _unused_input_problems(plan: StepGraph, task: PreparedTask) -> list[PlanProblem]:
    """An input read from the goal that no step or check uses: the goal's number is ignored."""
    used = used_inputs(plan, task.extra_checks)
    own = [name for name in task.task.inputs if task.task.grounded and name not in used]
    declared = [name for name in plan.inputs if name not in used]
    unused = "no step or check uses this input; use it where it belongs (${inputs.%s})"
    return [
        *(
            PlanProblem(
                None,
                f"inputs.{name}: {unused % name}, or if the answer truly does not need it, "
                "remove it from the task",
            )
            for name in own
        ),
        *(
            PlanProblem(
                None,
                f"inputs.{name}: {unused % name}, or if the answer truly does not need it, "
                'remove it and list its number under "unused" with why',
            )
            for name in declared
        ),
    ]


def _coverage_problems(plan: StepGraph, goal: str, task: PreparedTask) -> list[PlanProblem]:
    problems = [
        PlanProblem(None, f"unused: '{item.number}' needs a reason (why)")
        for item in plan.unused
        if not item.why.strip()
    ]
    for number in unused_numbers(plan, goal, task.inputs, task.extra_checks):
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


# a literal of a plan that no number of the goal is (said in the problem, and matched)
NOT_STATED = "is not a number of the goal"


def _literal_problems(plan: StepGraph, stated: list[GoalNumber], goal: str) -> list[PlanProblem]:
    allowed = [*_STRUCTURAL, *(value for number in stated for value in number.accepted)]
    for item in plan.constants.values():
        allowed += literal_numbers(item.value)
    allowed += _calendar_factors(plan, goal)
    allowed += _counted_days(goal)
    if "%" in goal or "percent" in goal.casefold():
        allowed.append(100.0)  # "what percent": a share times 100
    parts = part_divisors(goal)  # "twice as many, 60 in all": 60 / 3
    # "Jim 20, Jane 60, Jerry 40, the average": / 3; not over named days, which count
    # themselves above, or may be a week's few (the average per day of Monday and Friday)
    averaged = {} if re.search(_DAY, goal) else averaged_counts(plan, goal)
    problems = []
    places: list[tuple[str | None, str, Any]] = [(step.id, "", step.args) for step in plan.steps]
    places += [(None, f"check '{check.expression}': ", check.expression) for check in plan.checks]
    for step_id, prefix, content in places:
        for literal in sorted(set(literal_numbers(content))):
            if matches(literal, allowed) or (literal in parts and divides_only(content, literal)):
                continue
            if step_id is not None and literal in averaged.get(step_id, ()):
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
                why = f"{shown} {NOT_STATED}"
            problems.append(
                PlanProblem(
                    step_id,
                    f"{prefix}{why}; use only the goal's numbers, or if the answer truly "
                    f'needs {shown}, declare it under "constants" with why',
                )
            )
        problems += [PlanProblem(step_id, prefix + text) for text in _unstated(content, goal)]
    return problems


def _calendar_factors(plan: StepGraph, goal: str) -> list[float]:
    """The calendar facts a plan of plain numbers may use: 52 where the goal says weeks and years.

    "Gary does laundry twice a week ... How much does he spend in a year?" needs 52 and
    states it nowhere. Only where the goal states no quantity in time and the plan declares
    none: there the units convert, and a hand-written 60 or 24 is the mistake the factor
    check is for.
    """
    kinds = [str(stated.unit.dimensionality) for stated in stated_quantities(goal) if stated.unit]
    kinds += [
        str(read.unit.dimensionality) for read in read_numbers(goal, worded_units=True) if read.unit
    ]
    kinds += [_kind_of(item.value) for item in plan.inputs.values()]
    if any("[time]" in kind for kind in kinds):
        return []
    words = {_singular(word) for word in re.findall(r"[a-z]+", goal.casefold())}
    return [factor for factor, units in CALENDAR.items() if set(units) <= words]


_DAY = r"(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day"
_DAY_LIST = re.compile(rf"{_DAY}(?:{LIST_SEPARATOR}{_DAY})+")


def _counted_days(goal: str) -> list[float]:
    """The days a goal names without a number: "on Monday, Wednesday, and Saturday" is 3.

    GSM8K train 2229: a right program's `days_per_week = 3` was refused as unstated. Not
    "weekdays" as 5: of three programs that `* 5` let through, two were wrong (train 264
    counted a month as one week).

    The days a story names one by one count too, three or more ("On Monday ... On Tuesday
    and Wednesday ... Thursday ... Friday": 5 for a daily average, GSM8K test 928; 32 train
    solutions divide or multiply by such a count). Not two (a chance 2), and not where
    days are a range ("Monday through Friday" is five).
    """
    listed = [float(len(re.findall(_DAY, match.group(0)))) for match in _DAY_LIST.finditer(goal)]
    named = {match.group(0).casefold() for match in re.finditer(_DAY, goal)}
    if len(named) >= 3 and not _DAY_RANGE.search(goal):
        listed.append(float(len(named)))
    return listed


_DAY_RANGE = re.compile(rf"{_DAY}\s*(?:through|thru|to|until|till|-|–)\s*{_DAY}", re.IGNORECASE)


def _kind_of(value: Any) -> str:
    try:
        parsed = parse_input(value)
    except StepgraphError:
        return ""
    return str(parsed.dimensionality) if isinstance(parsed, pint.Quantity) else ""


def _singular(word: str) -> str:
    word = word.removesuffix("ly").removesuffix("s")  # "weekly", "years"
    return "day" if word == "dai" else word  # "daily"


def _unstated(content: Any, goal: str) -> list[str]:
    """Literal quantities whose number the goal states, but with another unit.

    "100 B/s" in a plan for "a 100 Mbps link" uses the goal's number for another
    quantity: the unit is what the goal's words say, or the number is not the goal's.
    """
    texts = [content] if isinstance(content, str) else []
    if isinstance(content, dict):
        texts = [value for value in content.values() if isinstance(value, str)]
    stated = stated_quantities(goal)
    found = []
    for text in texts:
        for match in _QUANTITY.finditer(text):
            number = float(match.group(1).replace("_", ""))
            same = [s for s in stated if s.unit is not None and matches(number, [s.number.value])]
            if not same or any(s.unit is None for s in stated if matches(number, [s.number.value])):
                continue  # not the goal's number, or the goal gives it no unit
            try:
                value = quantity(number, parse_unit(match.group(2), counts=False))
            except UnitError:
                continue  # a count noun or a word: the number alone was checked
            if _counts_periods(text, match, value, same):
                continue  # "/ (1 day)" writes a unit: not the goal's "1 cup" (GSM8K test 76)
            if not any(states(s, value) for s in same):
                goal_says = ", ".join(f"{s.text} {_unit_name(s.unit)}".strip() for s in same)
                found.append(
                    f"'{match.group(0)}' is not what the goal states ({goal_says}); write "
                    "the goal's number with the goal's unit"
                )
    return found


_OVER = re.compile(r"/\s*\(?\s*$")


def _counts_periods(text: str, match: re.Match[str], value: Any, same: list[Stated]) -> bool:
    """`x / (1 day)` counts days, where the goal's 1 is of another kind (1 cup).

    The engine writes it so itself (days counted as numbers of their periods). Only a
    period, and only as a divisor: `1 GB` beside "1 TB", a term `1 day`, or a link's
    `/ (1 Gbps)` beside "1 TB" are held to the goal as before.
    """
    if value.magnitude != 1 or str(value.dimensionality) != "[time]":
        return False
    if not _OVER.search(text[: match.start()]):
        return False
    return all(
        s.unit is not None and quantity(1, s.unit).dimensionality != value.dimensionality
        for s in same
    )


def _unit_name(unit: pint.Unit | None) -> str:
    if unit is None or unit.dimensionless and str(unit) == "percent":
        return ""
    return format_value(quantity(1, unit)).removeprefix("1 ")


def task_input_problems(task: PreparedTask) -> list[PlanProblem]:
    """What is wrong with a ``grounded: true`` task's own inputs, whatever the plan.

    No plan can fix these: the planner refuses the task before it asks a model.
    """
    if not task.task.grounded:
        return []
    return _input_problems(_quoted_inputs(None, task), task.task.goal)


def grounding_problems(plan: StepGraph, task: PreparedTask) -> list[PlanProblem]:
    """Everything that ties the plan's numbers to the goal's words, checked before running.

    Empty for a task that names its inputs and does not opt in with ``grounded: true``.
    """
    if not task.grounded:
        return []
    goal = task.task.goal
    stated = [number for number in goal_numbers(goal) if number.value != 0]
    # a fraction in words may be written as its numbers (`/ 3` for "a third more", `/ 2`
    # for "half that number"), as "3/5" may; other number words are the read inputs' to bind
    stated += [
        number
        for number in word_numbers(goal)
        if worded_fraction(number.text) or number.text.casefold() == "half"
    ]
    return [
        *_input_problems(_quoted_inputs(plan, task), goal),
        *_unused_input_problems(plan, task),
        *_coverage_problems(plan, goal, task),
        *_literal_problems(plan, stated, goal),
        *direction_problems(plan, goal),
        *added_denominators(plan, goal),
    ]


__all__ = ["NOT_STATED", "grounding_problems", "task_input_problems"]

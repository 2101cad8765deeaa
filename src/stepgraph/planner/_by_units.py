"""A literal that is several of the goal's numbers, read as the one whose units agree.

"2 feet longer ... two pieces": a program's ``bed_length + 2`` is the goal's 2, but which
one the reader cannot tell from the number, so it binds none and the plain 2 does not add
to feet (GSM8K test 1039, 122, 192: refused with "units do not match"). Each reading of
the ambiguous literals is tried; a reading the plan's own unit checks accept is taken when
it is the only one, or the only one that keeps the most of them plain numbers (``area *
2`` for "two pieces" stays a count, not feet). Readings that disagree otherwise are no
reading: the plan stays refused for the model to write.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

import pint

from stepgraph.planner._lines import Ambiguous
from stepgraph.planner._parse import ParsedPlan

# Readings tried at most: each one parses the whole plan again.
MAX_READINGS = 32


def units_disagree(parsed: ParsedPlan) -> bool:
    """Whether `parsed` was refused for a step whose units do not add up."""
    return parsed.plan is None and any("units do not match" in str(p) for p in parsed.problems)


def read_by_units(
    parse: Callable[[Mapping[int, str]], ParsedPlan],
    ambiguous: Sequence[Ambiguous],
    plain: Collection[str],
) -> ParsedPlan | None:
    """The one valid reading of the `ambiguous` literals, parsed, or None.

    `parse` reads the plan with the n-th ambiguous literal bound to the input named;
    `plain` names the inputs that are plain numbers (counts), preferred where several
    readings are valid.
    """
    options = [literal.candidates for literal in ambiguous]
    if not options or math.prod(len(names) for names in options) > MAX_READINGS:
        return None
    valid: list[tuple[int, tuple[str, ...], ParsedPlan]] = []
    for reading in itertools.product(*options):
        parsed = parse(dict(enumerate(reading)))
        if parsed.plan is not None:
            valid.append((sum(name in plain for name in reading), reading, parsed))
    most_plain = max((count for count, _, _ in valid), default=0)
    best = [(reading, parsed) for count, reading, parsed in valid if count == most_plain]
    if len(best) != 1:
        return None
    reading, parsed = best[0]
    said = [_said(literal, name) for literal, name in zip(ambiguous, reading, strict=True)]
    parsed.repairs = [*said, *parsed.repairs]
    return parsed


def _said(literal: Ambiguous, name: str) -> str:
    if name in literal.converted:
        return (
            f"{literal.where}: {literal.value:g} is the goal's {name} in another of its units"
            " (converted by hand); read as it, where the units agree"
        )
    return (
        f"{literal.where}: the goal's {literal.value:g} is both"
        f" {' and '.join(literal.candidates)}; read as {name}, where the units agree"
    )


def units_compound(parsed: ParsedPlan) -> bool:
    """Whether `parsed` was refused only where two units met, neither of them a bare count.

    "cup ** 2" against "cup" (a rate read as an amount), "dollar / week" against "dollar":
    the goal's units compounded. Not "day" against a count: a program that adds 5 weekdays
    to a shirt is wrong (GSM8K train 4962), and the units said so.
    """
    clashes = [str(p) for p in parsed.problems if "units do not match" in str(p)]
    return (
        units_disagree(parsed)
        and len(clashes) == len(parsed.problems)
        and not any("dimensionless" in clash for clash in clashes)
    )


def everyday_units(values: Mapping[str, Any]) -> bool:
    """Whether the goal's read quantities have units, and none of data (bytes, bits).

    Data sizes and rates are where the units are the answer's whole point (TB against Tb):
    there a program is never read in plain numbers.
    """
    units = [v for v in values.values() if isinstance(v, pint.Quantity) and not v.dimensionless]
    return bool(units) and not any("[information]" in str(v.dimensionality) for v in units)


PLAIN_READING = (
    "the goal's quantities read as plain numbers: with their units the program's steps did "
    "not add up (a rate read as an amount), and Python's arithmetic is the program's own"
)
_INPUT = re.compile(r"\$\{inputs\.(\w+)\}")


def in_plain_numbers(data: dict[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
    """The plan lines' `data` with each read quantity used as its number: "10 gallon" as 10.

    The inputs keep their values and quotes (grounding still holds them to the goal); each
    step's expression divides the quantity by its own unit.
    """

    def plain(match: re.Match[str]) -> str:
        value = values.get(match.group(1))
        if not isinstance(value, pint.Quantity) or value.dimensionless:
            return match.group(0)
        return f"({match.group(0)} / (1 {value.units}))"

    steps = []
    for step in data.get("steps", []):
        expression = step.get("args", {}).get("expression")
        if isinstance(expression, str):
            step = {**step, "args": {**step["args"], "expression": _INPUT.sub(plain, expression)}}
        steps.append(step)
    return {**data, "steps": steps}

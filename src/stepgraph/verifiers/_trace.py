"""Tracing a written answer: every number in it must come from a step or an input.

A number is traced with what stands next to it. A unit after it ("144 h") must be the
unit of the quantity it came from, after conversion: 0.96 TB may come from 962.28 GB,
144 h never from 144 GB. A step named in brackets after it ("6 days [days]") must be
the step that holds that number: "144 h [days]" fails when `days` is 6. A plain
number from a step counts whatever the text calls it ("3 nights").
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

import pint

from stepgraph.exceptions import UnitError
from stepgraph.model import Verdict, VerdictKind
from stepgraph.references import REFERENCE_PATTERN
from stepgraph.units import parse_unit
from stepgraph.verifiers._words import said_words

# A number as people write it (2,500 / 962.28 / -3 / 1.5e3), then optionally a unit or
# a word, then optionally a step named in brackets.
_MENTION = re.compile(
    r"(?<![\w.])(?P<number>[-+]?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?)(?![\w.]*\d)"
    r"(?:[ \t]*(?P<unit>[A-Za-zµ°%][\w/%·^*µ°]*))?"
    r"(?:[ \t]*(?:per [a-z]+[ \t]*)?\[(?P<step>[A-Za-z_][\w.]*)\])?"
)
TRACE_TOLERANCE = 5e-3  # an answer may round 962.2800001 to 962.28 or 962.3


def _numbers(value: Any) -> list[Any]:
    """The numbers (and quantities) a value holds, fields included."""
    if isinstance(value, bool):
        return []
    if isinstance(value, pint.Quantity | int | float):
        return [value]
    if isinstance(value, dict):
        return [n for item in value.values() for n in _numbers(item)]
    if isinstance(value, list | tuple):
        return [n for item in value for n in _numbers(item)]
    if isinstance(value, str):
        return [float(m.group("number").replace(",", "")) for m in _MENTION.finditer(value)]
    return []


def _unit(word: str | None) -> pint.Unit | None:
    if not word:
        return None
    try:
        return parse_unit(word, counts=False)
    except UnitError:
        return None  # a count noun ("nights", "discs")


def _matches(number: float, unit: pint.Unit | None, candidate: Any) -> bool:
    if isinstance(candidate, pint.Quantity):
        if unit is None:
            magnitude = candidate.magnitude
        elif candidate.is_compatible_with(unit):
            magnitude = candidate.to(unit).magnitude
        else:
            return False
    else:
        magnitude = candidate  # a plain number counts whatever the text calls it: "6 days"
    try:
        return math.isclose(number, float(magnitude), rel_tol=TRACE_TOLERANCE)
    except (OverflowError, TypeError, ValueError):
        return False


def check_answer_template(
    template: str, scope: Mapping[str, Any], goal: str = ""
) -> Verdict | None:
    """What a template says itself must hold: units after references, and literal numbers.

    A unit written after a reference must be one its value can be expressed in:
    "${backup_size} days" with a size in GB, or "${rate} GB per night" with a rate, says
    something the numbers do not, and so does a count after a quantity ("${size}
    nights"). A plain number may carry any word ("${nights} nights"). A number written in
    the template's own text must come from a step, an input or the goal: "12
    shareholders" typed by the model is not an answer. None when there is nothing to check.
    """
    checked: dict[str, str] = {}
    misfits: dict[str, str] = {}  # mention -> why it does not fit
    for said in said_words(template, scope):
        if said.problem:
            misfits[said.mention] = said.problem
            checked.pop(said.mention, None)
        else:
            checked[said.mention] = "unit matches"
    wrong: list[str] = []
    literal_text = REFERENCE_PATTERN.sub(" ", template)
    sources = {name: value for name, value in scope.items() if name != "inputs"}
    sources.update({f"inputs.{k}": v for k, v in dict(scope.get("inputs") or {}).items()})
    sources["the goal"] = goal
    for match in _MENTION.finditer(literal_text):
        number = float(match.group("number").replace(",", ""))
        if any(_matches(number, None, n) for value in sources.values() for n in _numbers(value)):
            checked[match.group("number")] = "written in the template, found in the run"
        else:
            wrong.append(f"{match.group(0).strip()} is written in the template, not computed")
    if not checked and not wrong and not misfits:
        return None
    problems = []
    if misfits:
        problems.append(
            "the answer template's words do not fit its values: " + "; ".join(misfits.values())
        )
    if wrong:
        problems.append(
            "the answer template says what the run did not compute: " + "; ".join(wrong)
        )
    description = (
        "; ".join(problems) or f"what the answer template says holds ({len(checked)} checked)"
    )
    return Verdict(
        kind=VerdictKind.ANSWER,
        passed=not (wrong or misfits),
        description=description,
        values={
            **checked,
            **dict.fromkeys(misfits, "does not fit its value"),
            **{item.split(" is ")[0]: "not computed" for item in wrong},
        },
    )


def _number(mention: str) -> str:
    match = _MENTION.match(mention)
    return match.group("number") if match else mention


def trace_answer(text: str, sources: Mapping[str, Any]) -> Verdict:
    """Find, for each number in `text`, the step or input that produced it, unit included."""
    trace: dict[str, str] = {}
    untraced: list[str] = []
    for match in _MENTION.finditer(text):
        token = match.group("number")  # the number as written keys the verdict's values
        number = float(token.replace(",", ""))
        unit = _unit(match.group("unit"))
        named = match.group("step")
        candidates = {named: sources.get(named)} if named else sources
        origin = [
            name
            for name, value in candidates.items()
            if value is not None and any(_matches(number, unit, n) for n in _numbers(value))
        ]
        if origin:
            trace[token] = ", ".join(origin)
        else:
            untraced.append(match.group(0).strip())
            trace.pop(token, None)
    description = (
        f"every number in the answer comes from a step ({len(trace)} traced)"
        if not untraced
        else f"numbers no step produced in that unit: {', '.join(untraced)}"
    )
    return Verdict(
        kind=VerdictKind.ANSWER,
        passed=not untraced,
        description=description,
        values={**trace, **{_number(mention): "untraced" for mention in untraced}},
        tolerance=TRACE_TOLERANCE,
    )


__all__ = ["TRACE_TOLERANCE", "check_answer_template", "trace_answer"]

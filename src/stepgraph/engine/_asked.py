"""The answer is of the kind the question asks: "How long did the grill run?" is no rate.

GSM8K train 957 ("burns fifteen coals every twenty minutes ... How long did the grill
run?"): the model's program multiplied coals by coals and divided by minutes; every step
checked backwards, and the run was verified with 135 1/min. The units said it: a question
asking for a time, a length or a unit has an answer of that dimension, or of that dimension
a period ("How many hours a day"). A plain number passes, for a plan that carries no units
cannot be told, and count nouns ("tiles") are no dimension.

Only these kinds. Counts ("How many mistakes") and sums of money were tried too, on the 528
recorded GSM8K train programs: they refused 5 wrong programs of 3 questions and 4 right ones,
whose units the engine's reading had left half attached ("$20 per hour" beside "20 hours":
a right 760 answered in hours).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pint

from stepgraph.model import Verdict, VerdictKind
from stepgraph.planner._read_goal import asked_unit, the_question
from stepgraph.units import dimension_name, format_value, is_count_unit, registry

_HOW_LONG = re.compile(r"\bhow\s+long\b", re.IGNORECASE)
_HOW_MUCH_TIME = re.compile(r"\bhow\s+much\s+(?:(?:more|less|extra|total)\s+)?time\b", re.I)
_HOW_FAR = re.compile(r"\bhow\s+far\b", re.IGNORECASE)
# "a day", "per week", "each hour", "daily": the answer may be so much of its kind a period
_A_PERIOD = re.compile(
    r"\b(?:per|an?|each|every)\s+(?:second|minute|hour|day|night|week|month|year)s?\b"
    r"|\b(?:hourly|daily|nightly|weekly|monthly|yearly|annually)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Asked:
    """What the question asks for, in words, and the dimensions an answer to it may have."""

    what: str
    dimensions: tuple[Any, ...]


def asked_kind(goal: str) -> Asked | None:
    """The kinds of quantity the goal's question asks for; None where it names none."""
    question = the_question(goal)
    if question is None:
        return None
    ureg = registry()
    time, length = ureg.second.dimensionality, ureg.metre.dimensionality
    unit = asked_unit(goal)
    if unit is not None:
        asked = Asked(f"for a value in {unit:~P} ({dimension_name(unit)})", (unit.dimensionality,))
    elif _HOW_MUCH_TIME.search(question):
        asked = Asked("how much time ([time])", (time,))
    elif _HOW_LONG.search(question):
        asked = Asked("how long ([time] or [length])", (time, length))
    elif _HOW_FAR.search(question):
        asked = Asked("how far ([length])", (length,))
    else:
        return None
    if _A_PERIOD.search(question):
        asked = Asked(asked.what, (*asked.dimensions, *(dim / time for dim in asked.dimensions)))
    return asked


def answer_kind(goal: str, values: Sequence[Any]) -> Verdict | None:
    """A failed verdict where no value the answer reports is of a kind the question asks.

    Any one will do: "20 Mbps: 140 s" answers "How long" with its second value, and which
    of several is the answer is for the cross-check to hold to the other route.
    """
    asked = asked_kind(goal)
    if asked is None or not values or any(_fits(value, asked) for value in values):
        return None
    shown = ", ".join(format_value(value) for value in values)
    kinds = ", ".join(dict.fromkeys(str(_measured(value)) for value in values))
    return Verdict(
        kind=VerdictKind.ANSWER,
        passed=False,
        description=f"the goal asks {asked.what}, and the answer's {shown} is {kinds}: a "
        "value of another kind answers another question; look again at what each step "
        "multiplies and divides",
        values={"answer": shown},
    )


def _fits(value: Any, asked: Asked) -> bool:
    """A plain number fits any question (a plan without units cannot be told)."""
    if not isinstance(value, pint.Quantity):
        return True
    dimension = _measured(value)
    return dimension == registry().dimensionless.dimensionality or dimension in asked.dimensions


def _measured(value: Any) -> Any:
    """The dimension of a quantity without its count nouns: 3 tiles/min is a 1 / [time]."""
    unit = registry().dimensionless
    for name, power in value.unit_items():
        if not is_count_unit(name):
            unit *= registry().Unit(name) ** power
    return unit.dimensionality

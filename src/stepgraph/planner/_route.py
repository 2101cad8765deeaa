"""Which route checks a goal's answer: another plan where units convert, else the words."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pint

from stepgraph.planner._read_goal import asked_unit

ARITHMETIC = frozenset({"calculate", "unit_convert"})
WORKED_ROUTES = ("worked", "worked-code")  # the routes whose witness is the worked answer


def route_for(goal: str, values: Iterable[Any], tools: Iterable[str] = ()) -> str:
    """The second route `auto` takes: another plan where the answer needs units converted.

    A model's words do conversions in its head, the very thing it gets wrong (on the
    suite's unit traps its worked answer was right 1 time in 10, 2026-12-03); another
    plan's units are converted by the engine. So: a plan where an input is data (bits,
    bytes) or the question asks for a unit of measure no input is written in ("How many
    hours" of minutes, "in MB/s" of Mbps); else the worked answer, its code worked out
    (counts and money, as in GSM8K). `values` are the goal's inputs, as read from it;
    `tools` the task's tools: with any but arithmetic, another plan.
    """
    if any(name not in ARITHMETIC for name in tools):
        # a lookup's answer comes from its tool (a register, a database): words written
        # without it only guess (the suite's lookups: "100 shareholders" against 4)
        return "plan"
    quantities = [v for v in values if isinstance(v, pint.Quantity)]
    if any("[information]" in value.dimensionality for value in quantities):
        return "plan"
    asked = asked_unit(goal)
    if asked is None or _is_money(asked):
        return "worked-code"
    # "How many weeks" of chocolates a day: no input is in time, so nothing converts; the
    # words count (GSM8K train 1633: another plan shared the first's misreading)
    kinds = set(asked.dimensionality)
    if not any(kinds & set(value.dimensionality) for value in quantities):
        return "worked-code"
    # "How many miles" of "3 miles a day": the words need no conversion to answer in it
    written = {name for value in quantities for name in value.units._units}
    return "worked-code" if set(asked._units) <= written else "plan"


def _is_money(unit: pint.Unit) -> bool:
    return all(str(dimension).startswith("[currency_") for dimension in unit.dimensionality)

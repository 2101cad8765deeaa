"""A question that asks for pairs of things the goal counts one by one needs a halving.

Held-out GSM8K 1267 ("10 2-legged animals and 15 4-legged animals ... how many pairs of
animal legs") was verified with 80: the program counted legs, and the model's words did the
same. Nothing checked that the answer was in pairs. Where the goal says "pair" nowhere
else ("22 pairs of shoes", "sold in pairs" count in pairs themselves), a count of pairs
comes from single things divided by two: of all 8,792 GSM8K train and test questions, 3 ask
"how many pairs" so (leggings, pencils, legs), and each solution halves. A plan that never
divides by two (nor multiplies by a half) fails a verdict that says so; a right plan that
counts in pairs from the start (two pairs of legs a dog) is unverified with it, which is
the price of the check.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from typing import Any

import pint

from stepgraph.engine._floors import calculations
from stepgraph.exceptions import StepgraphError
from stepgraph.model import Step, Verdict, VerdictKind
from stepgraph.planner._read_goal import the_question
from stepgraph.tools.expression import close, evaluate_node, parse_bound
from stepgraph.units import normalize

_ASKS_PAIRS = re.compile(r"\bhow\s+many\s+(?:\w+\s+)?pairs\b", re.IGNORECASE)
# Any other "pair" in the goal ("22 pairs of shoes", "sold in pairs", "$3/pair") may count
# in pairs itself: only a goal with none is held to a halving.
_PAIR = re.compile(r"\bpairs?\b", re.IGNORECASE)


def unpaired(
    goal: str, steps: Iterable[Step], actions: Mapping[str, dict[str, Any]]
) -> Verdict | None:
    """A failed verdict where pairs are asked of single things and no step halves."""
    question = the_question(goal)
    if question is None or not _ASKS_PAIRS.search(question):
        return None
    asked = [*_ASKS_PAIRS.finditer(goal)][-1]
    if _PAIR.search(goal[: asked.start()] + goal[asked.end() :]):
        return None
    if any(_halves(expression) for _, expression in calculations(steps, actions)):
        return None
    return Verdict(
        kind=VerdictKind.ANSWER,
        passed=False,
        description="the question asks how many pairs, and the goal counts single things: "
        "no step divides by 2, so the answer counts the things, not their pairs",
        values={"asked": asked.group(0)},
    )


def _halves(expression: Any) -> bool:
    """Whether the expression divides by two or multiplies by a half anywhere."""
    try:
        parsed = parse_bound(expression)
    except (StepgraphError, TypeError, ValueError):  # a hand-edited journal's expression
        return False
    for node in ast.walk(parsed.tree):
        if not isinstance(node, ast.BinOp):
            continue
        if isinstance(node.op, ast.Div | ast.FloorDiv):
            sides, factor = [node.right], 2.0
        elif isinstance(node.op, ast.Mult):
            sides, factor = [node.left, node.right], 0.5
        else:
            continue
        for side in sides:
            try:
                value = normalize(evaluate_node(side, parsed))
                # 2 leg/pair as much as a bare 2: what halves is the number
                value = value.magnitude if isinstance(value, pint.Quantity) else value
                if isinstance(value, int | float) and close(float(value), factor):
                    return True
            except (StepgraphError, ArithmeticError, TypeError, ValueError):
                continue
    return False

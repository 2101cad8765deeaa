"""A comparison the goal states, worked backwards: "Sean has half as many as Cal" as Cal = Sean / 2.

"A has k times as many as B" says A = k x B, so B = A / k. A small model now and then
multiplies the wrong way, and its worked answer in words does the same (GSM8K test 748:
"Sean has half as many marbles as Cal. If Sean has 56 marbles", Cal's 56 / 2 = 28 by the
program and the words alike, where Cal has 112; train 6042, 1 of 50 recorded programs for
such sentences), so the cross-check has no dissent to find. Read from the
goal's words and the plan's names: a step named for B (and not A) computed from a value
named for A (and not B) times k, or one named for A computed from B's divided by k.

Held narrow, to refuse no right plan: a sentence "<Name> <verb> k [times] as many|much|old
<what> as <Name>" that says what it compares (two different names, the second not "Cal's
sister" or "Cal and Ben"); a step named for one of the two and for nothing but what is
compared (`cal_marbles`, not `marbles_to_cal` or `cal_hours`), that is one product or
quotient of a value named for the other and a plain number (a literal, or an input that is
a number); and no other sentence about the same two people that the step works right.
Anything else is not judged.
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass
from typing import Any

from stepgraph.exceptions import PlanProblem, StepgraphError
from stepgraph.model import Step, StepGraph
from stepgraph.task import parse_input
from stepgraph.tools.expression import is_number, parse
from stepgraph.verifiers._numbers import as_float

_NAME = r"[A-Z][a-z]+"
_MULTIPLES = {
    "half": 0.5, "one half": 0.5, "one-half": 0.5, "a third": 1 / 3, "one third": 1 / 3,
    "one-third": 1 / 3, "a quarter": 0.25, "one quarter": 0.25, "one-quarter": 0.25,
    "twice": 2.0, "double": 2.0, "triple": 3.0, "thrice": 3.0,
}  # fmt: skip
_TIMES_WORDS = {
    "two": 2.0, "three": 3.0, "four": 4.0, "five": 5.0, "six": 6.0, "seven": 7.0,
    "eight": 8.0, "nine": 9.0, "ten": 10.0,
}  # fmt: skip
_MULTIPLE = (
    r"(?i:(?P<multiple>" + "|".join(sorted(_MULTIPLES, key=len, reverse=True)) + r")"
    r"|(?P<times>\d+(?:\.\d+)?|" + "|".join(_TIMES_WORDS) + r")\s+times)"
)
_AS_MANY = (
    rf"(?:{_MULTIPLE})\s+as\s+(?:many|much|old|tall|heavy)\b"
    rf"(?P<what>(?:(?!\bas\s+[A-Z])[^.?!;,]){{0,80}}?)\bas\s+(?P<b>{_NAME})\b"
    r"(?P<after>'s|\s+and\s+\w+\s+(?:combined|together|do|did|have|had)\b|\s+combined|\s+together)?"
)
_COMPARISON = re.compile(rf"\b(?P<a>{_NAME})\s+(?:[a-z]+\s+)?{_AS_MANY}")
# "Carli owns twice as many flutes as Charlie, half as many horns as Charlie": the same A
_AND_ALSO = re.compile(rf"(?:,\s*(?:and\s+)?|\s+and\s+){_AS_MANY}")
# capitalised words that are no one's name
_NOT_NAMES = {
    "she", "he", "they", "it", "we", "you", "i", "there", "this", "that", "the", "each",
    "every", "if", "all", "both", "his", "her", "their",
}  # fmt: skip
_FILLER = {"a", "an", "the", "of", "in", "on", "at", "to", "for", "with", "from", "by"}


@dataclass(frozen=True)
class Comparison:
    """One "A ... k as many ... as B" sentence: A's = k x B's."""

    text: str
    more: str  # A, lower case
    than: str  # B, lower case
    factor: float  # k
    what: frozenset[str] = frozenset()  # "packs of construction paper": packs, construction, paper


def comparisons(goal: str) -> list[Comparison]:
    """The goal's "A has k times as many ... as B" sentences, with two different names."""
    found = []
    for match in _COMPARISON.finditer(goal):
        more = match.group("a")
        found += _compared(match, more)
        at = match.end()
        while also := _AND_ALSO.match(goal, at):
            found += _compared(also, more)
            at = also.end()
    return found


def _compared(match: re.Match[str], more: str) -> list[Comparison]:
    than = match.group("b")
    if match.group("after"):
        return []  # "as Cal's sister", "as Cal and Ben have": not Cal alone
    if more.casefold() == than.casefold() or {more.casefold(), than.casefold()} & _NOT_NAMES:
        return []
    if match.group("multiple"):
        factor = _MULTIPLES[" ".join(match.group("multiple").casefold().split())]
    else:
        times = match.group("times").casefold()
        factor = _TIMES_WORDS[times] if times in _TIMES_WORDS else float(times)
    if factor in (0.0, 1.0):
        return []
    what = frozenset(_stem(w) for w in match.group("what").casefold().split()) - _FILLER
    text = match.group(0)
    if not text.startswith(more):  # the same A, carried over: "..., half as many horns as Charlie"
        text = f"{more} ... {text.removeprefix(',').strip().removeprefix('and ')}"
    return [Comparison(text, more.casefold(), than.casefold(), factor, what)]


def _stem(word: str) -> str:
    """A plural's singular, roughly ("boxes" is "boxe"): a miss only leaves a step unjudged."""
    return word.removesuffix("s")


def _named_for(name: str, person: str) -> bool:
    """Whether a step or input name names `person`: `cal_marbles`, `cals_age`."""
    return any(part in (person, f"{person}s") for part in name.casefold().split("_"))


def _number(node: ast.AST, names: dict[str, str], plan: StepGraph) -> float | None:
    """The plain number an operand stands for: a literal, or an input that is one."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return _finite(node.value)
    if isinstance(node, ast.Name) and names.get(node.id, "").startswith("inputs."):
        item = plan.inputs.get(names[node.id].removeprefix("inputs."))
        try:
            value: Any = parse_input(item.value) if item is not None else None
        except StepgraphError:
            return None
        return _finite(value) if is_number(value) else None
    return None


def _finite(value: Any) -> float | None:
    number = as_float(value)
    return number if number is not None and math.isfinite(number) else None


def _scaling(step: Step, plan: StepGraph) -> tuple[str, float] | None:
    """(the value scaled, by what) where `step` is one product or quotient of it and a number."""
    text = step.args.get("expression") if step.tool == "calculate" else None
    if not isinstance(text, str):
        return None
    try:
        parsed = parse(text)
    except StepgraphError:
        return None
    body = parsed.tree.body
    if not isinstance(body, ast.BinOp) or not isinstance(body.op, ast.Mult | ast.Div):
        return None
    names = {name: ".".join((ref.step, *ref.path)) for name, ref in parsed.references.items()}
    for value, number, divides in ((body.left, body.right, True), (body.right, body.left, False)):
        if not isinstance(value, ast.Name) or value.id not in names:
            continue
        by = _number(number, names, plan)
        if by is None or by == 0:
            continue
        if isinstance(body.op, ast.Div):
            if not divides:
                return None  # a number divided by the value: not a scaling
            by = 1 / by
        return names[value.id].removeprefix("inputs."), by
    return None


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b))


def _about(step_id: str, comparison: Comparison) -> bool:
    """Whether the step is one person's count of what the sentence compares.

    `cal_marbles` for "half as many marbles"; not `marbles_to_cal` (a gift) nor `cal_hours`
    ("as much" says nothing of what is compared).
    """
    people = {comparison.more, comparison.than}
    words = {_stem(w) for w in step_id.casefold().split("_")} - {_stem(p) for p in people}
    return bool(comparison.what) and words <= comparison.what


def _only(name: str, person: str, other: str) -> bool:
    return _named_for(name, person) and not _named_for(name, other)


def _way(step_id: str, source: str, by: float, comparison: Comparison) -> bool | None:
    """True where the step works the sentence the right way, False backwards, None: not it."""
    more, than, factor = comparison.more, comparison.than, comparison.factor
    if not _about(step_id, comparison):
        return None
    if _only(step_id, than, more) and _only(source, more, than):
        right, wrong = 1 / factor, factor  # B's = A's / k
    elif _only(step_id, more, than) and _only(source, than, more):
        right, wrong = factor, 1 / factor  # A's = B's x k
    else:
        return None
    return True if _close(by, right) else False if _close(by, wrong) else None


def direction_problems(plan: StepGraph, goal: str) -> list[PlanProblem]:
    """Steps that work one of the goal's "k times as many as" sentences the wrong way round."""
    stated = comparisons(goal)
    if not stated:
        return []
    problems = []
    for step in plan.steps:
        scaling = _scaling(step, plan)
        if scaling is None:
            continue
        source, by = scaling
        ways = {comparison: _way(step.id, source, by, comparison) for comparison in stated}
        if True in ways.values():
            continue  # right by one of the sentences about these two
        for comparison, way in ways.items():
            if way is False:
                more, than = comparison.more.title(), comparison.than.title()
                problems.append(
                    PlanProblem(
                        step.id,
                        f"the goal says \"{comparison.text}\": {more}'s = {than}'s x "
                        f"{comparison.factor:g}, so {than}'s = {more}'s / "
                        f"{comparison.factor:g}; this step works it the other way round",
                    )
                )
                break
    return problems


__all__ = ["Comparison", "comparisons", "direction_problems"]

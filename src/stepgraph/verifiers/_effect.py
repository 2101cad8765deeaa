"""Whether the answer depends on each number of the goal, or a plan only names some.

Coverage counts a number as used when a step names it. A plan can name one and still
ignore it: ``total = a + b + c + n`` then ``balls = total - n`` gives ``a + b + c`` whatever
``n`` is (a real small model's answer to "the toys, with the new balls, come to 228: how
many balls?"), and every reverse check passes, because the arithmetic is right. Here each
input the plan reads from the goal is put back as other values of its kind (the stand-ins
of `_depends`), the plan's `calculate` steps are evaluated again from it, and an input
that changes none of the answer's steps for any stand-in is inert: the answer does not
depend on it. Only `calculate` steps are evaluated again (pure, and already bound); a path
through any other tool gives no evidence either way.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from graphlib import CycleError, TopologicalSorter
from typing import Any

import pint

from stepgraph.exceptions import StepgraphError
from stepgraph.model import Step, Verdict, VerdictKind
from stepgraph.references import find_references
from stepgraph.tools.expression import Expression, evaluate
from stepgraph.verifiers._depends import stand_ins

_Key = tuple[str, str]  # ("inputs", name) or ("step", id)


def inert_inputs(
    steps: list[Step],
    actions: Mapping[str, dict[str, Any]],
    values: Mapping[str, Any],
    inputs: Mapping[str, Any],
    names: Iterable[str],
    targets: set[str],
) -> list[str]:
    """The inputs among `names` on which no value of the `targets` steps depends."""
    order = _order(steps, actions)
    if order is None:
        return []
    inert = []
    for name in names:
        if name not in inputs:
            continue
        evidence, changes = False, False
        for other in stand_ins(inputs[name]):
            moved = _again(order, actions, values, inputs, name, other)
            if moved is None or any(target in moved[1] for target in targets):
                continue  # a path through a step that cannot be evaluated again: no evidence
            evidence = True
            if any(
                target in moved[0] and not _same(moved[0][target], values[target])
                for target in targets
            ):
                changes = True
                break
        if evidence and not changes:
            inert.append(name)
    return inert


def effect_verdict(inert: list[str], quotes: Mapping[str, str]) -> Verdict | None:
    """A failed coverage verdict naming the inert inputs; None when there are none."""
    if not inert:
        return None
    named = ", ".join(f"'{quotes.get(name, name)}' ({name})" for name in inert)
    return Verdict(
        kind=VerdictKind.COVERAGE,
        passed=False,
        description=(
            f"the answer does not change with {named}: the plan names it but its value "
            "cancels out or never reaches the answer; use it where it belongs, or declare "
            "it unused with why"
        ),
        values=dict.fromkeys(inert, "inert"),
    )


def _order(steps: list[Step], actions: Mapping[str, dict[str, Any]]) -> list[Step] | None:
    """The steps in an order where each comes after the steps it refers to."""
    by_id = {step.id: step for step in steps}
    graph: dict[str, set[str]] = {}
    for step in steps:
        named = {ref.step for ref in find_references(step.args)} | set(step.depends_on)
        graph[step.id] = named & set(by_id)
    try:
        return [by_id[sid] for sid in TopologicalSorter(graph).static_order()]
    except CycleError:
        return None


def _key(step: str, path: tuple[str, ...]) -> _Key:
    return ("inputs", path[0]) if step == "inputs" and path else ("step", step)


def _again(
    order: list[Step],
    actions: Mapping[str, dict[str, Any]],
    values: Mapping[str, Any],
    inputs: Mapping[str, Any],
    name: str,
    other: Any,
) -> tuple[dict[str, Any], set[str]] | None:
    """Each step's value again with input `name` as `other`; and the steps it cannot redo."""
    changed: dict[_Key, Any] = {("inputs", name): other}
    redone: dict[str, Any] = {}
    unknown: set[str] = set()
    for step in order:
        expression = actions.get(step.id, {}).get("expression")
        if not isinstance(expression, Expression):
            if _takes(step, name, unknown, redone):
                unknown.add(step.id)
            continue
        bindings = dict(expression.bindings)
        touched = False
        for text in expression.bindings:
            for ref in find_references(text):
                key = _key(ref.step, tuple(ref.path))
                if key[0] == "step" and key[1] in unknown:
                    touched = True
                    bindings = {}
                elif key in changed and bindings:
                    if ref.step != "inputs" and ref.path:
                        bindings = {}  # a field of a value: not redone here
                    else:
                        bindings[text] = changed[key]
                    touched = True
        if not touched:
            continue
        if step.tool != "calculate" or not bindings:
            unknown.add(step.id)
            continue
        try:
            value = evaluate(Expression(expression.text, bindings))
        except (StepgraphError, ArithmeticError, ValueError, TypeError, pint.PintError):
            unknown.add(step.id)
            continue
        changed[("step", step.id)] = redone[step.id] = value
    del inputs, values
    return redone, unknown


def _takes(step: Step, name: str, unknown: set[str], redone: Mapping[str, Any]) -> bool:
    """Whether a step that is no bound expression takes the input or a changed step."""
    for ref in find_references(step.args):
        if ref.step == "inputs" and ref.path and ref.path[0] == name:
            return True
        if ref.step in unknown or ref.step in redone:
            return True
    return False


def _same(new: Any, old: Any) -> bool:
    if isinstance(new, pint.Quantity) and isinstance(old, pint.Quantity):
        try:
            new = new.to(old.units).magnitude
        except pint.PintError:
            return False
        old = old.magnitude
    if isinstance(new, int | float) and isinstance(old, int | float):
        return math.isclose(float(new), float(old), rel_tol=1e-9, abs_tol=1e-12)
    return bool(new == old)

"""A remembered plan re-bound to a new goal of the same shape: its quantities re-read, nothing else.

A verified plan answers its goal's question for the numbers it was given through its
inputs. The same sentence with other quantities asks the same question, so the plan
is taken again with each input re-read, by position, from the new goal's words. That
holds only where the plan took *every* stated quantity from an input: a number of the
old goal written into a step, a check, a constant or the answer would silently stay the
old one, so such a plan is refused here, before any check. What is left is checked
like any planner's plan (grounding, static checks, approval, execution, verification).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from stepgraph.model import GroundedInput, StepGraph, UnusedNumber
from stepgraph.planner import goal_shape, read_inputs
from stepgraph.verifiers import literal_numbers, matches, read_numbers


class RecallRefused(Exception):
    """A remembered plan cannot answer this goal; the reason says why (the planner is asked)."""


@dataclass(frozen=True)
class Recalled:
    """A remembered plan made this goal's: where it came from and what was re-bound."""

    plan: StepGraph
    from_run: str
    from_journal: str
    from_goal: str
    rebound: dict[str, dict[str, str]]  # input name -> was, now, quote


Rebound = dict[str, dict[str, str]]  # input name -> was, now, quote


def recall_note(from_run: str, from_goal: str, rebound: Rebound) -> str:
    """Where a recalled plan came from, as an approver reads it: the run, its goal, what changed."""
    changed = ", ".join(f"{name} {c['was']} -> {c['now']}" for name, c in rebound.items())
    return (
        f"recalled from verified run {from_run} (its goal: {from_goal}); "
        f"re-read from this goal: {changed or 'nothing'}"
    )


def rebind(plan_data: dict[str, Any], old_goal: str, new_goal: str) -> tuple[StepGraph, Rebound]:
    """The plan of `old_goal` with its inputs re-read from `new_goal`; `RecallRefused` if unsafe."""
    if goal_shape(old_goal) != goal_shape(new_goal):
        raise RecallRefused("the goal is another sentence, not the same one with other quantities")
    try:
        plan = StepGraph.model_validate(plan_data)
    except ValidationError as e:
        raise RecallRefused(f"the remembered plan does not read as a plan today: {e}") from e
    old_read, new_read = list(read_inputs(old_goal).values()), list(read_inputs(new_goal).values())
    if len(old_read) != len(new_read):
        raise RecallRefused("the two goals state a different number of quantities")
    bound = {name: _position(name, item, old_read) for name, item in plan.inputs.items()}
    numbers = read_numbers(old_goal)
    unused = {entry.number for entry in plan.unused}
    for index, number in enumerate(numbers):
        written = old_goal[number.start : number.end]
        if index not in bound.values() and written not in unused:
            raise RecallRefused(
                f"the plan does not take the goal's {written} from an input: re-binding the "
                "inputs would leave it as it was"
            )
    stated = _stated(old_goal)
    # A 1 in `1 - share` is arithmetic, not the goal's "1 Gbps", which an input carries.
    _refuse_copied_numbers(plan, [value for value in stated if value != 1])
    inputs = {name: new_read[index].model_copy() for name, index in bound.items()}
    rebound = {
        name: {"was": str(item.value), "now": str(inputs[name].value), "quote": inputs[name].quote}
        for name, item in plan.inputs.items()
    }
    moved = [_rebound_unused(entry, old_goal, new_goal) for entry in plan.unused]
    fresh = _without_stale_words(plan, stated, new_goal)
    return fresh.model_copy(update={"inputs": inputs, "unused": moved}), rebound


def _position(name: str, item: GroundedInput, read: list[GroundedInput]) -> int:
    """Which of the goal's quantities a plan input is (the engine read it so), by position."""
    for index, candidate in enumerate(read):
        if candidate.quote == item.quote and str(candidate.value) == str(item.value):
            return index
    raise RecallRefused(
        f"input '{name}' ({item.value}) is not a quantity the engine read from the goal"
    )


def _stated(goal: str) -> list[float]:
    """The goal's quantities as values (90% -> 0.9) and as written (90, 2.5, the 6 of 06:00)."""
    found = []
    for number in read_numbers(goal):
        found.append(number.value)
        written = goal[number.start : number.end].replace(",", "")
        found += [float(digits) for digits in re.findall(r"\d+(?:\.\d+)?", written)]
    return [value for value in found if value != 0]


def _refuse_copied_numbers(plan: StepGraph, stated: list[float]) -> None:
    """Refuse a plan that writes a number of its goal anywhere but in its inputs."""
    places: list[tuple[str, Any]] = [(f"step '{s.id}'", s.args) for s in plan.steps]
    places += [(f"check '{c.expression}'", c.expression) for c in plan.checks]
    places += [(f"constant '{name}'", c.value) for name, c in plan.constants.items()]
    places += [("the answer", _outside_references(plan.answer or ""))]
    for where, value in places:
        copied = [n for n in literal_numbers(value) if matches(n, stated)]
        if copied:
            raise RecallRefused(
                f"{where} writes {copied[0]:g}, a number of the remembered goal, itself: "
                "re-binding the inputs would leave it as it was"
            )


def _outside_references(text: str) -> str:
    return re.sub(r"\$\{[^}]*\}", " ", text)


def _rebound_unused(entry: UnusedNumber, old_goal: str, new_goal: str) -> UnusedNumber:
    """An unused number of the old goal, as the new goal writes the quantity in its place."""
    old = [old_goal[n.start : n.end] for n in read_numbers(old_goal)]
    new = [new_goal[n.start : n.end] for n in read_numbers(new_goal)]
    if entry.number not in old:
        raise RecallRefused(f"the plan's unused number '{entry.number}' is not one of its goal's")
    return entry.model_copy(update={"number": new[old.index(entry.number)]})


def _without_stale_words(plan: StepGraph, stated: list[float], new_goal: str) -> StepGraph:
    """The plan with thoughts that state the old goal's numbers left out: they would mislead.

    An approver reading "convert 450 Mbps" above a step that now converts 1 Gbps is told
    something false; a thought without numbers still describes the step.
    """

    def fresh(text: str) -> str:
        numbers = [float(n) for n in re.findall(r"\d+(?:\.\d+)?", text.replace(",", ""))]
        return "" if any(matches(n, stated) for n in numbers) else text

    steps = [step.model_copy(update={"thought": fresh(step.thought)}) for step in plan.steps]
    checks = [check.model_copy(update={"why": fresh(check.why)}) for check in plan.checks]
    return plan.model_copy(
        update={
            "goal": new_goal if plan.goal else "",
            "thought": fresh(plan.thought),
            "steps": steps,
            "checks": checks,
        }
    )

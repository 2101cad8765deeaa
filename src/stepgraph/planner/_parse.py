"""From a model's text to a validated `StepGraph`, or to the exact list of problems.

The order is: cut the JSON out of prose and code fences, repair near-JSON with
json-repair, rename fields models commonly misname, validate with pydantic, then
run the executor's static checks. Every repair is noted, so the journal says what
was changed in the model's output.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import json_repair
import pint
from pydantic import ValidationError

from stepgraph.exceptions import PlanProblem, PlanValidationError
from stepgraph.executor import static_outputs, validate_plan
from stepgraph.model import Check, GroundedInput, StepGraph
from stepgraph.planner._hand import undo_hand_conversions
from stepgraph.planner._named_factors import undo_named_factors
from stepgraph.planner._named_rates import read_named_rates
from stepgraph.planner._periods import count_periods
from stepgraph.planner._prompt import MAX_PLAN_STEPS
from stepgraph.planner._read_goal import bind_read_inputs
from stepgraph.planner._siblings import bind_by_sibling_units, undo_conversions_in_sums
from stepgraph.task import MAX_NESTING, declared_values
from stepgraph.tools import UNKNOWN, ToolRegistry
from stepgraph.verifiers import NOT_STATED

if TYPE_CHECKING:
    import networkx as nx

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_STEP_ALIASES = {
    "step_id": "id",
    "name": "id",
    "action": "tool",
    "tool_name": "tool",
    "function": "tool",
    "arguments": "args",
    "params": "args",
    "parameters": "args",
    "input": "args",
    "dependencies": "depends_on",
    "deps": "depends_on",
    "after": "depends_on",
    "reason": "thought",
    "reasoning": "thought",
}


@dataclass
class ParsedPlan:
    """The outcome of parsing one model answer."""

    plan: StepGraph | None
    problems: list[PlanProblem] = field(default_factory=list)
    repairs: list[str] = field(default_factory=list)
    data: dict[str, Any] | None = None  # the JSON object as read, to quote in feedback
    graph: nx.DiGraph | None = None  # the valid plan's graph, as its static checks built it


def extract_json(text: str) -> str | None:
    """The JSON object in a model's answer: inside a code fence, or from the first '{'.

    The object ends where its braces balance (strings respected), so prose after it
    is dropped; an object that never closes (a truncated answer) is kept whole for
    json-repair, rather than cut back to an earlier '}' and silently losing steps.
    """
    fenced = _FENCE.search(text)
    if fenced:
        text = fenced.group(1)
    start = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=-1)
    if start < 0:
        return None
    end, _ = _balance(text, start)
    return text[start:] if end is None else text[start : end + 1]


def _balance(text: str, start: int) -> tuple[int | None, int]:
    """Where the JSON value opening at `start` closes (None: never), and its deepest nesting."""
    depth, deepest, in_string, escaped = 0, 0, False, False
    for index in range(start, len(text)):
        char = text[index]
        if in_string:
            escaped = not escaped and char == "\\"
            in_string = escaped or char != '"'
        elif char == '"':
            in_string = True
        elif char in "{[":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return index, deepest
    return None, deepest


class _Unreadable(Exception):
    """An answer that is refused before parsing, with the problem to send back."""


def _load(text: str, repairs: list[str]) -> Any:
    candidate = extract_json(text)
    if candidate is None:
        return None
    if candidate.strip() != text.strip():
        repairs.append("cut the JSON object out of the surrounding text")
    _, deepest = _balance(candidate, 0)
    if deepest > MAX_NESTING:  # json and json-repair would recurse into a RecursionError
        raise _Unreadable(
            f"the JSON nests {deepest:,} levels deep; the limit is {MAX_NESTING} "
            "(a plan needs a handful)"
        )
    try:
        return json.loads(candidate)
    except json.JSONDecodeError:
        repaired = json_repair.loads(candidate)
        repairs.append("repaired near-JSON (quotes, commas, comments or truncation)")
        return repaired


def _normalize(data: dict[str, Any], repairs: list[str]) -> dict[str, Any]:
    if "steps" not in data and isinstance(data.get("plan"), dict):
        data = data["plan"]
        repairs.append("unwrapped the plan from a 'plan' key")
    steps = data.get("steps")
    if isinstance(steps, list):
        data["steps"] = [_normalize_step(s, i, repairs) for i, s in enumerate(steps)]
    return data


def _normalize_step(step: Any, index: int, repairs: list[str]) -> Any:
    if not isinstance(step, dict):
        return step
    renamed = {}
    for key, value in step.items():
        target = _STEP_ALIASES.get(key, key)
        if target != key and target not in step:
            repairs.append(f"step {index + 1}: renamed '{key}' to '{target}'")
            key = target
        renamed[key] = value
    if isinstance(renamed.get("depends_on"), str):
        renamed["depends_on"] = [renamed["depends_on"]]
    return renamed


def _schema_problems(error: ValidationError, data: dict[str, Any]) -> list[PlanProblem]:
    raw_steps = data.get("steps")
    steps: list[Any] = raw_steps if isinstance(raw_steps, list) else []
    problems = []
    for item in error.errors():
        loc = list(item["loc"])
        step_id = None
        if len(loc) >= 2 and loc[0] == "steps" and isinstance(loc[1], int):
            raw = steps[loc[1]] if loc[1] < len(steps) else None
            step_id = str(raw.get("id")) if isinstance(raw, dict) and raw.get("id") else None
            where = ".".join(map(str, loc[2:])) or "step"
            if step_id is None:
                where = f"steps[{loc[1]}].{where}"
        else:
            where = ".".join(map(str, loc)) or "plan"
        message = item["msg"]
        if item["type"] == "extra_forbidden":
            message = "unknown field; allowed fields are those of the schema"
        problems.append(PlanProblem(step_id, f"{where}: {message}"))
    return problems


def parse_plan(
    text: str,
    tools: ToolRegistry,
    inputs: Mapping[str, Any] | None = None,
    checks: list[Check] | None = None,
    *,
    answer: str | None = None,
    read: Mapping[str, GroundedInput] | None = None,
) -> ParsedPlan:
    """Parse, repair and validate a model's answer into a plan, or list its problems.

    `read` are the inputs the engine read from the goal: the plan gets those it refers to.
    """
    repairs: list[str] = []
    try:
        data = _load(text, repairs)
    except _Unreadable as e:
        return ParsedPlan(None, [PlanProblem(None, str(e))], repairs)
    if isinstance(data, list):
        data = {"steps": data}
        repairs.append("wrapped a bare list of steps into a plan")
    if not isinstance(data, dict) or not data:
        return ParsedPlan(None, [PlanProblem(None, "the answer holds no JSON object")], repairs)
    data = _normalize(data, repairs)
    steps = data.get("steps")
    if isinstance(steps, list) and len(steps) > MAX_PLAN_STEPS:
        message = f"the plan has {len(steps):,} steps; the limit is {MAX_PLAN_STEPS}"
        return ParsedPlan(None, [PlanProblem(None, message)], repairs)
    try:
        plan = StepGraph.model_validate(data)
    except ValidationError as e:
        return ParsedPlan(None, _schema_problems(e, data), repairs, data)
    if read:
        plan = bind_read_inputs(plan, read)
    declared, problems = declared_values(plan, taken=inputs or {})  # read from the goal
    values = {**declared, **(inputs or {})}
    stated = _stated(values, read or {})
    if read and (bound := bind_by_sibling_units(plan, values, read, repairs, tools)) is not plan:
        plan = bound
        declared, problems = declared_values(plan, taken=inputs or {})
        values = {**declared, **(inputs or {})}
    if read:
        plan = read_named_rates(plan, values, read, repairs, tools)
    plan = undo_conversions_in_sums(plan, values, repairs, tools)
    plan = count_periods(plan, values, repairs, tools)
    plan = undo_hand_conversions(plan, values, stated, repairs, tools)
    plan = undo_named_factors(plan, values, repairs, tools)
    graph = None
    try:
        graph = validate_plan(plan, tools, values, checks, answer=answer)
    except PlanValidationError as e:
        unlabelled = _without_plain_labels(plan, e.problems, repairs, tools, values)
        if unlabelled is None:
            problems += e.problems
        else:
            plan = unlabelled
            try:
                graph = validate_plan(plan, tools, values, checks, answer=answer)
            except PlanValidationError as again:
                problems += again.problems
    if problems:
        return ParsedPlan(None, problems, repairs, data)
    return ParsedPlan(plan, [], repairs, data, graph)


_DIGITS = re.compile(r"\d+(?:\.\d+)?")
_PLAIN_LABELLED = "the output is a plain number, but expect_unit"
_NO_UNIT_LABEL = "expect_unit: unknown unit"
_CHECK_PROBLEM = re.compile(r"check '(?P<expression>.*)': ", re.DOTALL)
_UNFOUNDED = (NOT_STATED, "looks like a conversion factor")


def _without_plain_labels(
    plan: StepGraph,
    problems: list[PlanProblem],
    repairs: list[str],
    tools: ToolRegistry,
    values: Mapping[str, Any],
) -> StepGraph | None:
    """The plan without the units it declares on plain numbers (None: it declares none).

    A small model copies the unit slot (``fairies: "h" = fairies_50 + 25``) onto a count:
    nothing the step computes has that unit, so the label, not the number, is wrong. A
    label that is no unit at all (``nights: "n"``, ``age: "y"``) is dropped where the
    step's output, traced without it, is a plain number too. A unit the step's own
    quantities give it, but another one, stays refused.
    """
    labelled = {p.step for p in problems if p.step and p.message.startswith(_PLAIN_LABELLED)}
    unknown = {p.step for p in problems if p.step and p.message.startswith(_NO_UNIT_LABEL)}
    if unknown:
        traced = static_outputs(_unlabelled(plan, unknown), tools, values)
        labelled |= {step for step in unknown if _is_plain(traced.get(step, UNKNOWN))}
    if not labelled:
        return None
    for step in plan.steps:
        if step.id in labelled:
            repairs.append(
                f"step '{step.id}': its output is a plain number, so its unit label "
                f"'{step.expect_unit}' was dropped"
            )
    return _unlabelled(plan, labelled)


def without_unfounded_checks(
    plan: StepGraph, problems: list[PlanProblem], repairs: list[str]
) -> StepGraph | None:
    """The plan without its checks that use a number the goal does not state (None: none).

    A small model asserts the answer it worked out in its head (``assert hours == 2.25``)
    or converts by hand inside a check (``assert hours * 60 == minutes``): the check is
    refused, and with it a plan whose steps were fine (the suite's minutes-to-hours: its
    cross-check plan, three times). A check is the plan's own extra; the engine's reverse
    checks and the cross-check still verify the steps. Such a check is dropped and said;
    a number it alone used is then reported unused, as it would be without it.
    """
    unfounded = {
        match.group("expression")
        for problem in problems
        if problem.step is None
        and (match := _CHECK_PROBLEM.match(problem.message)) is not None
        and any(reason in problem.message for reason in _UNFOUNDED)
    }
    kept = [check for check in plan.checks if check.expression not in unfounded]
    if len(kept) == len(plan.checks):
        return None
    for expression in sorted(unfounded):
        repairs.append(f"check '{expression}' dropped: it uses a number the goal does not state")
    return plan.model_copy(update={"checks": kept})


def _unlabelled(plan: StepGraph, steps: set[str]) -> StepGraph:
    changed = [
        step.model_copy(update={"expect_unit": None}) if step.id in steps else step
        for step in plan.steps
    ]
    return plan.model_copy(update={"steps": changed})


def _is_plain(value: Any) -> bool:
    if value is UNKNOWN or isinstance(value, bool):
        return False
    if isinstance(value, pint.Quantity):
        return bool(value.dimensionless)
    return isinstance(value, (int, float))


def _stated(values: Mapping[str, Any], read: Mapping[str, GroundedInput]) -> set[float]:
    """The numbers the inputs give: their values' and, for those read, their quotes'."""
    numbers = {
        float(n) for item in read.values() for n in _DIGITS.findall(item.quote.replace(",", ""))
    }
    for value in values.values():
        magnitude = getattr(value, "magnitude", value)
        if isinstance(magnitude, int | float) and not isinstance(magnitude, bool):
            numbers.add(float(magnitude))
    return numbers

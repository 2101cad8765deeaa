"""Static checks of a step graph: everything that can be known before anything runs."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

import networkx as nx
import pint

from stepgraph.exceptions import (
    CalculationError,
    PlanProblem,
    PlanValidationError,
    StepgraphError,
    UnitsDoNotCancelError,
)
from stepgraph.executor._graph import StepDiGraph
from stepgraph.executor._heap import collector_paused
from stepgraph.model import RESERVED_IDS, Check, Step, StepGraph
from stepgraph.references import (
    REFERENCE_PATTERN,
    Reference,
    ReferenceError_,
    find_references,
    lookup,
    malformed_references,
    resolve,
)
from stepgraph.task import PreparedTask
from stepgraph.tools import UNKNOWN, ToolRegistry
from stepgraph.tools.expression import Expression, check_syntax, evaluate, suggest_unit
from stepgraph.units import (
    compatible,
    convert,
    dimension_name,
    is_count_unit,
    parse_unit,
    quantity,
)


def build_graph(steps: list[Step]) -> nx.DiGraph:
    """A DiGraph with an edge from each step to the steps that use its output or wait for it."""
    return _graph(steps, [dependencies(step) for step in steps])


def _graph(steps: list[Step], upstream: list[list[str]]) -> nx.DiGraph:
    """`build_graph` with each step's dependencies known (in bulk: networkx's per-call cost)."""
    graph = StepDiGraph()
    graph.add_nodes_from((step.id, {"step": step}) for step in steps)
    ids = graph.nodes
    graph.add_edges_from(
        (dep, step.id)
        for step, deps in zip(steps, upstream, strict=True)
        for dep in deps
        if dep in ids
    )
    return graph


def dependencies(step: Step) -> list[str]:
    """Ids a step waits for: those its arguments reference, then its `depends_on`."""
    return _dependencies(step, find_references(step.args))


def _dependencies(step: Step, refs: Iterable[Reference]) -> list[str]:
    found = [ref.step for ref in refs if ref.step not in RESERVED_IDS]
    return list(dict.fromkeys([*found, *step.depends_on]))


def _arg_references(step: Step) -> dict[str, list[Reference]]:
    """Each argument's references, found once per step and shared by every check below."""
    return {name: list(find_references(value)) for name, value in step.args.items()}


def validate_plan(
    plan: StepGraph,
    tools: ToolRegistry,
    inputs: Mapping[str, Any] | None = None,
    checks: list[Check] | None = None,
    *,
    answer: str | None = None,
) -> nx.DiGraph:
    """Return the plan's graph, or raise `PlanValidationError` listing every problem.

    `answer` is the task's answer template, which replaces the plan's own.
    """
    with collector_paused():  # it builds much, keeps most and makes no cycles
        return _validate_plan(plan, tools, inputs or {}, checks, answer)


def _validate_plan(
    plan: StepGraph,
    tools: ToolRegistry,
    inputs: Mapping[str, Any],
    checks: list[Check] | None,
    answer: str | None,
) -> nx.DiGraph:
    problems: list[PlanProblem] = []
    if not plan.steps:
        problems.append(PlanProblem(None, "the plan has no steps; add at least one tool call"))
    ids = Counter(step.id for step in plan.steps)
    for step_id, count in sorted(ids.items()):
        if count > 1:
            problems.append(PlanProblem(step_id, f"id used by {count} steps; ids must be unique"))
        if step_id in RESERVED_IDS:
            problems.append(PlanProblem(step_id, f"'{step_id}' is reserved; choose another id"))
    known = _KnownSteps(ids)
    refs = [_arg_references(step) for step in plan.steps]
    for step, step_refs in zip(plan.steps, refs, strict=True):
        problems.extend(_step_problems(step, step_refs, known, tools, inputs))
    for index, check in enumerate([*plan.checks, *(checks or [])], start=1):
        problems.extend(_check_problems(index, check, known, inputs))
    template = answer if answer is not None else plan.answer
    problems.extend(
        PlanProblem(None, f"answer template: {_malformed(text)}")
        for text in malformed_references(template or "")
    )
    for ref in find_references(template or ""):
        problem = _reference_problem(ref, known, inputs)
        if problem is None:
            continue
        if ref.step not in ids and ref.step != "inputs":  # a result named but never computed
            problem += f"; add a step '{ref.step}' that computes it, or quote one that exists"
        problems.append(PlanProblem(None, f"answer template: {problem}"))
    upstream = [
        _dependencies(step, (ref for found in step_refs.values() for ref in found))
        for step, step_refs in zip(plan.steps, refs, strict=True)
    ]
    graph = _graph(plan.steps, upstream)
    try:  # one linear pass; the cycles are looked for only when there is one
        order = list(nx.topological_sort(graph))
    except nx.NetworkXUnfeasible:
        problems.extend(_cycle_problems(graph))
    else:
        if all(count == 1 for count in ids.values()):
            by_id = {step.id: step_refs for step, step_refs in zip(plan.steps, refs, strict=True)}
            prototypes, step_problems = _prototypes(graph, order, by_id, tools, inputs)
            problems.extend(step_problems)
            for index, check in enumerate([*plan.checks, *(checks or [])], start=1):
                problems.extend(_check_unit_problems(index, check, prototypes))
    if problems:
        raise PlanValidationError(problems)
    return graph


def check_plan(plan: StepGraph, task: PreparedTask) -> nx.DiGraph:
    """Validate a plan against a prepared task: its tools, inputs, checks and answer template."""
    return validate_plan(plan, task.tools, task.inputs, task.extra_checks, answer=task.answer)


def step_problems(
    step: Step, written: set[str], tools: ToolRegistry, inputs: Mapping[str, Any]
) -> list[PlanProblem]:
    """One step's own problems, while the rest of its plan is still being written.

    Steps it refers to count as present: a forward reference is checked once the plan
    is whole. `written` holds the ids seen so far; seeing this id among them is a duplicate.
    """
    ids = _KnownSteps(Counter({*written, *dependencies(step), step.id}))
    problems = _step_problems(step, _arg_references(step), ids, tools, inputs)
    if step.id in written:
        problems.append(PlanProblem(step.id, "id used by 2 steps; ids must be unique"))
    if step.id in RESERVED_IDS:
        problems.append(PlanProblem(step.id, f"'{step.id}' is reserved; choose another id"))
    return problems


class _KnownSteps:
    """The plan's step ids, and the list of them a message shows (built once, kept short).

    A message per dangling reference that listed every id would make a large plan with
    many bad references cost its size squared, and no reader wants 100,000 ids.
    """

    SHOWN = 30

    def __init__(self, ids: Counter[str]) -> None:
        self.ids = ids
        self._listing: str | None = None

    def __contains__(self, step_id: object) -> bool:
        return step_id in self.ids

    def listing(self) -> str:
        if self._listing is None:
            names = sorted(self.ids)
            shown = ", ".join(names[: self.SHOWN]) or "none"
            more = len(names) - self.SHOWN
            self._listing = shown + (f", ... ({len(names):,} in all)" if more > 0 else "")
        return self._listing


def _reference_problem(ref: Reference, ids: _KnownSteps, inputs: Mapping[str, Any]) -> str | None:
    if ref.step == "inputs":
        if not ref.path:
            return f"{ref.text} must name an input, e.g. ${{inputs.{next(iter(inputs), 'name')}}}"
        if not inputs:
            return (
                f"{ref.text}: this goal lists no inputs; write the value from the goal with "
                f"its unit in place of {ref.text} (e.g. '450 Mbps'), or declare it under "
                f'"inputs" with the goal\'s words: "{ref.path[0]}": '
                '{"value": "450 Mbps", "quote": "a 450 Mbps link"}'
            )
        if ref.path[0] not in inputs:
            known = ", ".join(sorted(inputs))
            return f"{ref.text} names no task input (inputs: {known})"
        return None
    if ref.step not in ids:
        return f"{ref.text} refers to no step (steps: {ids.listing()})"
    return None


def _step_problems(
    step: Step,
    refs: dict[str, list[Reference]],
    ids: _KnownSteps,
    tools: ToolRegistry,
    inputs: Mapping[str, Any],
) -> list[PlanProblem]:
    messages = [_malformed(text) for text in malformed_references(step.args)]
    for ref in (ref for found in refs.values() for ref in found):
        if ref.step == step.id:
            messages.append(f"{ref.text} refers to the step itself")
        elif (problem := _reference_problem(ref, ids, inputs)) is not None:
            messages.append(problem)
    for upstream in step.depends_on:
        if upstream == step.id:
            messages.append("depends_on names the step itself")
        elif upstream not in ids:
            messages.append(f"depends_on names unknown step '{upstream}'")
    if step.tool not in tools:
        messages.append(f"unknown tool '{step.tool}' (allowed: {', '.join(tools.names())})")
    else:
        # Arguments holding references are typed at run time, once the values exist.
        referenced = [name for name, found in refs.items() if found]
        messages.extend(tools.get(step.tool).literal_arg_problems(step.args, referenced))
    if step.expect_unit is not None:
        try:
            parse_unit(step.expect_unit)
        except StepgraphError as e:
            messages.append(
                f"expect_unit: {e}; a count (people, nights) is a bare number: remove expect_unit"
            )
    return [PlanProblem(step.id, message) for message in messages]


def _check_problems(
    index: int, check: Check, ids: _KnownSteps, inputs: Mapping[str, Any]
) -> list[PlanProblem]:
    messages = [
        problem
        for ref in find_references(check.expression)
        if (problem := _reference_problem(ref, ids, inputs)) is not None
    ]
    try:
        check_syntax(check.expression)
    except StepgraphError as e:
        messages.append(str(e))
    return [PlanProblem(None, f"check {index} ({check.expression}): {m}") for m in messages]


def _check_unit_problems(index: int, check: Check, prototypes: dict[str, Any]) -> list[PlanProblem]:
    """A check that orders or adds quantities of two kinds can never hold: say so now.

    "${hours} >= ${inputs.dataset}" (hours against TiB, the 1.5B model on the suite's
    `tib-copy-hours`) failed only after the run, and the right answer with it. A step's
    prototype stands in for its value (1 of its unit, where it declares one), so only a
    units error is reported; anything else is the run's to find. (`==` across kinds is
    false rather than an error, and is left to the run too.)
    """
    refs = list(find_references(check.expression))
    if not all(_known(ref, prototypes) for ref in refs):
        return []
    try:
        values = {ref.text: lookup(ref, prototypes) for ref in refs}
    except ReferenceError_:
        return []
    if any(value is UNKNOWN for value in values.values()):
        return []
    try:
        evaluate(Expression(check.expression, values))
    except CalculationError as e:
        if isinstance(e.__cause__, pint.DimensionalityError):
            return [PlanProblem(None, f"check {index} ({check.expression}): {e}")]
    except StepgraphError:
        pass  # the run's to report
    return []


def _cycle_problems(graph: nx.DiGraph) -> list[PlanProblem]:
    problems = []
    for node in sorted(nx.nodes_with_selfloops(graph)):
        problems.append(PlanProblem(node, "depends on itself"))
    for component in nx.strongly_connected_components(graph):
        if len(component) < 2:
            continue
        edges = nx.find_cycle(graph.subgraph(component), source=min(component))
        path = " -> ".join([edge[0] for edge in edges] + [edges[0][0]])
        problems.append(
            PlanProblem(min(component), f"cycle {path}; remove one of these dependencies")
        )
    return problems


def static_outputs(
    plan: StepGraph, tools: ToolRegistry, inputs: Mapping[str, Any]
) -> dict[str, Any]:
    """Each step's output as the static checks see it: magnitude 1 in its real unit.

    A step whose unit cannot be known (an unknown tool, a record, a refused unit) maps to
    `UNKNOWN`; a plan with a cycle or a repeated id gets no prototypes at all.
    """
    refs = {step.id: _arg_references(step) for step in plan.steps}
    if len(refs) != len(plan.steps):
        return {}
    graph = build_graph(plan.steps)
    try:
        order = list(nx.topological_sort(graph))
    except nx.NetworkXUnfeasible:
        return {}
    prototypes, _ = _prototypes(graph, order, refs, tools, inputs)
    return {step_id: prototypes[step_id] for step_id in refs}


def _prototypes(
    graph: nx.DiGraph,
    order: list[str],
    refs: dict[str, dict[str, list[Reference]]],
    tools: ToolRegistry,
    inputs: Mapping[str, Any],
) -> tuple[dict[str, Any], list[PlanProblem]]:
    """Run each tool's static hook on prototypes (magnitude 1, real units) in graph order."""
    prototypes: dict[str, Any] = {"inputs": dict(inputs)}
    problems = []
    nodes: dict[str, dict[str, Any]] = graph._node  # the plain dicts networkx's view wraps
    for step_id in order:
        step: Step = nodes[step_id]["step"]
        prototype = UNKNOWN
        if step.tool not in tools:
            prototypes[step_id] = prototype  # already reported as an unknown tool
            continue
        infer = tools.get(step.tool).infer
        if infer is not None:  # the prototype arguments are for the hook alone
            try:
                expressions = tools.get(step.tool).expression_args
                args = _prototype_args(step.args, refs[step_id], prototypes, expressions)
                prototype = infer(args)
            except UnitsDoNotCancelError as e:  # the fix divides by the expected unit
                problems.append(PlanProblem(step_id, str(suggest_unit(e, step.expect_unit))))
            except (StepgraphError, ReferenceError_) as e:  # ${inputs.name.field} of a text
                problems.append(PlanProblem(step_id, str(e)))
        if step.expect_unit is not None:
            try:
                expected = parse_unit(step.expect_unit)
            except StepgraphError:
                prototypes[step_id] = UNKNOWN  # already reported
                continue
            if prototype is not UNKNOWN and not compatible(prototype, step.expect_unit):
                problems.append(PlanProblem(step_id, _unit_mismatch(prototype, step.expect_unit)))
                prototype = UNKNOWN  # do not cascade a wrong unit into later steps
            elif is_count_unit(expected):  # a plain number stays plain, as at run time
                prototype = 1 if prototype is UNKNOWN else convert(prototype, step.expect_unit)
            else:
                prototype = quantity(1, expected)
        prototypes[step_id] = prototype
    return prototypes, problems


def _malformed(text: str) -> str:
    return (
        f"'{text}' is not a reference: write ${{step}} or ${{step.field}}, with fields and "
        "list positions by name or number (${rows.0.holder}), no brackets or spaces"
    )


def _unit_mismatch(prototype: Any, expect_unit: str) -> str:
    expected = dimension_name(parse_unit(expect_unit))
    if dimension_name(prototype) == "dimensionless":  # a small model's usual slip
        return (
            f"the output is a plain number, but expect_unit '{expect_unit}' is {expected}: "
            f"write the unit into the expression (e.g. '5 {expect_unit}'), or remove expect_unit"
        )
    return f"output is in {dimension_name(prototype)} but expect_unit '{expect_unit}' is {expected}"


def _prototype_args(
    args: dict[str, Any],
    arg_refs: dict[str, list[Reference]],
    prototypes: dict[str, Any],
    expressions: frozenset[str],
) -> Any:
    resolved = {}
    for name, value in args.items():
        refs = arg_refs[name]
        known = all(_known(ref, prototypes) for ref in refs)
        if name in expressions and isinstance(value, str):
            # Bound as far as known, so a hook sees a text input used as a number even
            # beside a reference whose unit is unknown; the hook sees which are missing.
            found = [ref for ref in refs if _known(ref, prototypes)]
            resolved[name] = Expression(value, {ref.text: lookup(ref, prototypes) for ref in found})
        elif not refs:
            resolved[name] = value
        else:
            resolved[name] = resolve(value, prototypes) if known else UNKNOWN
    return resolved


def _known(ref: Reference, prototypes: dict[str, Any]) -> bool:
    if ref.step == "inputs":
        return bool(ref.path) and ref.path[0] in prototypes["inputs"]
    return prototypes.get(ref.step, UNKNOWN) is not UNKNOWN and not ref.path


__all__ = [
    "REFERENCE_PATTERN",
    "build_graph",
    "check_plan",
    "dependencies",
    "step_problems",
    "validate_plan",
]

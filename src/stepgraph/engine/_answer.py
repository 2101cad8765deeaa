"""The answer stage: the answer template rendered, or the model's words traced to steps.

No answer is made up: when a step or a verification failed, the answer says what is
missing and why.
"""

from __future__ import annotations

import re
from typing import Any

import networkx as nx
import pint

from stepgraph.executor import Execution, build_graph
from stepgraph.journal import JournalWriter
from stepgraph.model import StepGraph, Verdict, VerdictKind
from stepgraph.planner import Planner
from stepgraph.references import (
    REFERENCE_PATTERN,
    ReferenceError_,
    find_references,
    lookup,
    resolve,
)
from stepgraph.task import PreparedTask
from stepgraph.units import format_value
from stepgraph.verifiers import (
    check_answer_template,
    effect_verdict,
    inert_inputs,
    said_words,
    trace_answer,
    write_said_units,
)


def compose_answer(
    task: PreparedTask,
    plan: StepGraph,
    execution: Execution,
    verdicts: list[Verdict],
    planner: Planner | None,
    journal: JournalWriter,
) -> tuple[str, Verdict | None]:
    """The answer, or ``no answer: ...`` saying what is missing.

    No answer is made up from failed steps or failed verifications. A template that
    cannot be rendered although nothing failed adds a failed `answer` verdict, so
    such a run is never verified.
    """
    template = task.answer or plan.answer
    scope = {"inputs": task.inputs, **execution.values}
    problems = failures_of(execution, verdicts)  # non-empty: the status already says so
    rendered: Any = None
    if template:
        try:
            rendered = resolve(_unit_said_once(write_said_units(template, scope), scope), scope)
        except ReferenceError_:
            text = f"no answer: {_missing(template, scope, plan, execution)}"
            return text, None if problems else _failed_answer(text)
    if problems:
        return f"no answer: {'; '.join(problems)}", None
    if template:
        said = check_answer_template(template, scope, task.task.goal)
        if said is not None and not said.passed:
            return f"no answer: {said.description}", said
        return (rendered if isinstance(rendered, str) else format_value(rendered)), said
    if planner is None:  # every step ran and verified: name the plan's final value
        last = [step.id for step in plan.steps if step.id in execution.values][-1:]
        if not last:
            text = "no answer: the plan produced no value to answer with"
            return text, _failed_answer(text)
        return "; ".join(f"{s} = {format_value(execution.values[s])}" for s in last), None
    text = planner.answer(task.task.goal, execution.values, journal)
    sources = {
        **execution.values,
        **{f"inputs.{k}": v for k, v in task.inputs.items()},
    }
    return text, trace_answer(text, sources)


def answer_sources(
    task: PreparedTask, plan: StepGraph, execution: Execution, verdicts: list[Verdict]
) -> dict[str, str]:
    """Each number of the answer as shown, and the step (or input) it comes from.

    A template names its steps: each number is mapped to the references that wrote it,
    never to another step that happens to hold the same number. Two references written
    alike are both named, in the template's order (``{"1": "best, nights_b"}``). A
    model's own words are traced number by number.
    """
    template = task.answer or plan.answer
    if template:
        scope = {"inputs": task.inputs, **execution.values}
        converted = {said.start: said for said in said_words(template, scope) if not said.problem}
        named: dict[str, list[str]] = {}
        for match in REFERENCE_PATTERN.finditer(template):
            ref = next(find_references(match.group(0)))
            if match.start() in converted:  # written in the template's unit: "5.55556 hours"
                shown = converted[match.start()].text
            else:
                try:
                    shown = format_value(lookup(ref, scope))
                except ReferenceError_:
                    continue
            steps = named.setdefault(shown, [])
            name = ".".join((ref.step, *ref.path))
            if name not in steps:
                steps.append(name)
        return {shown: ", ".join(steps) for shown, steps in named.items()}
    traced = [v for v in verdicts if v.kind == VerdictKind.ANSWER and v.step is None]
    if not traced:
        return {}
    return {number: step for number, step in traced[-1].values.items() if step != "untraced"}


_WORD_AFTER = re.compile(r"[ \t]+([^\s,;:()]+)")


def _unit_said_once(template: str, scope: dict[str, Any]) -> str:
    """The template without a unit written again after a quantity that already shows it.

    A reference to a quantity renders with its unit, so ``${size} GB`` read "1,200 GB GB".
    Only the very unit the value is shown in is dropped: another one is left for the
    template check to judge, and the value is never converted here.
    """
    pieces: list[str] = []
    kept = 0
    for match in REFERENCE_PATTERN.finditer(template):
        after = _WORD_AFTER.match(template, match.end())
        if after is None:
            continue
        try:
            value = lookup(next(find_references(match.group(0))), scope)
        except ReferenceError_:
            continue  # the caller reports what is missing
        shown = format_value(value).partition(" ")[2] if isinstance(value, pint.Quantity) else ""
        word = after.group(1)
        if shown and word.rstrip(".!?") == shown:
            pieces.append(template[kept : match.end()])
            kept = after.end() - (len(word) - len(word.rstrip(".!?")))  # keep the full stop
    return "".join(pieces) + template[kept:]


def _failed_answer(text: str) -> Verdict:
    return Verdict(kind=VerdictKind.ANSWER, passed=False, description=text)


def _missing(template: str, scope: dict[str, Any], plan: StepGraph, execution: Execution) -> str:
    """Why the template's references have no value, each failed step's error said once."""
    graph = build_graph(plan.steps)
    said: set[str] = set()
    reasons: list[str] = []
    for reference in find_references(template):
        name = reference.step
        if name in execution.failed:
            error = "" if name in said else f": {execution.failed[name]}"
            reason = f"step '{name}' failed{error}"
            said.add(name)
        elif name in execution.skipped:
            upstream = _failed_upstream(graph, name, execution)
            if not upstream:
                reason = f"step '{name}' was skipped: {execution.skipped[name]}"
            elif upstream in said:
                reason = f"step '{name}' was skipped (step '{upstream}' failed)"
            else:
                said.add(upstream)
                error = execution.failed[upstream]
                reason = f"step '{name}' was skipped: step '{upstream}' failed: {error}"
        elif name not in scope and name not in graph:
            reason = f"{reference.text}: the plan has no step '{name}'"
        else:
            try:
                lookup(reference, scope)
                continue
            except ReferenceError_ as e:
                reason = str(e)
        if reason not in reasons:
            reasons.append(reason)
    return "; ".join(reasons) or "the answer template cannot be rendered"


def _failed_upstream(graph: nx.DiGraph, step: str, execution: Execution) -> str:
    """The first failed step (in plan order) that a skipped step depends on."""
    ancestors = nx.ancestors(graph, step)
    return next((name for name in execution.failed if name in ancestors), "")


def failures_of(execution: Execution, verdicts: list[Verdict]) -> list[str]:
    """What a repair must address: failed steps, then failed verifications."""
    failures = [f"step '{step}' failed: {error}" for step, error in execution.failed.items()]
    failures += [
        f"verification failed ({v.kind.value}{', step ' + repr(v.step) if v.step else ''}): "
        f"{v.description}"
        for v in verdicts
        if not v.passed
    ]
    return failures


def answer_effect(plan: StepGraph, execution: Execution, prepared: PreparedTask) -> Verdict | None:
    """A failed verdict when a number the plan read from the goal never changes its answer."""
    target = answer_target(plan, execution, prepared)
    if target is None or target not in execution.values:
        return None
    targets = {target}
    unused = {entry.number for entry in plan.unused}
    names = [
        name
        for name, item in plan.inputs.items()
        if not any(number in item.quote for number in unused)
    ]
    inputs = prepared.for_plan(plan).inputs
    inert = inert_inputs(plan.steps, execution.actions, execution.values, inputs, names, targets)
    return effect_verdict(inert, {name: item.quote for name, item in plan.inputs.items()})


def answer_target(plan: StepGraph, execution: Execution, prepared: PreparedTask) -> str | None:
    """The step whose value the answer reports: the template's first, else the last that ran."""
    template = prepared.answer or plan.answer
    ids = [step.id for step in plan.steps]
    first = next((r.step for r in find_references(template or "") if r.step in ids), None)
    ran = [sid for sid in ids if sid in execution.values]
    return first if first is not None else (ran[-1] if ran else None)


def answer_values(plan: StepGraph, execution: Execution, prepared: PreparedTask) -> list[Any]:
    """The values the answer reports: its template's steps in order, else the target's."""
    template = prepared.answer or plan.answer
    ids = [step.id for step in plan.steps if step.id in execution.values]
    named = [r.step for r in find_references(template or "") if r.step in ids]
    target = answer_target(plan, execution, prepared)
    steps = list(dict.fromkeys(named)) or ([target] if target in execution.values else [])
    return [execution.values[step] for step in steps]


def answer_steps(
    task: PreparedTask, plan: StepGraph, execution: Execution, sources: dict[str, str]
) -> set[str]:
    """The steps the answer's value comes from: the template's, the traced, or the last.

    A template's value is its first step: in "${total} (bio ${bio}, geo ${geo})" the
    parts beside the headline being checked says nothing of the headline.
    """
    steps = {step.id for step in plan.steps}
    template = task.answer or plan.answer
    if template:
        first = next((r.step for r in find_references(template) if r.step in steps), None)
        named = {first} if first is not None else set()
    else:
        named = {name for names in sources.values() for name in names.split(", ")}
    named &= steps
    if named or template:
        return named
    last = [step.id for step in plan.steps if step.id in execution.values][-1:]
    return set(last)

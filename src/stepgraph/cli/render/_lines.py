"""One line per journal event, for `stepgraph show` and the live display alike.

`render_event` dispatches on the event's class and reads typed attributes. Values may
be Python objects (an event handed to a listener) or their JSON form (an event read
from the journal); every value goes through `decode_value`, a no-op on the former, so
both render the same line.
"""

from __future__ import annotations

import json
from functools import singledispatch
from typing import Any

from rich.text import Text

from stepgraph.journal import (
    STREAMED_PIECES,
    Action,
    AnswerEvent,
    BudgetExceeded,
    CheckEvent,
    JournalEvent,
    LLMRequest,
    LLMResponse,
    LLMReused,
    LLMUnused,
    ObservationEvent,
    PlanApproved,
    PlanEdited,
    PlanExamples,
    PlanInvalid,
    PlanProposed,
    PlanRecalled,
    PlanRejected,
    PlanRepair,
    PlanRevise,
    RunEnd,
    RunResume,
    RunStart,
    StepReused,
    StepSkipped,
    Thought,
)
from stepgraph.tools.expression import Expression
from stepgraph.units import Quantity, display_data, format_value
from stepgraph.values import decode_value


def _value(data: Any) -> str:
    return format_value(decode_value(data))


def _argument(data: Any) -> str:
    """Quantities as people write them (450 Mbps), everything else as JSON (no float noise).

    JSON rather than `format_value` for numbers: ``x=2,500`` would read as two arguments.
    """
    value = decode_value(data)
    if isinstance(value, Quantity):
        return format_value(value)
    return json.dumps(display_data(value), ensure_ascii=False)


def _is_expression(value: Any) -> bool:
    return isinstance(value, Expression) or (isinstance(value, dict) and "$expression" in value)


def _expression(data: Any) -> str:
    """``ceil(${total} / ${per_night}); total = 2,500 GB, per_night = 962.28 GB``.

    The text as written, then what each reference was bound to: people see both the
    formula and the exact inputs, which `Expression.display` would merge into one.
    """
    expression = Expression.from_data(decode_value(data))
    bound = ", ".join(
        f"{name.removeprefix('${').removesuffix('}').strip()} = {_argument(value)}"
        for name, value in expression.bindings.items()
    )
    return f"{expression.text}; {bound}" if bound else expression.text


def _arguments(args: dict[str, Any]) -> str:
    if len(args) == 1 and all(map(_is_expression, args.values())):
        return _expression(next(iter(args.values())))  # calculate(...): the name adds nothing
    return ", ".join(
        f"{name}={_expression(value) if _is_expression(value) else _argument(value)}"
        for name, value in args.items()
    )


def _step(event: JournalEvent) -> str:
    return f"[{event.step}] " if event.step else ""


# `ScriptedLLM.model`, spelled here so `show` does not import the planner (a test keeps
# the two equal).
SCRIPTED_MODEL = "scripted"


@singledispatch
def render_event(event: JournalEvent) -> Text | None:
    """The line a person reads for `event`, or None for kinds not worth a line."""
    return None


@render_event.register
def _run_start(event: RunStart) -> Text:
    return Text(f"run {event.run_id} of task '{event.task}': {event.goal.strip()}", style="bold")


@render_event.register
def _run_resume(event: RunResume) -> Text:
    line = f"resumed after event {event.after_seq}; running again: {event.rerun}"
    return Text(line, style="bold")


@render_event.register
def _llm_request(event: LLMRequest) -> Text:
    # A scripted planner (`ScriptedLLM`, --scripted) answers from a file: no model is asked.
    asked = "scripted answer" if event.model == SCRIPTED_MODEL else "asking the model"
    return Text(f"{asked} ({event.purpose}, attempt {event.attempt})", style="dim")


@render_event.register
def _llm_response(event: LLMResponse) -> Text:
    said = [_usage(event.usage)] if event.usage else []
    if event.stream:  # a streamed answer: complete, stopped at an invalid step, not streamed
        said.append(f"streamed: {event.stream}")
    took = f"{event.latency_ms:.0f} ms"
    return Text(
        f"model ({event.purpose}, attempt {event.attempt}): {'; '.join([*said, took])}",
        style="dim",
    )


def _usage(usage: dict[str, int]) -> str:
    if STREAMED_PIECES in usage:  # the server told none: the engine counted the stream
        return f"completion_tokens {usage['completion_tokens']} (counted as streamed)"
    return ", ".join(f"{key} {value}" for key, value in usage.items())


@render_event.register
def _llm_unused(event: LLMUnused) -> Text:
    said = _usage(event.usage) if event.usage else "no usage reported"
    return Text(f"model ({event.purpose}, asked ahead, not used): {said}", style="dim")


@render_event.register
def _llm_reused(event: LLMReused) -> Text:
    return Text(
        f"model ({event.purpose}, attempt {event.attempt}): asked before at attempt "
        f"{event.asked_attempt}, sampled the same; that answer again, not asked",
        style="dim",
    )


@render_event.register
def _plan_proposed(event: PlanProposed) -> Text:
    count = len(event.plan["steps"])
    line = Text(f"plan {event.plan_hash[:12]} from {event.source}: {count} steps", style="bold")
    for text in grounding_lines(event.plan):
        line.append(f"\n  {text}", style="")
    return line


@render_event.register
def _plan_recalled(event: PlanRecalled) -> Text:
    if event.refused:
        why = "; ".join(event.refused)
        return Text(f"memory: run {event.from_run}'s plan does not fit this goal ({why})", "yellow")
    line = Text(f"plan recalled from verified run {event.from_run} (no model call)", "bold cyan")
    line.append(f"\n  its goal: {event.from_goal}", style="")
    for name, change in event.rebound.items():
        line.append(f"\n  re-read {name}: {change['was']} -> {change['now']}", style="")
    return line


@render_event.register
def _plan_examples(event: PlanExamples) -> Text:
    runs = ", ".join(str(example.get("run_id")) for example in event.examples)
    return Text(f"worked examples from memory: runs {runs}", style="dim")


def grounding_lines(plan: dict[str, Any]) -> list[str]:
    """The numbers a plan read from the goal, with their quotes; its constants and unused."""
    lines = [
        f'input {name} = {item.get("value")}  quoting "{item.get("quote")}"'
        for name, item in (plan.get("inputs") or {}).items()
    ]
    lines += [
        f"constant {name} = {item.get('value')}  because {item.get('why')}"
        for name, item in (plan.get("constants") or {}).items()
    ]
    lines += [
        f"unused {item.get('number')}  because {item.get('why')}"
        for item in plan.get("unused") or []
    ]
    return lines


@render_event.register
def _plan_invalid(event: PlanInvalid) -> Text:
    return Text("plan rejected: " + "; ".join(event.problems), style="yellow")


def _decision(event: PlanApproved | PlanRejected | PlanEdited) -> Text:
    verb = event.event.split(".")[1]
    who = f"by {event.who} ({event.how}) at {event.when or event.ts}"
    return Text(f"plan {event.plan_hash[:12]} {verb} {who}", style="cyan")


for _kind in (PlanApproved, PlanRejected, PlanEdited):
    render_event.register(_kind, _decision)


@render_event.register
def _plan_revise(event: PlanRevise) -> Text:
    return Text(f"revision asked by {event.who}: {event.comment}", style="cyan")


@render_event.register
def _plan_repair(event: PlanRepair) -> Text:
    changed = ", ".join([*event.diff["added"], *event.diff["changed"]]) or "checks or answer only"
    failures = "; ".join(event.failures)
    return Text(f"repair round {event.round}: changed {changed}, to fix: {failures}", "bold yellow")


@render_event.register
def _thought(event: Thought) -> Text | None:
    return Text(f"{_step(event)}thought: {event.text}") if event.text else None


@render_event.register
def _action(event: Action) -> Text:
    call = f"{event.tool}({_arguments(event.args)})"
    return Text(f"{_step(event)}action: {call} attempt {event.attempt}")


@render_event.register
def _observation(event: ObservationEvent) -> Text:
    took = f"{event.duration_ms:.1f} ms, attempt {event.attempt}"
    if event.ok:
        return Text(f"{_step(event)}observation: {_value(event.value)} ({took})", style="green")
    again = "" if event.final else ", retrying"
    return Text(f"{_step(event)}observation: ERROR {event.error} ({took}{again})", style="red")


@render_event.register
def _step_reused(event: StepReused) -> Text:
    return Text(f"{_step(event)}kept from an earlier round: {_value(event.value)}", style="cyan")


@render_event.register
def _step_skipped(event: StepSkipped) -> Text:
    return Text(f"{_step(event)}skipped: {event.reason}", style="magenta")


@render_event.register
def _check(event: CheckEvent) -> Text:
    mark = "pass" if event.passed else "FAIL"
    line = f"{_step(event)}{mark} {event.kind}: {event.description}"
    return Text(line, style="green" if event.passed else "bold red")


def source_marks(sources: dict[str, str]) -> str:
    """``3 <- ${nights}, 1 <- ${best}, 1 <- ${nights_b}``: each number with each step it is from."""
    marks = [(number, step) for number, steps in sources.items() for step in steps.split(", ")]
    return ", ".join(f"{number} <- ${{{step}}}" for number, step in marks)


@render_event.register
def _answer(event: AnswerEvent) -> Text:
    line = Text(f"answer: {event.text}", style="bold")
    if event.sources:
        marks = source_marks(event.sources)
        line.append(f"\n  where each number comes from: {marks}", style="dim")
    return line


@render_event.register
def _budget_exceeded(event: BudgetExceeded) -> Text:
    used = event.used.get(event.limit)
    name = event.limit.replace("_", " ")
    line = f"budget: {name} {used} used of {event.allowed:g}; stopped before a {event.before} call"
    return Text(line, style="bold yellow")


@render_event.register
def _run_end(event: RunEnd) -> Text:
    return Text(f"run ended: {event.status} after {event.duration_ms:.0f} ms", style="bold")

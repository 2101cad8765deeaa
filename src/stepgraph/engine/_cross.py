"""The cross-check: another plan, reaching the goal by its own route, must agree.

A plan whose numbers agree with each other can still answer another question (a rate
applied twice, `ceil` where the goal wants full crates). With `cross_check`, after a run
whose every verdict passed, the planner is asked for another plan, independently and
sampling more widely; it runs with its step ids prefixed (``x_``; a later try ``x2_``,
``x3_``, so the journal tells them apart), is verified like the first, and the final
values of the two plans must agree. A plan that cannot be made, run or verified does not
count: another is asked for, up to `TRIES` in all, for a small model often fails to make
one valid plan, and "one more plan or nothing" threw away runs the next plan would have
confirmed. The first other plan that ran and verified decides; none is asked for after it.
Taking a majority instead was refused: two plans by one model share its misreadings, and
a wrong answer outvoting the one right route would be reported verified.

With the planner's ``cross_route="worked"`` the second route is the model's own answer in
words (`Planner.worked`, asked as a user would ask it without stepgraph): its final number
must agree with the plan's final value, and each plain number the answer quotes must be
among the numbers the words write down. Its arithmetic is never used, only compared: a
plan and a worked answer that misread the goal alike are rarer than two plans that do, and
the words come back from a small model nearly always, where a second valid plan often does
not. A worked answer that disagrees leaves the run unverified; no repair is asked for,
since the words cannot say which of the two misread the goal. With the planner's ``second_words``
the worked answer is first asked once more, sampled: where that one agrees with the plan and
its own code backs its words, three routes stand against one and the run verifies, the first
words' dissent in the verdict. Routes that agree only after another disagreed (a second
sample in words alone, a fresh plan held to the first words) give their answer unverified:
on GSM8K a fifth of such two-to-one votes verified a wrong answer, of first agreements 1
in 40.

Disagreement between two plans that both ran and verified goes to a repair round with the
other plan and its values; the repaired plan's answer is compared with that plan's (no
more plans are asked for). Disagreement that remains, or no other plan that ran and
verified, leaves the run unverified: the cross-check never confirms what it could not
reproduce.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pint

from stepgraph.engine._planning import shown_examples
from stepgraph.exceptions import LLMError, PlanningError, PlanValidationError
from stepgraph.executor import Execution, check_plan, execute
from stepgraph.journal import JournalWriter, PlanProposed
from stepgraph.model import StepGraph, Verdict, VerdictKind, WorkedExample
from stepgraph.planner import Planner, WorkedAhead, asked_unit
from stepgraph.planner._route import WORKED_ROUTES, route_for
from stepgraph.planner._worked import computed, final_number, slipped_final, stated_numbers
from stepgraph.references import REFERENCE_PATTERN, find_references
from stepgraph.task import PreparedTask
from stepgraph.tools import ToolRegistry
from stepgraph.tools.expression import close
from stepgraph.units import format_pair, format_value
from stepgraph.verifiers import verify

PREFIX = "x_"
AGREEMENT = 1e-3  # relative: two routes may round differently on the way
TRIES = 3  # other plans asked for at most, each a model call


@dataclass(frozen=True)
class Second:
    """The second plan, what its steps produced, and its final value."""

    plan: StepGraph
    values: dict[str, Any]
    final: Any
    known: list[Any]  # every value the second route holds: its steps' and its inputs'


@dataclass(frozen=True)
class Words:
    """The model's worked answer as a witness: the number it ends on, and all it holds."""

    said: float
    known: list[Any]  # the numbers it writes down and, for its code, the values worked out
    how: str  # "in words", or "its code worked out by the engine"
    backed: bool = False  # its words and its own code end on the same number: two routes


@dataclass(frozen=True)
class CrossOutcome:
    """The cross-check's verdict and, when a second plan ran and verified, that plan.

    `words`: the worked answer a worked route compared, kept so that a fresh plan asked
    after a disagreement is held against the same words (no second worked answer).
    """

    verdict: Verdict
    second: Second | None = None
    words: Words | None = None
    after_dissent: bool = False  # agreeing only after another route disagreed: not passed

    @property
    def words_disagree(self) -> bool:
        """A worked answer with a number, and a plan that ran and passed, not agreeing.

        Not an agreement reached after a dissent: its verdict fails, yet nothing disagrees
        with it that a fresh plan could settle.
        """
        return self.words is not None and not self.verdict.passed and not self.after_dissent

    def repair_material(self) -> list[str]:
        """What a repair round is shown on disagreement: the verdict, the other plan, its values."""
        assert self.second is not None, "only two plans that both ran can disagree"
        shown = json.dumps(self.second.plan.model_dump(mode="json", exclude_defaults=True))
        produced = "; ".join(f"{s} = {format_value(v)}" for s, v in self.second.values.items())
        return [
            f"{self.verdict.description}. Both plans ran and verified, so one of them misreads "
            "the goal: read the goal again, word by word, and make your plan answer exactly "
            "what it asks",
            f"the second plan was: {shown}",
            f"its steps produced: {produced}",
        ]


def compare_with_words(
    words: Words, task: PreparedTask, plan: StepGraph, execution: Execution
) -> CrossOutcome:
    """A fresh plan's answer against the worked answer already given (no new model call).

    Agreeing, it answers, but unverified: the first plan, which passed its own checks,
    still disagrees, and such a two-to-one vote was wrong 4 times in 19 (`DISSENT`).
    """
    template = task.answer or plan.answer
    first = _final_value(plan, execution, template)
    if first is None:
        return CrossOutcome(_verdict(False, "the fresh plan produced no final value"), words=words)
    outcome = held_to_words(words, task, first, template, execution, again=True)
    if not outcome.verdict.passed:
        return outcome
    return _after_dissent(outcome, "the first plan disagreed with them")


# Why an agreement reached only after a disagreement verifies nothing: measured on the
# small model's GSM8K runs (docs/performance.md, "An agreement after a disagreement").
DISSENT = (
    "an agreement reached only after a disagreement is no verification (on GSM8K a fifth "
    "of such two-to-one votes were wrong, of first agreements 1 in 40)"
)


def _after_dissent(agreed: CrossOutcome, dissent: str) -> CrossOutcome:
    """Routes that agree only after another route disagreed: the answer stands unverified."""
    description = f"{agreed.verdict.description}; but {dissent}: {DISSENT}"
    verdict = agreed.verdict.model_copy(update={"passed": False, "description": description})
    return replace(agreed, verdict=verdict, after_dissent=True)


def compare_with(
    second: Second, plan: StepGraph, execution: Execution, template: str | None
) -> CrossOutcome:
    """A repaired plan's answer against the second plan already run (no new model call)."""
    first = _final_value(plan, execution, template)
    if first is None:
        return CrossOutcome(_verdict(False, "the repaired plan produced no final value"), second)
    shown_first, shown_second = format_pair(first, second.final)
    agree = _agree(first, second.final)
    verb = "now agrees with" if agree else "still disagrees with"
    description = f"the repaired plan {verb} the second plan: {shown_first} against {shown_second}"
    missing = _unreproduced(template, execution, second.known) if agree else []
    if missing:
        agree, description = False, f"{description}, but {'; '.join(missing)}"
    return CrossOutcome(
        _verdict(agree, description, first=shown_first, second=shown_second), second
    )


def _unreproduced(
    template: str | None,
    execution: Execution,
    known: list[Any],
    holder: str = "second plan's values",
) -> list[str]:
    """The answer's numbers that the second route holds values of their kind for, but not them.

    Final values can agree while a number the answer also states is wrong (a rate divided
    where it should multiply, rounded up to the same count): each step value the answer
    quotes must be among the second route's values of the same dimension, when it has any.
    """
    missing = []
    for ref in find_references(template or ""):
        value = execution.values.get(ref.step) if not ref.path else None
        if not isinstance(value, int | float | pint.Quantity) or isinstance(value, bool):
            continue
        kind = [v for v in known if _same_kind(value, v)]
        if kind and not any(_agree(value, v) for v in kind):
            seen = ", ".join(format_value(v) for v in kind[:4])
            missing.append(
                f"the answer's {format_value(value)} (${{{ref.step}}}) is not among the "
                f"{holder} of that kind ({seen})"
            )
    return missing


def _same_kind(value: Any, other: Any) -> bool:
    if isinstance(other, bool) or not isinstance(other, int | float | pint.Quantity):
        return False
    if isinstance(value, pint.Quantity) and isinstance(other, pint.Quantity):
        return bool(value.dimensionality == other.dimensionality)
    plain = not isinstance(value, pint.Quantity) or value.units.dimensionless
    return plain and (not isinstance(other, pint.Quantity) or other.units.dimensionless)


def cross_check(
    task: PreparedTask,
    plan: StepGraph,
    execution: Execution,
    planner: Planner,
    journal: JournalWriter,
    *,
    max_workers: int,
    backend: Any,
    tries: int = TRIES,
    ahead: WorkedAhead | None = None,
    examples: Sequence[WorkedExample] = (),
) -> CrossOutcome:
    """Another, independent plan; its final value, and the answer's numbers, must agree.

    `ahead`: the worked answer already asked for (worked routes), taken instead of asking.
    """
    first = _final_value(plan, execution, task.answer or plan.answer)
    if first is None:
        return CrossOutcome(_verdict(False, "a plan produced no final value to compare"))
    if (alone := _conversion_alone(task, plan, first)) is not None:
        return CrossOutcome(alone)
    route = getattr(planner, "cross_route", "plan")
    if route == "auto":
        # the inputs read from the goal with it
        inputs = task.for_plan(plan).inputs.values()
        route = route_for(task.task.goal, inputs, task.tools.names())
    if route in WORKED_ROUTES:
        template = task.answer or plan.answer
        code = route == "worked-code"
        return worked_check(
            task, first, template, execution, planner, journal, code=code, ahead=ahead
        )
    # A check must not change the world, and nobody approved the other plans: they may
    # call only tools without side effects (the static checks refuse any other).
    task = replace(task, tools=ToolRegistry(item for item in task.tools if not item.side_effects))
    lost: list[str] = []  # why each plan asked for could not be compared
    for number in range(1, tries + 1):
        prefix = PREFIX if number == 1 else f"x{number}_"
        try:
            other = _other_plan(task, planner, journal, prefix, max_workers, backend, examples)
        except LLMError as e:  # the endpoint, not the plan: asking again would only wait again
            lost.append(f"no plan ({e})")
            break
        if isinstance(other, Second):
            verdict = _compared(first, other, task.answer or plan.answer, execution)
            if lost:
                note = f" (after {len(lost)} other plan(s) that could not be compared)"
                verdict = verdict.model_copy(update={"description": verdict.description + note})
            return CrossOutcome(verdict, other)
        lost.append(other)
    return CrossOutcome(_verdict(False, f"no second plan to compare with: {'; '.join(lost)}"))


def _conversion_alone(task: PreparedTask, plan: StepGraph, first: Any) -> Verdict | None:
    """A passed verdict where the plan only converts the goal's one quantity into the unit asked.

    "How many GB is 2 TiB?" planned as ``unit_convert(data, "GB")`` has no other route to
    compare: any plan reads the same one number and converts it into the same unit, and the
    conversion is checked backwards already. Another plan only asks the model again (the
    suite's unit traps: up to nine more plans, most refused, and the right answer left
    unverified). Only a plan of that one step, on a goal with that one quantity, into the
    very unit the question names; anything more is cross-checked as before.
    """
    if len(plan.steps) != 1:
        return None
    step = plan.steps[0]
    if step.tool != "unit_convert":
        # only unit_convert is converted back by the reflection stage: a `calculate` copy
        # with a declared unit has no reverse check, and would be "verified" unchecked
        return None
    source, target = step.args.get("value"), step.args.get("to_unit")
    inputs = task.for_plan(plan).inputs
    if len(inputs) != 1 or not isinstance(first, pint.Quantity) or not isinstance(target, str):
        return None
    [(name, value)] = inputs.items()
    asked = asked_unit(task.task.goal)
    if not isinstance(value, pint.Quantity) or asked is None or first.units != asked:
        return None
    if not isinstance(source, str) or source.strip() != f"${{inputs.{name}}}":
        return None
    return _verdict(
        True,
        f"the goal's one quantity converted into the unit it asks for ({format_value(value)} "
        f"is {format_value(first)}): no other route to compare; the conversion is checked "
        "backwards",
    )


def worked_check(
    task: PreparedTask,
    first: Any,
    template: str | None,
    execution: Execution,
    planner: Planner,
    journal: JournalWriter,
    *,
    code: bool = False,
    ahead: WorkedAhead | None = None,
) -> CrossOutcome:
    """The model's worked answer in words against the plan's final value and quoted numbers.

    With `code`, a worked answer that writes a program the engine can read (`computed`) is
    held by the program's value, worked out here, not by the output the model wrote for it.
    """
    try:
        text = planner.worked(task, journal, ahead=ahead)
    except LLMError as e:
        return CrossOutcome(_verdict(False, f"no worked answer to compare with ({e})"))
    words = _read_words(text, code)
    if words is None:
        return CrossOutcome(_verdict(False, "the model's worked answer states no number"))

    def hold(words: Words) -> CrossOutcome:
        return held_to_words(words, task, first, template, execution)

    outcome = hold(words)
    if outcome.verdict.passed or not getattr(planner, "second_words", False):
        return outcome
    if _agree_magnitude(in_asked_unit(first, task.task.goal), words.said):
        return outcome  # the final numbers agree; another number of the answer does not
    if words.backed:  # two routes against the plan's one: a second sample cannot outvote them
        said = f"{outcome.verdict.description} (its own code says so too: no second worked answer)"
        return replace(outcome, verdict=outcome.verdict.model_copy(update={"description": said}))
    return _second_words(outcome, hold, lambda: planner.worked(task, journal, attempt=2), code)


def _second_words(
    disagreed: CrossOutcome,
    hold: Callable[[Words], CrossOutcome],
    ask: Callable[[], str],
    code: bool,
) -> CrossOutcome:
    """The worked answer asked once more (`ask`, sampled), after the first disagreed.

    Where the second agrees with the plan (`hold`) and its own code backs its words, three
    routes stand against the first words' one and the plan's answer verifies, the dissent
    named in the verdict. Agreeing unbacked, the plan's answer stands unverified: two
    samples of one model against each other are a coin (on GSM8K train such agreements
    were wrong 4 times in 12). Else the first disagreement stands, with the first words
    (a fresh plan is held against them).
    """
    try:
        words = _read_words(ask(), code)
    except LLMError:
        return disagreed
    if words is None:
        return disagreed
    second = hold(words)
    if not second.verdict.passed:
        return disagreed
    said = disagreed.verdict.values.get("second", "?")
    if not words.backed:
        dissent = f"it is a second worked answer, sampled, unbacked by code; the first said {said}"
        return _after_dissent(second, dissent)
    description = (
        f"{second.verdict.description} (a second worked answer, sampled, its own code "
        f"agreeing; the first said {said}: three routes against one)"
    )
    return CrossOutcome(second.verdict.model_copy(update={"description": description}), words=words)


def _read_words(text: str, code: bool) -> Words | None:
    """A worked answer as a witness: its code worked out (with `code`), else its words."""
    own, prose = computed(text), final_number(text)
    program = own if code else None
    said = program.final if program else prose
    if said is None:
        return None
    backed = own is not None and prose is not None and close(own.final, prose, AGREEMENT)
    how = "its code worked out by the engine" if program else "in words"
    known = [*stated_numbers(text), *(program.values if program else [])]
    if program is None and (slip := slipped_final(text, said)) is not None:
        # its reading stands; the sum it ends on is the engine's to work out
        said, how = slip.value, f"in words, its last sum worked out by the engine ({slip.written})"
        known.append(slip.value)
    return Words(said, known, how, backed)


# (asked again after a disagreement, agrees) -> how the verdict says it
_WORDS_VERBS = {
    (False, True): "agrees",
    (False, False): "disagrees",
    (True, True): "now agrees",
    (True, False): "still disagrees",
}


def held_to_words(
    words: Words,
    task: PreparedTask,
    first: Any,
    template: str | None,
    execution: Execution,
    *,
    again: bool = False,
) -> CrossOutcome:
    """A plan's final value (and the numbers its answer quotes) against a worked answer.

    `again`: a plan asked for after the words disagreed with another one.
    """
    first = in_asked_unit(first, task.task.goal)  # the words answer in the unit asked
    shown = format_value(first)
    agree = _agree_magnitude(first, words.said)
    verb = _WORDS_VERBS[again, agree]
    subject = f"{'a fresh plan: ' if again else ''}the model's own worked answer"
    description = f"{subject}, {words.how}, {verb}: {format_value(words.said)} against {shown}"
    holder = "numbers of the worked answer"
    missing = _unreproduced(template, execution, words.known, holder) if agree else []
    if missing:
        agree, description = False, f"{description}, but {'; '.join(missing)}"
    verdict = _verdict(agree, description, first=shown, second=format_value(words.said))
    return CrossOutcome(verdict, words=words)


def in_asked_unit(value: Any, goal: str) -> Any:
    """A quantity in the unit the goal's question asks for, where it has that dimension.

    A worked answer says "962.28" for "How many GB arrive?"; the plan's value of the same
    amount may be in Mbit·h/s, whose magnitude is another number.
    """
    unit = asked_unit(goal)
    if unit is None and _in_cents_unasked(value, goal):
        return value.to("USD")  # "the total amount she earned": dollars, as people count it
    if unit is None or not isinstance(value, pint.Quantity):
        return value
    if value.dimensionality != unit.dimensionality:
        return value
    return value.to(unit)


def _in_cents_unasked(value: Any, goal: str) -> bool:
    """A sum in cents where the goal's question names no cents: 500,000 cent is $5,000.

    "twenty cents per meter ... calculate the total amount she earned" (GSM8K train 6399):
    the words' 5,000 was held against 500,000 cent.
    """
    if not isinstance(value, pint.Quantity) or str(value.units) != "cent":
        return False
    asked = re.split(r"(?<=[.!?])\s+", goal.strip())[-1]  # the question, or its last order
    return re.search(r"\bcents?\b", asked, re.IGNORECASE) is None


def _agree_magnitude(value: Any, number: float) -> bool:
    """A plan's value against a bare number: a quantity by its magnitude in its own unit."""
    if isinstance(value, bool) or not isinstance(value, int | float | pint.Quantity):
        return False
    magnitude = value.magnitude if isinstance(value, pint.Quantity) else value
    try:
        return close(float(magnitude), number, AGREEMENT)
    except (ArithmeticError, TypeError, ValueError):
        return False


def _other_plan(
    task: PreparedTask,
    planner: Planner,
    journal: JournalWriter,
    prefix: str,
    max_workers: int,
    backend: Any,
    examples: Sequence[WorkedExample] = (),
) -> Second | str:
    """One more plan, run and verified, or why it cannot be compared.

    The first plan's worked `examples` (remembered plans) are shown where there are some.
    """
    try:
        other = prefixed(planner.cross_plan(task, journal, **shown_examples(examples)), prefix)
        task = task.for_plan(other)
        graph = check_plan(other, task)
    except (PlanningError, PlanValidationError) as e:
        return f"no plan ({e})"
    journal.emit(
        PlanProposed(
            source="planner",
            purpose="cross",
            plan=other.model_dump(mode="json"),
            plan_hash=other.plan_hash(),
        )
    )
    ran = execute(graph, task.tools, task.inputs, journal, max_workers=max_workers, backend=backend)
    if ran.failed or ran.skipped:
        return f"a plan did not run through (steps {', '.join([*ran.failed, *ran.skipped])})"
    checked = verify(other.steps, ran.values, ran.actions, other.checks, task.inputs, task.tools)
    if not all(verdict.passed for verdict in checked):
        return f"a plan did not verify: {'; '.join(v.description for v in checked if not v.passed)}"
    value = _final_value(other, ran, other.answer)
    if value is None:
        return "a plan produced no final value to compare"
    return Second(other, dict(ran.values), value, [*ran.values.values(), *task.inputs.values()])


def _compared(first: Any, second: Second, template: str | None, execution: Execution) -> Verdict:
    """One other plan against the first: its final value, and the answer's numbers."""
    shown_first, shown_second = format_pair(first, second.final)
    agree = _agree(first, second.final)
    verb = "agrees" if agree else "disagrees"
    description = f"a second plan, by its own route, {verb}: {shown_second} against {shown_first}"
    missing = _unreproduced(template, execution, second.known) if agree else []
    if missing:
        agree, description = False, f"{description}, but {'; '.join(missing)}"
    return _verdict(agree, description, first=shown_first, second=shown_second)


def prefixed(plan: StepGraph, prefix: str) -> StepGraph:
    """The plan with every step id, and every reference to one, prefixed."""
    ids = {step.id for step in plan.steps}

    def rename(text: str) -> str:
        def swap(match: re.Match[str]) -> str:
            name, whole = match.group(1), match.group(0)
            return whole.replace(name, prefix + name, 1) if name in ids else whole

        return REFERENCE_PATTERN.sub(swap, text)

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return rename(value)
        if isinstance(value, dict):
            return {key: walk(item) for key, item in value.items()}
        if isinstance(value, list):
            return [walk(item) for item in value]
        return value

    data = plan.model_dump(mode="json")
    for step in data["steps"]:
        step["id"] = prefix + step["id"]
        step["args"] = walk(step["args"])
        step["depends_on"] = [prefix + name for name in step["depends_on"]]
    for check in data["checks"]:
        check["expression"] = rename(check["expression"])
    if data.get("answer"):
        data["answer"] = rename(data["answer"])
    return StepGraph.model_validate(data)


def _agree(first: Any, second: Any) -> bool:
    """Numbers and quantities within the tolerance; anything else (a record, text) equal."""
    numeric = (int, float, pint.Quantity)
    if isinstance(first, numeric) and isinstance(second, numeric):
        try:
            return close(first, second, AGREEMENT)
        except (ArithmeticError, TypeError, ValueError, pint.PintError):
            return False
    return bool(first == second)


def _final_value(plan: StepGraph, execution: Execution, template: str | None) -> Any:
    """The value the answer reports: its template's first step, else the plan's last value.

    A plan may end on a step the answer only mentions ("${t} seconds at ${speed}", `speed`
    last): comparing that would set a link's speed against the other route's time.
    """
    values = execution.values
    steps = {step.id for step in plan.steps}
    named = next((r for r in find_references(template or "") if r.step in steps), None)
    if named is not None and not named.path and named.step in values:  # a field: as before
        return values[named.step]
    return next((values[s.id] for s in reversed(plan.steps) if s.id in values), None)


def _verdict(passed: bool, description: str, **values: str) -> Verdict:
    return Verdict(
        kind=VerdictKind.CROSS,
        passed=passed,
        description=description,
        values=values,
        tolerance=AGREEMENT,
    )


__all__ = [
    "AGREEMENT",
    "PREFIX",
    "TRIES",
    "CrossOutcome",
    "Second",
    "compare_with",
    "cross_check",
    "prefixed",
    "worked_check",
]

"""The plan and repair loops: ask the model, check its answer, feed problems back, bounded."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pint

from stepgraph.exceptions import PlanningError, PlanProblem, PlanValidationError
from stepgraph.journal import (
    JournalWriter,
    LLMRequest,
    LLMResponse,
    LLMReused,
    PlanInvalid,
    PlanProposed,
)
from stepgraph.model import GroundedInput, StepGraph, WorkedExample
from stepgraph.planner._ahead import WorkedAhead
from stepgraph.planner._by_units import (
    PLAIN_READING,
    everyday_units,
    in_plain_numbers,
    read_by_units,
    units_compound,
    units_disagree,
)
from stepgraph.planner._client import (
    DescribesRequests,
    LLMClient,
    LLMReply,
    Message,
    RequestSettings,
    StreamingClient,
)
from stepgraph.planner._draws import Draws
from stepgraph.planner._lines import Ambiguous, LinesError, read_lines
from stepgraph.planner._lines_shown import as_lines_text, plan_lines
from stepgraph.planner._loops import LoopGuard
from stepgraph.planner._parse import ParsedPlan, parse_plan, without_unfounded_checks
from stepgraph.planner._program import (
    PROGRAM_ONLY_TRIES,
    PROGRAM_TRIES,
    program_lines,
    program_messages,
)
from stepgraph.planner._prompt import (
    FORMS,
    goal_message,
    lines_system_prompt,
    render,
    system_prompt,
)
from stepgraph.planner._read_goal import (
    clocks_of,
    converted_numbers_of,
    measured_of,
    numbers_of,
    read_inputs,
    read_values,
    shares_of,
)
from stepgraph.planner._route import ARITHMETIC, WORKED_ROUTES, route_for
from stepgraph.planner._schema import plan_schema
from stepgraph.planner._settings import (
    CrossRoute,
    ExampleChoice,
    PlanSyntax,
    ProgramOnly,
    RetryWith,
)
from stepgraph.task import PreparedTask
from stepgraph.units import format_value
from stepgraph.verifiers import NOT_STATED, grounding_problems, task_input_problems

if TYPE_CHECKING:  # only a type: streaming is loaded when a run streams
    import networkx as nx

    from stepgraph.planner._plan_stream import PlanWatcher


@dataclass(frozen=True)
class CheckedPlan:
    """A planner's plan with the graph its static checks built, for the task it was asked for.

    The engine runs that graph instead of checking the plan a second time.
    """

    plan: StepGraph
    graph: nx.DiGraph


# Plans asked again (another cross-check plan, a fresh plan in a later repair round) draw
# again where the run already sent that very request: on the suite the third cross-check
# plan of gbit-to-gbyte, a new draw, verified it. Programs keep their sampling: on 100
# held-out GSM8K questions (2026-12-05) programs drawn again, at 0.8-1.0, were valid 5
# times, verified none, and cost 6% more median time.
REDRAWN = frozenset({"plan", "cross", "repair"})


class Planner:
    """Turns goals into validated step graphs, and repairs graphs that failed."""

    def __init__(
        self,
        client: LLMClient,
        *,
        plan_retries: int = 2,
        read_goal: bool = True,
        syntax: PlanSyntax = "json",
        reason_first: bool = False,
        cross_route: CrossRoute = "plan",
        numbered_names: bool = False,
        retry_with: RetryWith = "feedback",
        worked_ahead: bool = False,
        afresh_on_disagreement: bool = False,
        tool_schemas: bool = True,
        program_plan: bool = False,
        program_first: bool = False,
        program_only: ProgramOnly = False,
        second_words: bool = False,
        program_tries: int = PROGRAM_ONLY_TRIES,
        reuse_repeats: bool = True,
        examples: ExampleChoice = "first",
        stop_loops: bool = False,
    ) -> None:
        self.client = client
        # An answer that writes the same lines again and again is stopped while it streams,
        # not at the token cap (`_loops`): the cap took 85 s on a CPU for a refused answer.
        self.stop_loops = stop_loops
        # A small model copies the shape of the example it is shown: the nearest ones fit.
        self.examples = examples
        # A request this run sent before, sampled the same, takes the answer it had: a repair
        # round's program repeated the first round's word for word (`_draws`).
        self.reuse_repeats = reuse_repeats
        # Programs only: how many a goal gets (greedy, then samples), journaled for replay.
        self.program_tries = program_tries
        self._draws = Draws()
        # The words disagreed: asked once more, sampled, so that one misreading in words
        # does not outweigh a program and a second reading that agree.
        self.second_words = second_words
        # Programs and no plan: the plan prompt is long, and after a refused program it
        # verified 7 of 51 held-out GSM8K questions for a third of the run's time.
        self.program_only = program_only
        # A small code model writes a program more readily than a plan: asked for first.
        self.program_first = program_first
        # No plan was valid: the model's own program, read as plan lines (`_program`).
        self.program_plan = program_plan
        # A server that constrains output then allows only the tools, each with its arguments.
        self.tool_schemas = tool_schemas
        # The words disagreed: another plan from the goal alone, judged by the same words.
        self.afresh_on_disagreement = afresh_on_disagreement
        # Measured on 2 cores (llama.cpp, 2 slots): two answers side by side took 1.08x less
        # time than one after the other; the plan is slowed by as much as the answer gains.
        self.ask_worked_ahead = worked_ahead
        self.retry_with = retry_with
        self.numbered_names = numbered_names
        self.cross_route = cross_route
        # A strict format is known to cost a small model's reasoning: with `reason_first`
        # it first says in words how the goal is worked out, and the plan request shows it.
        self.reason_first = reason_first
        self.plan_retries = plan_retries
        # "json": the StepGraph schema itself; "lines": one Python-like line per step
        # (`_lines`), read into the same plan. Either way the plan is journaled as JSON.
        self.syntax = syntax
        # The goal's quantities read by the engine and shown as named inputs (`_read_goal`):
        # for a goal typed with its numbers, the model only wires steps.
        self.read_goal = read_goal

    def _system(self, task: PreparedTask, remembered: Sequence[WorkedExample] = ()) -> str:
        if self.syntax == "lines":
            goal = task.task.goal if self.examples == "nearest" else None
            return lines_system_prompt(task.tools, remembered, goal)
        return system_prompt(task.tools, remembered)

    def _schema(self, task: PreparedTask) -> dict[str, Any] | None:
        """The response format's schema: JSON plans only, the tools' own where asked."""
        if self.syntax != "json":
            return None
        return plan_schema(task.tools if self.tool_schemas else None)

    def _goal(self, task: PreparedTask) -> str:
        return goal_message(task.task.goal, self._shown(task), syntax=self.syntax)

    def _parse(self, text: str, task: PreparedTask, syntax: PlanSyntax | None = None) -> ParsedPlan:
        if (syntax or self.syntax) != "lines":
            read = self._read(task)
            return parse_plan(
                text, task.tools, task.inputs, task.extra_checks, answer=task.answer, read=read
            )
        ambiguous: list[Ambiguous] = []
        parsed = self._parse_lines(text, task, {}, ambiguous)
        if ambiguous and (units_disagree(parsed) or self._unstated_literal(parsed, task)):
            values = read_values(self._read(task))
            counts = {
                name for name, value in values.items() if not isinstance(value, pint.Quantity)
            }
            by_units = read_by_units(
                lambda choices: self._parse_lines(text, task, choices), ambiguous, counts
            )
            return by_units or parsed
        return parsed

    @staticmethod
    def _unstated_literal(parsed: ParsedPlan, task: PreparedTask) -> bool:
        """Whether a valid plan's literal, bound to no input, is refused as not the goal's.

        "twice as many books ... for two months": `2 * books` is the goal's twice or its
        two months, so no input is bound and the bare 2 is no number the goal writes in
        digits (GSM8K train 4317). Read by units as where the units disagree.
        """
        if parsed.plan is None:
            return False
        problems = grounding_problems(parsed.plan, task)
        return any(NOT_STATED in problem.message for problem in problems)

    def _parse_lines(
        self,
        text: str,
        task: PreparedTask,
        choices: Mapping[int, str],
        ambiguous: list[Ambiguous] | None = None,
        *,
        plain: bool = False,
    ) -> ParsedPlan:
        read = self._read(task)
        bound: list[str] = []  # literals the lines reader read as the goal's inputs
        try:
            names = {name: name for name in task.inputs}
            names |= {name: item.quote.split()[0].lstrip("$") for name, item in read.items()}
            parameters = {tool.name: list(tool.args_model.model_fields) for tool in task.tools}
            numbers = numbers_of(read) if self.numbered_names else None
            shares = shares_of(read) if numbers else []
            data = read_lines(
                text,
                names,
                parameters,
                numbers=numbers,
                converted=converted_numbers_of(read) if numbers else None,
                shares=shares,
                bound=bound,
                choices=choices,
                ambiguous=ambiguous,
                clocks=clocks_of(read),
                measured=measured_of(read),
            )
        except LinesError as e:
            return ParsedPlan(None, [PlanProblem(None, str(e))])
        if plain:
            data = in_plain_numbers(data, read_values(read))
        parsed = parse_plan(
            json.dumps(data),
            task.tools,
            task.inputs,
            task.extra_checks,
            answer=task.answer,
            read=read,
        )
        parsed.repairs = [*bound, *parsed.repairs]  # the literals read as inputs, first
        return parsed

    def _grounded(
        self, text: str, task: PreparedTask, syntax: PlanSyntax | None = None
    ) -> ParsedPlan:
        """`_parse`, and a valid plan refused where it is not grounded in the goal."""
        return self._ground(self._parse(text, task, syntax), task)

    def _ground(self, parsed: ParsedPlan, task: PreparedTask) -> ParsedPlan:
        """`parsed`, refused where its valid plan is not grounded in the goal."""
        if parsed.plan is None or not (grounding := grounding_problems(parsed.plan, task)):
            return parsed
        repairs = list(parsed.repairs)
        trimmed = without_unfounded_checks(parsed.plan, grounding, repairs)
        if trimmed is not None and not grounding_problems(trimmed, task):
            return ParsedPlan(trimmed, [], repairs, parsed.data, parsed.graph)
        return ParsedPlan(None, grounding, parsed.repairs, parsed.data)

    def _unused_read(
        self, task: PreparedTask, text: str, problems: list[PlanProblem]
    ) -> list[PlanProblem]:
        """The read inputs a refused answer left unused, by name: what to write instead.

        The coverage problem names the goal's number ('10'); a small model acts on the
        name it was shown for it (``rounds``) more readily.
        """
        if not any(UNUSED_NUMBER in str(problem) for problem in problems):
            return []
        written = "${inputs.%s}" if self.syntax == "json" else "%s"
        unused = [
            f"{written % name} ({item.value})"
            for name, item in self._read(task).items()
            if not re.search(rf"(?<![\w.]){re.escape(written % name)}(?!\w)", text)
        ]
        if not unused:
            return []
        return [PlanProblem(None, f"inputs no step uses: {', '.join(unused)}; use each one")]

    def _read(self, task: PreparedTask) -> dict[str, GroundedInput]:
        if not self.read_goal or task.task.inputs or not task.grounded:
            return {}
        return read_inputs(task.task.goal, numbered=self.numbered_names)

    def _shown(self, task: PreparedTask) -> dict[str, str]:
        shown = {name: format_value(value) for name, value in task.inputs.items()}
        for name, item in self._read(task).items():
            shown[name] = f'{item.value}  ("{item.quote}")'
        return shown

    def plan(
        self,
        task: PreparedTask,
        journal: JournalWriter | None = None,
        *,
        watch: PlanWatcher | None = None,
        examples: Sequence[WorkedExample] = (),
    ) -> StepGraph:
        """Ask for a plan; on problems send them back, at most `plan_retries` times.

        With `watch`, each answer is streamed to it as it is written (see `_plan_stream`), when
        the client is a `StreamingClient`; another client's answers are read whole.
        `examples` (remembered plans of goals like this one) take the fixed examples' places.
        """
        return self.plan_checked(task, journal, watch=watch, examples=examples).plan

    def plan_checked(
        self,
        task: PreparedTask,
        journal: JournalWriter | None = None,
        *,
        watch: PlanWatcher | None = None,
        examples: Sequence[WorkedExample] = (),
    ) -> CheckedPlan:
        """`plan`, with the graph the plan's static checks built (a subclass overrides `plan`).

        With `program_first`, the model's program is asked for once before any plan, and a
        plan only where the program is no valid plan; with `program_only`, programs only
        (up to two), and no plan.
        """
        if self.programs_only(task):
            return self.program_checked(task, journal, tries=self.program_tries)
        if (self.program_first or self.program_only == "auto") and watch is None:
            try:
                return self.program_checked(task, journal, tries=1)
            except PlanningError:
                pass  # journaled as `plan.invalid` (purpose "program"); a plan is asked next
        system = {"role": "system", "content": self._system(task, examples)}
        request = self._goal(task)
        if self.reason_first:
            notes = self.reason(task, journal, system=system)
            request += f"\n\nHow it is worked out, in your own words:\n{notes}"
        messages = [system, {"role": "user", "content": request}]
        return self._converse(messages, "plan", task, journal, watch=watch)

    def programs_only(self, task: PreparedTask) -> bool:
        """Whether `task` gets programs and no plan (`program_only`).

        With "auto", only where the words are the answer's witness (`route_for`: no data,
        nothing to convert into the unit asked) and the task's tools are only arithmetic:
        a program converts units by hand and is refused (0 of the suite's 10 unit traps
        verified with programs only, 3 with plans), and calls no lookup tool.
        """
        if self.program_only != "auto":
            return self.program_only
        if any(item.name not in ARITHMETIC for item in task.tools):
            return False
        return self._route(task) != "plan"

    def words_witness(self, task: PreparedTask) -> bool:
        """Whether the cross-check will hold `task`'s answer to the worked answer.

        A `worked` route always; `auto` where the goal as read takes the words (`route_for`),
        which a plan's own inputs may still turn into another plan at the check.
        """
        if self.cross_route in WORKED_ROUTES:
            return True
        return self.cross_route == "auto" and self._route(task) in WORKED_ROUTES

    def _route(self, task: PreparedTask) -> str:
        """The second route `auto` takes for `task`, by the inputs read from its goal."""
        values = [*task.inputs.values(), *read_values(self._read(task)).values()]
        return route_for(task.task.goal, values, task.tools.names())

    def reason(
        self,
        task: PreparedTask,
        journal: JournalWriter | None = None,
        *,
        system: Message | None = None,
    ) -> str:
        """The model's short plain-text account of how the goal is worked out (no numbers).

        Sent after the plan request's own system prompt: a server's prompt cache (llama.cpp)
        then reuses it for the plan request instead of reading it again.
        """
        ask = {"role": "user", "content": render("reason.md", goal=task.task.goal)}
        messages = [system or {"role": "system", "content": self._system(task)}, ask]
        return self._ask(messages, "reason", 1, None, journal).text.strip()

    def worked(
        self,
        task: PreparedTask,
        journal: JournalWriter | None = None,
        ahead: WorkedAhead | None = None,
        *,
        attempt: int = 1,
    ) -> str:
        """The model's own answer in words, asked as a user would ask it without stepgraph.

        A conversation of its own: no plan is shown, so the words are a second witness,
        not a copy. Journaled with purpose "worked"; only its numbers are ever used. With
        `ahead` (the same question, asked while the plan was made) its answer is taken.
        A later `attempt` is sampled more widely (a second reading, not the same words).
        """
        messages = _worked_messages(task)
        if ahead is not None and ahead.messages == messages and attempt == 1:
            return self._ask(messages, "worked", 1, None, journal, sent=ahead.reply).text.strip()
        if ahead is not None:  # asked for another question: not this one's answer
            ahead.stop()
        return self._ask(messages, "worked", attempt, None, journal).text.strip()

    def worked_ahead(self, task: PreparedTask) -> WorkedAhead | None:
        """The worked answer, asked now in the background; None where it is not to be.

        Only when asked for (`worked_ahead`), and only from a client that answers requests
        side by side (an HTTP endpoint: a scripted or replayed model answers in order), and
        only where the words will be the witness (`words_witness`); it is streamed, so it
        can be stopped when no plan reaches it.
        """
        client = self.client
        if not self.ask_worked_ahead or not getattr(client, "answers_concurrently", False):
            return None
        if not isinstance(client, StreamingClient) or not self.words_witness(task):
            return None
        return WorkedAhead(client, _worked_messages(task))

    def cross_plan(
        self,
        task: PreparedTask,
        journal: JournalWriter | None = None,
        *,
        examples: Sequence[WorkedExample] = (),
    ) -> StepGraph:
        """Ask, independently and sampling more widely, for a plan by a route of its own.

        The cross-check compares its answer with the first plan's. The first plan is not
        shown: a model shown a plan copies it, mistakes included. The worked `examples`
        the first plan was shown are (remembered plans of other goals, as fixed ones are).
        """
        messages = self._goal_with(task, "cross.md", examples)
        return self._converse(messages, "cross", task, journal, wider=2).plan

    def _goal_with(
        self, task: PreparedTask, template: str, examples: Sequence[WorkedExample] = ()
    ) -> list[Message]:
        """The plan request with a note after the goal: another plan, none shown."""
        request = f"{self._goal(task)}\n\n{render(template)}"
        return [
            {"role": "system", "content": self._system(task, examples)},
            {"role": "user", "content": request},
        ]

    def repair(
        self,
        task: PreparedTask,
        plan: StepGraph,
        observations: Mapping[str, Any],
        failures: Sequence[str],
        journal: JournalWriter | None = None,
    ) -> StepGraph:
        """Ask for a repaired plan, given what ran and what went wrong."""
        return self.repair_checked(task, plan, observations, failures, journal).plan

    def repair_checked(
        self,
        task: PreparedTask,
        plan: StepGraph,
        observations: Mapping[str, Any],
        failures: Sequence[str],
        journal: JournalWriter | None = None,
        *,
        examples: Sequence[WorkedExample] = (),
    ) -> CheckedPlan:
        """`repair`, with the repaired plan's graph.

        With `retry_with="fresh"` the plan that failed is not shown: a new one is asked for
        from the goal alone, sampled more widely (a small model shown its plan and the
        failure sends the same plan back: 0 of 12 GSM8K repairs verified), with the worked
        `examples` the first request showed.
        """
        if self.retry_with == "fresh" and self.programs_only(task):
            return self.program_checked(task, journal, tries=self.program_tries, wider=1)
        if self.retry_with == "fresh":
            messages = self._goal_with(task, "fresh.md", examples)
            return self._converse(messages, "repair", task, journal, wider=1)
        return self._rework(
            "repair.md",
            task,
            plan,
            journal,
            goal=task.task.goal,
            observations=_listed(observations) or "(none)",
            failures="\n".join(f"- {failure}" for failure in failures),
        )

    def revise(
        self,
        task: PreparedTask,
        plan: StepGraph,
        comment: str,
        journal: JournalWriter | None = None,
    ) -> StepGraph:
        """Ask for a revised plan, given a reviewer's comment."""
        return self.revise_checked(task, plan, comment, journal).plan

    def revise_checked(
        self,
        task: PreparedTask,
        plan: StepGraph,
        comment: str,
        journal: JournalWriter | None = None,
    ) -> CheckedPlan:
        """`revise`, with the revised plan's graph."""
        return self._rework("revise.md", task, plan, journal, goal=task.task.goal, comment=comment)

    def _rework(
        self,
        template: str,
        task: PreparedTask,
        plan: StepGraph,
        journal: JournalWriter | None,
        **variables: str,
    ) -> CheckedPlan:
        """Show the model a plan and what to change; the template's name is the purpose."""
        dumped = plan.model_dump(mode="json", exclude_defaults=True)
        shown = plan_lines(dumped) if self.syntax == "lines" else json.dumps(dumped, indent=1)
        form = FORMS[self.syntax]
        messages = [
            {"role": "system", "content": self._system(task)},
            {"role": "user", "content": render(template, plan=shown, form=form, **variables)},
        ]
        purpose = template.removesuffix(".md")
        return self._converse(messages, purpose, task, journal)

    def answer(
        self, goal: str, observations: Mapping[str, Any], journal: JournalWriter | None = None
    ) -> str:
        """Ask for a short final answer that may use only the observations."""
        listed = _listed(observations)
        messages = [
            {"role": "user", "content": render("answer.md", goal=goal, observations=listed)}
        ]
        return self._ask(messages, "answer", 1, None, journal).text.strip()

    def _converse(
        self,
        messages: list[Message],
        purpose: str,
        task: PreparedTask,
        journal: JournalWriter | None,
        wider: int = 0,
        watch: PlanWatcher | None = None,
    ) -> CheckedPlan:
        """Ask until a plan is valid; `wider` samples as if that many attempts came first.

        A grounded task whose own inputs do not say what their quotes say is refused before
        any model is asked: no plan can fix the task.
        """
        if own := task_input_problems(task):
            raise PlanValidationError(own)
        opening = list(messages)
        problems: list[PlanProblem] = []
        refused: dict[str, ParsedPlan] = {}  # answers already refused, by their text
        schema = self._schema(task)
        for attempt in range(1, self.plan_retries + 2):
            reply = self._ask(messages, purpose, attempt, schema, journal, wider, watch)
            again = refused.get(_normalized(reply.text))
            if again is not None:
                parsed = ParsedPlan(None, [PlanProblem(None, REPEATED), *again.problems])
                parsed.data = again.data
            else:
                parsed = self._grounded(reply.text, task)
            if parsed.plan is not None:
                return _accepted(parsed, purpose, attempt, journal)
            problems = list({str(p): p for p in parsed.problems}.values())  # each one once
            problems += self._unused_read(task, reply.text, problems)
            if again is None:
                refused[_normalized(reply.text)] = ParsedPlan(None, problems, data=parsed.data)
            if journal:
                journal.emit(
                    PlanInvalid(
                        purpose=purpose,
                        attempt=attempt,
                        problems=[str(p) for p in problems],
                        repairs=parsed.repairs,
                    )
                )
            feedback = render(
                "feedback.md",
                problems=_quoted(problems, parsed.data, self.syntax),
                tools=", ".join(task.tools.names()),
                form=FORMS[self.syntax],
            )
            # Only the last answer and its feedback: a small model's context stays short,
            # and one that repeats itself gets no refused answer of its own to copy.
            if self.retry_with == "fresh":
                # Measured on GSM8K: 2 of 48 plans refused at the first attempt were valid
                # after feedback; an independent sample does not inherit the misreading.
                messages = list(opening)
            elif again is None:
                messages = [
                    *opening,
                    {"role": "assistant", "content": reply.text},
                    {"role": "user", "content": feedback},
                ]
            else:
                request = f"{opening[-1]['content']}\n\n{feedback}\nWrite a different plan."
                messages = [*opening[:-1], {"role": "user", "content": request}]
        raise PlanningError(
            f"the planner gave no valid plan in {self.plan_retries + 1} attempts; "
            "the last one had these problems:",
            problems=_in_terms(problems, self.syntax),
        )

    def program_checked(
        self,
        task: PreparedTask,
        journal: JournalWriter | None = None,
        *,
        tries: int = PROGRAM_TRIES,
        wider: int = 0,
    ) -> CheckedPlan:
        """A plan read from the model's own short Python program, for when no plan was valid.

        Asked as for any code (`_program`), at most `tries` times, the same request
        sampled more widely each time (from the first with `wider`: a fresh program, not
        the greedy one again); read as plan lines and checked as any plan.
        """
        messages = program_messages(task.task.goal)
        read = self._read(task)
        numbers, quantities = list(numbers_of(read).values()), read_values(read)
        quotes = {name: item.quote for name, item in read.items()}
        problems: list[PlanProblem] = []
        for attempt in range(1, tries + 1):
            reply = self._ask(messages, "program", attempt, None, journal, wider=wider)
            lines = program_lines(reply.text, numbers, quantities, quotes)
            parsed = self._grounded(lines, task, "lines")
            if units_compound(parsed) and everyday_units(quantities):
                plainly = self._ground(self._parse_lines(lines, task, {}, plain=True), task)
                if plainly.plan is not None:
                    plainly.repairs = [PLAIN_READING, *plainly.repairs]
                    parsed = plainly
            if parsed.plan is not None:
                return _accepted(parsed, "program", attempt, journal)
            problems = list({str(p): p for p in parsed.problems}.values())
            if journal:
                journal.emit(
                    PlanInvalid(
                        purpose="program",
                        attempt=attempt,
                        problems=[str(p) for p in problems],
                        repairs=parsed.repairs,
                    )
                )
        raise PlanningError(
            f"the model's program was no valid plan either in {tries} attempts; "
            "the last one had these problems:",
            problems=_in_terms(problems, "lines"),
        )

    def _ask(
        self,
        messages: list[Message],
        purpose: str,
        attempt: int,
        schema: dict[str, Any] | None,
        journal: JournalWriter | None,
        wider: int = 0,
        watch: PlanWatcher | None = None,
        sent: Callable[[], LLMReply] | None = None,
    ) -> LLMReply:
        """One exchange, journaled; with `sent`, the answer of a request already on its way.

        Sampled as attempt `attempt + wider`; a plan (`REDRAWN`) as a later one where the run
        already sent these messages so sampled: asking again is meant to draw again.
        """
        asked = attempt + wider
        if sent is None and purpose in REDRAWN:
            asked = self._draws.unsent(journal, messages, schema, asked)
        elif sent is None and watch is None and self.reuse_repeats:
            earlier = self._draws.answered(journal, messages, schema, asked)
            if earlier is not None and journal is not None:
                asked_attempt, text = earlier
                journal.emit(
                    LLMReused(
                        purpose=purpose, attempt=attempt, asked_attempt=asked_attempt, text=text
                    )
                )
                return LLMReply(text=text, model=self.client.model, mode="text")
        if journal:
            settings = (
                self.client.request_settings(asked)
                if isinstance(self.client, DescribesRequests)
                else RequestSettings()
            )
            journal.emit(
                LLMRequest(
                    purpose=purpose,
                    attempt=attempt,
                    model=self.client.model,
                    messages=messages,
                    temperature=settings.temperature,
                    seed=settings.seed,
                    max_tokens=settings.max_tokens,
                    server_address=settings.server_address,
                    server_port=settings.server_port,
                )
            )
        client = self.client
        if sent is not None:
            reply = sent()
        elif watch is not None and isinstance(client, StreamingClient):
            watch.begin()
            reply = client.stream_complete(
                messages, on_text=watch.feed, schema=schema, attempt=asked
            )
        elif self.stop_loops and schema is None and isinstance(client, StreamingClient):
            guard = LoopGuard()
            reply = client.stream_complete(messages, on_text=guard, attempt=asked)
            if guard.fired:  # a replay's guard fires on the recorded text again, alike
                reply.text, reply.stream = guard.cut(reply.text), "stopped"
        else:
            reply = client.complete(messages, schema=schema, attempt=asked)
        if sent is None and purpose not in REDRAWN:
            self._draws.answer(journal, messages, schema, asked, attempt, reply.text)
        if journal:
            journal.emit(
                LLMResponse(
                    purpose=purpose,
                    attempt=attempt,
                    text=reply.text,
                    usage=reply.usage,
                    latency_ms=reply.latency_ms,
                    mode=reply.mode,
                    model=reply.model,
                    retries=reply.retries,
                    stream=reply.stream,
                    response_id=reply.response_id,
                    response_model=reply.response_model,
                    finish_reasons=reply.finish_reasons,
                )
            )
        return reply


def _accepted(
    parsed: ParsedPlan, purpose: str, attempt: int, journal: JournalWriter | None
) -> CheckedPlan:
    """A valid plan, journaled as proposed, with the graph its checks built."""
    assert parsed.plan is not None and parsed.graph is not None  # a valid plan's checks built it
    if journal:
        journal.emit(
            PlanProposed(
                source="planner",
                purpose=purpose,
                attempt=attempt,
                plan=parsed.plan.model_dump(mode="json"),
                plan_hash=parsed.plan.plan_hash(),
                repairs=parsed.repairs,
            )
        )
    return CheckedPlan(parsed.plan, parsed.graph)


def _worked_messages(task: PreparedTask) -> list[Message]:
    """The worked answer's conversation: the goal as a user would ask it, no plan shown."""
    return [
        {"role": "system", "content": render("worked.md")},
        {"role": "user", "content": task.task.goal},
    ]


UNUSED_NUMBER = "but no step or check uses it"
REPEATED = (
    "this answer is identical to one already refused; nothing in it changed. "
    "Fix each problem listed below in the plan itself"
)


def _normalized(text: str) -> str:
    return " ".join(text.split())


def _in_terms(problems: list[PlanProblem], syntax: str) -> list[PlanProblem]:
    """The problems as the syntax the model wrote in names things (`_quoted` shows them so).

    The error a user reads says it so too: "declare it under "constants"" is nothing a
    plan in lines or a program can do. The journal keeps the checks' own words, which a
    replay compares.
    """
    if syntax != "lines":
        return problems
    return [PlanProblem(problem.step, as_lines_text(problem.message)) for problem in problems]


def _quoted(problems: list[PlanProblem], data: dict[str, Any] | None, syntax: str = "json") -> str:
    """Each problem on its line, followed by the step it is about as the model wrote it.

    For plans in lines, the problems' examples are written as lines are (`data`, `"1 day"`,
    not `${inputs.data}`, `(1 day)`): a small model copies the example it is given.
    """
    steps = data.get("steps") if isinstance(data, dict) else None
    written = {
        step.get("id"): step for step in steps or [] if isinstance(step, dict) and "id" in step
    }
    lines = []
    for problem in problems:
        text = str(problem)
        lines.append(f"- {as_lines_text(text) if syntax == 'lines' else text}")
        fragment = written.get(problem.step) if problem.step else None
        if fragment is None:
            continue
        if syntax == "lines":
            try:
                shown = plan_lines({"steps": [fragment]})
            except (KeyError, TypeError, AttributeError):
                shown = json.dumps(fragment, ensure_ascii=False)
        else:
            shown = json.dumps(fragment, ensure_ascii=False)
        lines.append(f"  you wrote: {shown}")
    return "\n".join(lines)


def _listed(values: Mapping[str, Any]) -> str:
    """Step values as the model is shown them: one ``- step: 962.28 GB`` line each."""
    return "\n".join(f"- {step}: {format_value(value)}" for step, value in values.items())

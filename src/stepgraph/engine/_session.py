"""One run, stage by stage: plan, approve, execute, verify, repair, answer."""

from __future__ import annotations

import getpass
import hashlib
import json
import time
from collections import Counter
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import networkx as nx

from stepgraph.engine._answer import answer_sources, compose_answer, failures_of
from stepgraph.engine._approval import (
    HOW_TO_APPROVE,
    MAX_REVIEWS,
    ApprovalSubject,
    Approver,
    Decision,
    ParkingApprover,
    PlanFile,
    RunParked,
    approval_subject,
    effective_policy,
    now,
    plan_view,
    tool_prints,
)
from stepgraph.engine._budget import stop_event
from stepgraph.engine._cross import CrossOutcome, compare_with, cross_check
from stepgraph.engine._given import check_given_plan
from stepgraph.engine._memory import PlanMemory
from stepgraph.engine._per_step import run_read_only
from stepgraph.engine._recall import Recalled, recall_note
from stepgraph.engine._signing import seal_verified, sign_decision
from stepgraph.engine._streaming import EarlyStart, early_start, streaming_applies
from stepgraph.exceptions import (
    ApprovalError,
    ApprovalMismatchError,
    BudgetExceededError,
    JournalError,
    PlannerNotConfiguredError,
    PlanningError,
    PlanValidationError,
    StepgraphError,
)
from stepgraph.executor import (
    Backend,
    Execution,
    check_plan,
    execute,
    frozen_heap,
    plan_diff,
    step_signatures,
)
from stepgraph.journal import (
    JOURNAL_VERSION,
    AnswerEvent,
    CheckEvent,
    JournalWriter,
    PlanApproved,
    PlanAwaiting,
    PlanEdited,
    PlanExamples,
    PlanInvalid,
    PlanProposed,
    PlanRecalled,
    PlanRejected,
    PlanRepair,
    PlanRevise,
    Prior,
    RunEnd,
    RunResume,
    RunStart,
)
from stepgraph.model import (
    ApprovalPolicy,
    Budget,
    RunResult,
    RunStatus,
    StepGraph,
    Verdict,
    WorkedExample,
    plan_hash_of,
)
from stepgraph.planner import Planner
from stepgraph.references import find_references
from stepgraph.task import PreparedTask
from stepgraph.tools import ToolRegistry, mcp_definitions
from stepgraph.verifiers import (
    answer_checked,
    effect_verdict,
    goal_coverage,
    inert_inputs,
    step_states,
    verify,
)

NEAR_EXAMPLES = 2  # remembered plans shown in place of fixed examples: a short prompt
MAX_RUNS_OF_ONE_CALL = 2  # the loop guard: a third request for the same call is refused

NO_PLANNER = (
    "task '{name}' has no plan and no planner is configured. Three ways forward:\n"
    "- point stepgraph at a model: set OPENAI_BASE_URL and/or OPENAI_API_KEY "
    "(and STEPGRAPH_MODEL), or pass --base-url/--model;\n"
    "- add a 'plan:' to the task file;\n"
    "- pass a scripted responses file: --scripted FILE."
)


def require_planner(planner: Planner | None, task: PreparedTask) -> Planner:
    """The planner, or an error naming the three ways to get a plan."""
    if planner is None:
        raise PlannerNotConfiguredError(NO_PLANNER.format(name=task.task.name))
    return planner


@dataclass(frozen=True)
class RunConfig:
    """What every run of one engine shares: the planner, the repair bound, the workers."""

    planner: Planner | None
    repair_rounds: int
    max_workers: int | None
    backend: Callable[[], Backend]
    cross_check: bool = False  # a verified run must be reproduced by a second plan
    stream: bool | None = None  # start read-only steps while the plan streams in; None: task
    memory: PlanMemory | None = None  # verified plans recalled for typed goals of their shape


@dataclass
class RunOptions:
    """How a run is approved and where it starts from."""

    policy: ApprovalPolicy | None = None
    approver: Approver | None = None
    plan_file: PlanFile | None = None
    prior: Prior | None = None
    resumed: dict[str, Any] | None = None  # the fields of `run.resume`, for a resumed run
    run_id: str | None = None  # a replay keeps the recorded run's id; None: a new one
    start_seq: int = 0  # a resumed run appends after the events already in its journal
    start_fields: dict[str, Any] = field(default_factory=dict)
    budget: Budget | None = None  # limits over the task's (and a resumed run's recorded ones)
    awaiting: StepGraph | None = None  # a parked run continues with the plan it parked on
    awaiting_round: int = 0  # ... in the repair round it parked in
    reuse: dict[str, tuple[Any, dict[str, Any]]] = field(default_factory=dict)  # by signature
    # Read-only steps started while the plan streams in: None, when the policy allows; a
    # replay says what its record did (its gate asks the record, not a policy).
    early_start: bool | None = None
    # A decision already in the journal (recorded under the run's lock before the decider
    # was answered): the approver hands it over to be carried out, not journaled twice.
    recorded: Decision | None = None
    # The plans a person wrote at an approval before this process (`plan.edited`, by hash):
    # a resumed or continued run judges them as the person's, as the run that took the edit.
    edited: frozenset[str] = frozenset()
    # A replay takes what memory gave the recorded run from its record, not from memory now.
    recalled: Recalled | None = None
    examples: list[WorkedExample] | None = None  # None: ask memory (if any) for examples


def answer_effect(plan: StepGraph, execution: Execution, prepared: PreparedTask) -> Verdict | None:
    """A failed verdict when a number the plan read from the goal never changes its answer."""
    template = prepared.answer or plan.answer
    ids = [step.id for step in plan.steps]
    first = next((r.step for r in find_references(template or "") if r.step in ids), None)
    ran = [sid for sid in ids if sid in execution.values]
    targets = {first} if first is not None else set(ran[-1:])
    if not targets <= set(execution.values):
        return None
    unused = {entry.number for entry in plan.unused}
    names = [
        name
        for name, item in plan.inputs.items()
        if not any(number in item.quote for number in unused)
    ]
    inputs = prepared.for_plan(plan).inputs
    inert = inert_inputs(plan.steps, execution.actions, execution.values, inputs, names, targets)
    return effect_verdict(inert, {name: item.quote for name, item in plan.inputs.items()})


def tool_fingerprints(tools: ToolRegistry) -> dict[str, str]:
    """A short hash of each tool's schema, so a replay can tell that a tool changed."""
    return {
        item.name: hashlib.sha256(json.dumps(item.schema(), sort_keys=True).encode()).hexdigest()[
            :12
        ]
        for item in tools
    }


class _Round(NamedTuple):
    """One execution of a plan, kept until a next round needs its calls by signature."""

    graph: nx.DiGraph
    signatures: dict[str, str]  # empty: not computed yet
    execution: Execution
    reused: set[str]
    refused: set[str]


class RunSession:
    """The stages of one run, each journaled; repairs loop back a bounded number of times."""

    def __init__(
        self, config: RunConfig, prepared: PreparedTask, journal: JournalWriter, options: RunOptions
    ) -> None:
        self.config = config
        self.prepared = prepared
        self.journal = journal
        self.options = options
        self.started = time.monotonic()
        self.completed: dict[str, tuple[Any, dict[str, Any]]] = {}  # signature -> value, args
        self.awaiting: StepGraph | None = None  # the plan a parked run waits on
        self.runs_of_call: Counter[str] = Counter()
        self._last_round: _Round | None = None  # settled by signature when another round runs
        self.early: EarlyStart | None = None  # steps of a streamed first plan, started early
        # Plans are not changed once made (an edit is a new plan): hash each one once.
        self._hashes: dict[int, tuple[StepGraph, str]] = {}
        # ... and check each given plan once: its graph is what runs (a fifth of a big run).
        self._graphs: dict[int, tuple[StepGraph, nx.DiGraph]] = {}
        # The task's plan as `run.start` dumped it, for `plan.proposed` (one dump, not two).
        self._task_plan_dump: dict[str, Any] | None = None
        self._tool_prints: dict[str, str] | None = None  # what approvals bind of the tools
        self._given: dict[int, StepGraph] = {}  # the plans a person wrote, not the planner
        self._recalled: StepGraph | None = None  # the plan memory gave, until it is replaced
        self._recalled_from: Recalled | None = None

    def _check_given(self, plan: StepGraph) -> None:
        self._given[id(plan)] = plan
        self._graphs[id(plan)] = (plan, check_given_plan(plan, self.prepared))

    def _held_to_goal(self, plan: StepGraph) -> bool:
        """Whether the goal-number coverage verdict applies to this plan.

        It does for a planner's plan of a typed goal and for any plan of a task that says
        ``grounded: true``; a person's plan (in the task, a plan file, an edit) of any other
        task is not held to the goal's prose ("a DAG of 25 steps" states no input).
        """
        if self.prepared.task.grounded:
            return True
        if self.prepared.inputs:  # a task that names its inputs: its goal is prose
            return False
        if self._given.get(id(plan)) is plan:
            return False
        if self.options.prior is None and self.options.awaiting is None:
            return True
        # A resumed or parked run did not pass `_first_plan` or an edit here: the task's
        # plan and the plans a person edited are given.
        given = set(self.options.edited)
        if self.options.plan_file:
            given.add(self.options.plan_file.plan_hash)
        if self.prepared.plan is not None:
            given.add(self._plan_hash(self.prepared.plan))
        return self._plan_hash(plan) not in given

    def _graph(self, plan: StepGraph, prepared: PreparedTask) -> nx.DiGraph:
        known = self._graphs.pop(id(plan), None)  # once: the scheduler may add to a graph
        if known is not None and known[0] is plan:
            return known[1]
        return check_plan(plan, prepared)

    def _plan_hash(self, plan: StepGraph, dumped: dict[str, Any] | None = None) -> str:
        known = self._hashes.get(id(plan))
        if known is None or known[0] is not plan:
            dumped = plan.model_dump(mode="json") if dumped is None else dumped
            known = self._hashes[id(plan)] = (plan, plan_hash_of(dumped))
        return known[1]

    def _subject(self, plan: StepGraph) -> ApprovalSubject:
        """What approving `plan` binds: the plan with the task as this run resolved it."""
        return approval_subject(
            plan, self.prepared, plan_hash=self._plan_hash(plan), tools=self._subject_tools()
        )

    def run(self) -> RunResult:
        """Go through every stage; errors are journaled with a `run.end` before they propagate."""
        with frozen_heap():  # the collector skips what exists now: a quarter of a big run
            return self._run()

    def _run(self) -> RunResult:
        if self.options.resumed is None:
            self._start()
        else:
            self.journal.emit(RunResume(**self.options.resumed))
        try:
            return self._stages()
        except RunParked:  # no `run.end`: the journal reads as unfinished, to be continued
            return self._parked()
        except PlanValidationError as e:
            self.journal.emit(PlanInvalid(problems=[str(p) for p in e.problems]))
            self._end("invalid", e)
            raise
        except PlanningError as e:
            self._end("invalid", e)
            raise
        except ApprovalError as e:
            self._end("not_approved", e)
            raise
        except BudgetExceededError as e:  # stopped cleanly: `resume` with a higher limit
            self.journal.emit(stop_event(e))
            self._end("budget_exceeded", e)
            raise
        except KeyboardInterrupt:
            self._end("interrupted", "interrupted")
            raise
        except JournalError as e:
            with suppress(JournalError):  # on a full disk `run.end` cannot be written either
                self._end("error", e)
            raise
        except StepgraphError as e:
            self._end("error", e)
            raise
        except Exception as e:  # a bug: still end the journal, so the run reads as ended
            with suppress(JournalError):
                self._end("internal_error", e)
            raise
        finally:
            if self.early is not None:  # a streamed plan that never ran: its steps end
                self.early.abandon()

    def _start(self) -> None:
        if not self.journal.heard:  # dumping the task is a tenth of a no-op run: skip unread
            return
        task = self.prepared.task
        definition = task.model_dump(mode="json")
        self._task_plan_dump = definition.get("plan")
        self.journal.emit(
            RunStart(
                task=task.name,
                goal=task.goal,
                version=JOURNAL_VERSION,
                inputs=self.prepared.inputs,
                definition=definition,
                base_dir=str(self.prepared.base_dir),
                tools=tool_fingerprints(self.prepared.tools),
                mcp_tools=mcp_definitions(self.prepared.tools),
                tool_prints=self._subject_tools(),
                config={
                    "repair_rounds": self.config.repair_rounds,
                    "plan_retries": getattr(self.config.planner, "plan_retries", None),
                    "plan_syntax": getattr(self.config.planner, "syntax", None),
                    "read_goal": getattr(self.config.planner, "read_goal", None),
                    "reason_first": getattr(self.config.planner, "reason_first", None),
                    "cross_check": self.config.cross_check,
                    "memory": self.config.memory is not None,
                    "stream": streaming_applies(self),
                    # the policy asked for (None: the task's, or the default): for replays
                    "approval": self.options.policy.value if self.options.policy else None,
                },
                **self.options.start_fields,
            )
        )

    def _subject_tools(self) -> dict[str, str]:
        if self._tool_prints is None:
            self._tool_prints = tool_prints(self.prepared.tools)
        return self._tool_prints

    def _stages(self) -> RunResult:
        prior = self.options.prior
        if prior is not None:
            plan, first_round = prior.plan, prior.round
        else:
            self.completed.update(self.options.reuse)  # a parked repair keeps what settled
            approved = self._approve(self.options.awaiting or self._first_plan())
            if approved is None:
                return self._result(self.prepared.plan, Execution(), [], None, RunStatus.NOT_RUN)
            plan, first_round = approved, self.options.awaiting_round
        rounds = self.config.repair_rounds
        crossed: CrossOutcome | None = None
        for round_number in range(first_round, rounds + 1):
            execution, verdicts = self._execute(
                plan, prior if round_number == first_round else None
            )
            failures = failures_of(execution, verdicts)
            disagreed = False
            if not failures:  # spent only on a run that would otherwise verify
                crossed = self._cross_check(plan, execution, crossed)
                if crossed is not None:
                    verdicts.append(crossed.verdict)
                    self._journal_verdicts([crossed.verdict])
                    disagreed = crossed.second is not None and not crossed.verdict.passed
                    failures = crossed.repair_material() if disagreed else []
            planner = self.config.planner
            if not failures or planner is None or round_number == rounds:
                break
            if plan is self._recalled:  # not this goal's plan after all: planned afresh
                repaired = planner.plan(self.prepared, self.journal)
            else:
                repaired = planner.repair(
                    self.prepared, plan, execution.values, failures, self.journal
                )
            if disagreed and repaired.plan_hash() == plan.plan_hash():
                break  # the model keeps its plan against the second: nothing left to try
            self.journal.emit(
                PlanRepair(
                    round=round_number + 1,
                    failures=failures,
                    diff=plan_diff(plan, repaired),
                    plan_hash=self._plan_hash(repaired),
                )
            )
            approved = self._approve(repaired)
            if approved is None:
                return self._result(repaired, execution, verdicts, None, RunStatus.NOT_RUN)
            plan = approved
        final = self.prepared.for_plan(plan)  # the plan's own inputs answer with it
        answer, answer_verdict = compose_answer(
            final,
            plan,
            execution,
            verdicts,
            self.config.planner,
            self.journal,
        )
        if answer_verdict is not None:
            verdicts.append(answer_verdict)
            self._journal_verdicts([answer_verdict])
        sources: dict[str, str] = {}
        if not answer.startswith("no answer"):
            sources = answer_sources(final, plan, execution, verdicts)
        self.journal.emit(AnswerEvent(text=answer, sources=sources))
        if execution.failed or execution.skipped:
            status = RunStatus.STEP_FAILED
        elif not all(verdict.passed for verdict in verdicts):
            status = RunStatus.UNVERIFIED
        elif answer_checked(self._answer_steps(final, plan, execution, sources), verdicts):
            status = RunStatus.VERIFIED
        else:  # everything passed, but nothing looked at the value the answer gives
            status = RunStatus.UNCHECKED
        result = self._result(plan, execution, verdicts, answer, status)
        result.answer_sources = sources
        return result

    @staticmethod
    def _answer_steps(
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

    def _cross_check(
        self, plan: StepGraph, execution: Execution, previous: CrossOutcome | None
    ) -> CrossOutcome | None:
        """A second plan's answer against this one's; after a repair, the same second plan."""
        planner = self.config.planner
        wanted = self.config.cross_check or self.prepared.task.cross_check
        if not wanted or planner is None:
            return None
        if previous is not None and previous.second is not None:
            template = self.prepared.answer or plan.answer
            return compare_with(previous.second, plan, execution, template)
        return cross_check(
            self.prepared,
            plan,
            execution,
            planner,
            self.journal,
            max_workers=self.config.max_workers or self.prepared.task.max_workers,
            backend=self.config.backend(),
        )

    def _first_plan(self) -> StepGraph:
        prepared, plan_file = self.prepared, self.options.plan_file
        plan = plan_file.plan if plan_file else prepared.plan
        if plan is not None:
            source = "file" if plan_file else "task"
            # Journaled before it is checked, as a planner's plan is: its dump is gone by
            # the time the graph is built (the two together were a replay's peak).
            if self.journal.heard:
                dumped = self._task_plan_dump if source == "task" else None
                if dumped is None:
                    dumped = plan.model_dump(mode="json")
                self._task_plan_dump = None
                self.journal.emit(
                    PlanProposed(
                        source=source, plan=dumped, plan_hash=self._plan_hash(plan, dumped)
                    )
                )
                del dumped
            self._check_given(plan)
            return plan
        recalled = self._recall()
        if recalled is not None:
            return recalled
        planner = require_planner(self.config.planner, prepared)
        examples = self._examples()
        self.early = early_start(self)
        # Only when there are some: a planner of the caller's may not take examples.
        shown = {"examples": examples} if examples else {}
        return planner.plan(prepared, self.journal, watch=self.early, **shown)

    def _remembers(self) -> bool:
        """Whether memory applies: a typed goal, with no plan and no inputs of its own."""
        prepared = self.prepared
        if self.config.memory is None or self.options.plan_file is not None:
            return False
        return prepared.plan is None and not prepared.task.inputs

    def _recall(self) -> StepGraph | None:
        """The verified plan of a goal of this shape, re-bound to this goal, if memory has one."""
        recalled = self.options.recalled
        if recalled is None and self._remembers():
            assert self.config.memory is not None
            outcome = self.config.memory.recall(
                self.prepared, tool_fingerprints(self.prepared.tools)
            )
            if outcome.refused is not None:
                self.journal.emit(
                    PlanRecalled(
                        from_run=outcome.refused.run_id,
                        from_journal=outcome.refused.path,
                        from_goal=outcome.refused.goal,
                        refused=outcome.reasons or [],
                    )
                )
            recalled = outcome.recalled
        if recalled is None:
            return None
        dumped = recalled.plan.model_dump(mode="json")
        plan_hash = self._plan_hash(recalled.plan, dumped)
        self.journal.emit(
            PlanRecalled(
                from_run=recalled.from_run,
                from_journal=recalled.from_journal,
                from_goal=recalled.from_goal,
                rebound=recalled.rebound,
                plan_hash=plan_hash,
            )
        )
        self.journal.emit(PlanProposed(source="memory", plan=dumped, plan_hash=plan_hash))
        self._recalled, self._recalled_from = recalled.plan, recalled
        return recalled.plan

    def _origin(self, plan: StepGraph) -> str:
        recalled = self._recalled_from
        if recalled is None or plan is not self._recalled:
            return ""
        return recall_note(recalled.from_run, recalled.from_goal, recalled.rebound)

    def _examples(self) -> list[WorkedExample]:
        """Remembered plans of the goals nearest this one, as the planner's worked examples."""
        examples = self.options.examples
        if examples is None:
            if not self._remembers():
                return []
            assert self.config.memory is not None
            examples = self.config.memory.nearest(self.prepared.task.goal, NEAR_EXAMPLES)
        if examples:
            self.journal.emit(
                PlanExamples(examples=[example.model_dump(mode="json") for example in examples])
            )
        return examples

    def _execute(self, plan: StepGraph, prior: Prior | None) -> tuple[Execution, list[Verdict]]:
        prepared = self.prepared.for_plan(plan)
        graph = self._graph(plan, prepared)
        self._settle_last_round()
        # Signatures matter only where calls may be reused or refused: after an earlier
        # round or a crash. Most runs verify in one round; hashing each step costs a tenth.
        needed = prior is not None or self.completed or self.runs_of_call
        signatures = step_signatures(graph) if needed else {}
        if prior is not None:  # a resumed run: what settled before the crash counts as done
            for sid, value in prior.values.items():
                self.completed[signatures[sid]] = (value, prior.actions.get(sid, {}))
        reused = {
            sid: self.completed[sig][0] for sid, sig in signatures.items() if sig in self.completed
        }
        refused = {
            sid: f"refused: this call already ran {self.runs_of_call[sig]} times without success"
            for sid, sig in signatures.items()
            if sid not in reused and self.runs_of_call[sig] >= MAX_RUNS_OF_ONE_CALL
        }
        if prior is not None:
            refused.update(prior.failed)
        workers = self.config.max_workers or prepared.task.max_workers
        early, self.early = self.early, None
        execution = early.finish(plan, graph) if early is not None else None
        execution = execution or execute(
            graph,
            prepared.tools,
            prepared.inputs,
            self.journal,
            max_workers=workers,
            reused=reused,
            refused=refused,
            backend=self.config.backend(),
        )
        for sid in reused:  # verifiers need the arguments
            execution.record(sid).args = self.completed[signatures[sid]][1]
        self._last_round = _Round(graph, signatures, execution, set(reused), set(refused))
        verdicts = verify(
            plan.steps,
            execution.values,
            execution.actions,
            [*plan.checks, *prepared.extra_checks],
            prepared.inputs,
            prepared.tools,
        )
        if self._held_to_goal(plan):  # the plan must use every number of the goal
            task = self.prepared  # the task's own inputs; the plan's are read from the plan
            coverage = goal_coverage(task.task.goal, plan, task.inputs, task.extra_checks)
            if coverage is not None:
                verdicts.append(coverage)
            effect = answer_effect(plan, execution, self.prepared) if coverage else None
            if effect is not None and coverage is not None and coverage.passed:
                verdicts.append(effect)  # named by a step, yet the answer ignores it
        self._journal_verdicts(verdicts)
        return execution, verdicts

    def _settle_last_round(self) -> None:
        """Count the last round's calls and keep its values by signature, for reuse now."""
        last, self._last_round = self._last_round, None
        if last is None:
            return
        signatures = last.signatures or step_signatures(last.graph)
        execution = last.execution
        for sid, sig in signatures.items():
            if sid in last.reused:
                continue
            if sid in execution.actions and sid not in last.refused:
                self.runs_of_call[sig] += 1
            if sid in execution.values:
                self.completed[sig] = (execution.values[sid], execution.actions.get(sid, {}))

    def _journal_verdicts(self, verdicts: list[Verdict]) -> None:
        for verdict in verdicts:
            self.journal.emit(CheckEvent(**verdict.model_dump(mode="json")))

    def _approve(self, plan: StepGraph) -> StepGraph | None:
        """The plan to run (perhaps edited or revised), or None when it must not run."""
        plan_file = self.options.plan_file
        if plan_file is not None and self._plan_hash(plan) == plan_file.plan_hash:
            # The file's approval covers this plan only in the task it was approved for.
            record = plan_file.check_subject(self._subject(plan))
            self._decided(PlanApproved, plan, who=record.by, how="file", when=record.at)
            return plan
        tools = self.prepared.tools
        risky = sorted(
            {s.tool for s in plan.steps if s.tool in tools and tools.get(s.tool).side_effects}
        )
        approver = self.options.approver
        policy = effective_policy(self.options.policy, bool(risky), approver is not None)
        if policy is ApprovalPolicy.NEVER:
            self._decided(PlanRejected, plan, how="policy:never")
            return None
        if policy is ApprovalPolicy.READONLY and risky:
            raise ApprovalError(
                f"the plan uses tools with side effects ({', '.join(risky)}) and policy "
                f"'{policy.value}' does not run them unasked; {HOW_TO_APPROVE}",
                run_id=self.journal.run_id,
            )
        if policy is ApprovalPolicy.PER_STEP and risky:
            if approver is None:  # what needs nobody's approval runs while the rest waits
                workers = self.config.max_workers or self.prepared.task.max_workers
                settled = run_read_only(
                    plan, self.prepared, self.journal, max_workers=workers,
                    backend=self.config.backend(),
                )  # fmt: skip
                self.completed.update(settled)
            return self._ask(plan, approver or ParkingApprover())
        if policy is not ApprovalPolicy.ASK:
            self._decided(PlanApproved, plan, how=f"policy:{policy.value}")
            return plan
        return self._ask(plan, approver or ParkingApprover())

    def _ask(self, plan: StepGraph, approver: Approver) -> StepGraph | None:
        prepared = self.prepared
        for _ in range(MAX_REVIEWS):
            view = plan_view(plan, prepared, subject=self._subject(plan), origin=self._origin(plan))
            try:
                decision = approver.review(view)
            except RunParked:
                self.awaiting = plan
                self.journal.emit(
                    PlanAwaiting(
                        plan_hash=self._plan_hash(plan),
                        approval_hash=view.approval_hash,
                        side_effects=view.side_effect_tools,
                        critical_path=view.critical_path,
                    )
                )
                raise
            bound = decision.approval_hash
            if bound is not None and bound != view.approval_hash:
                raise ApprovalMismatchError(
                    "the decision was made about another plan or task than the one waiting "
                    f"(decided {bound[:12]}, waiting {view.approval_hash[:12]}); nothing ran",
                    run_id=self.journal.run_id,
                )
            journaled = decision is self.options.recorded
            if decision.action == "approve":
                if not journaled:
                    self._decided(PlanApproved, plan, who=decision.who, how=decision.how)
                return plan
            if decision.action == "reject":
                if not journaled:
                    self._decided(PlanRejected, plan, who=decision.who, how=decision.how)
                return None
            if decision.action == "edit" and decision.plan is not None:
                self._check_given(decision.plan)
                dumped = decision.plan.model_dump(mode="json")
                self.journal.emit(
                    PlanEdited(
                        who=decision.who,
                        how=decision.how,
                        when=now(),
                        plan_hash_before=self._plan_hash(plan),
                        plan_hash=self._plan_hash(decision.plan, dumped),
                        plan=dumped,
                        diff=plan_diff(plan, decision.plan),
                    )
                )
                plan = decision.plan
            elif decision.action == "revise":
                planner = require_planner(self.config.planner, prepared)
                self.journal.emit(PlanRevise(who=decision.who, comment=decision.comment))
                plan = planner.revise(prepared, plan, decision.comment, self.journal)
        raise ApprovalError(f"no decision after {MAX_REVIEWS} reviews")

    def _decided(
        self,
        kind: type[PlanApproved | PlanRejected],
        plan: StepGraph,
        *,
        how: str,
        who: str = "",
        when: str = "",
    ) -> None:
        if not self.journal.heard:
            return
        who, when, approval_hash = (
            who or getpass.getuser(),
            when or now(),
            self._subject(plan).digest(),
        )
        signature = sign_decision(who, how, when, approval_hash) if kind is PlanApproved else None
        self.journal.emit(
            kind(
                who=who,
                how=how,
                when=when,
                plan_hash=self._plan_hash(plan),
                approval_hash=approval_hash,
                signature=signature,
            )
        )

    def _result(
        self,
        plan: StepGraph | None,
        execution: Execution,
        verdicts: list[Verdict],
        answer: str | None,
        status: RunStatus,
    ) -> RunResult:
        self._end(status.value, seal=self._seal(plan, status))
        return RunResult(
            run_id=self.journal.run_id,
            task=self.prepared.task.name,
            status=status,
            # Values count as results only when verified; else they are kept apart.
            values=execution.values if status is RunStatus.VERIFIED else {},
            unverified_values={} if status is RunStatus.VERIFIED else execution.values,
            observations=execution.observations,
            failed=execution.failed,
            skipped=execution.skipped,
            verdicts=verdicts,
            answer=answer,
            journal=str(self.journal.path),
            plan=plan,
            recalled_from=(
                self._recalled_from.from_run
                if self._recalled_from is not None and plan is self._recalled
                else None
            ),
            reused=sorted(execution.reused),
            step_states=step_states(
                {**dict.fromkeys(execution.failed, False), **dict.fromkeys(execution.values, True)},
                execution.skipped,
                verdicts,
            ),
        )

    def _parked(self) -> RunResult:
        return RunResult(
            run_id=self.journal.run_id,
            task=self.prepared.task.name,
            status=RunStatus.AWAITING_APPROVAL,
            journal=str(self.journal.path),
            plan=self.awaiting,
        )

    def _seal(self, plan: StepGraph | None, status: RunStatus) -> str | None:
        """A verified run's seal, so memory can tell runs of this machine from planted ones."""
        if plan is None or status is not RunStatus.VERIFIED or not self.journal.heard:
            return None
        prints = tool_fingerprints(self.prepared.tools)
        goal = self.prepared.task.goal
        return seal_verified(self.journal.run_id, goal, self._plan_hash(plan), prints)

    def _end(
        self, status: str, reason: BaseException | str | None = None, seal: str | None = None
    ) -> None:
        elapsed = round((time.monotonic() - self.started) * 1000, 3)
        why = None if reason is None else f"{type(reason).__name__}: {reason}"
        if isinstance(reason, str):
            why = reason
        self.journal.emit(RunEnd(status=status, duration_ms=elapsed, reason=why, seal=seal))

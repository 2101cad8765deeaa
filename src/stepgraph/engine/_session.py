"""One run, stage by stage: plan, approve, execute, verify, repair, answer.

The stages' rooms: what the run is given (`_options.py`), its plans with their hashes
and checked graphs (`_plans.py`), the approval gate (`_gate.py`), the calls across rounds
(`_ledger.py`), plan memory (`_remembering.py`), streaming the first plan (`_streaming.py`)
and the answer (`_answer.py`). Here they are driven in order, each journaled, and the
repair loop goes back a bounded number of times.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from contextlib import suppress
from typing import Any

from stepgraph.engine._answer import (
    answer_effect,
    answer_sources,
    answer_steps,
    answer_target,
    answer_values,
    compose_answer,
    failures_of,
)
from stepgraph.engine._approval import RunParked, tool_fingerprints
from stepgraph.engine._asked import answer_kind
from stepgraph.engine._budget import stop_event
from stepgraph.engine._cancel import CANCELLED, cancelled_event
from stepgraph.engine._counts import whole_count
from stepgraph.engine._cross import (
    CrossOutcome,
    compare_with,
    compare_with_words,
    cross_check,
)
from stepgraph.engine._floors import dropped_remainders
from stepgraph.engine._gate import ApprovalGate
from stepgraph.engine._ledger import CallLedger
from stepgraph.engine._options import RunConfig, RunOptions, require_planner
from stepgraph.engine._pairs import unpaired
from stepgraph.engine._planning import planned, programmed, refuse_time_of_day, repaired
from stepgraph.engine._plans import PlanBook
from stepgraph.engine._remembering import Remembering
from stepgraph.engine._signing import seal_verified
from stepgraph.engine._streaming import EarlyStart, streaming_applies
from stepgraph.exceptions import (
    ApprovalError,
    BudgetExceededError,
    JournalError,
    PlanningError,
    PlanValidationError,
    RunCancelledError,
    StepgraphError,
)
from stepgraph.executor import Execution, execute, frozen_heap, plan_diff
from stepgraph.journal import (
    JOURNAL_VERSION,
    AnswerEvent,
    CheckEvent,
    JournalWriter,
    LLMUnused,
    PlanInvalid,
    PlanProposed,
    PlanRepair,
    Prior,
    RecordedConfig,
    RunEnd,
    RunStart,
)
from stepgraph.model import Budget, RunResult, RunStatus, StepGraph, Verdict, WorkedExample
from stepgraph.planner import WorkedAhead
from stepgraph.task import PreparedTask
from stepgraph.tools import mcp_definitions
from stepgraph.verifiers import answer_checked, goal_coverage, step_states, verify


class RunSession:
    """The stages of one run, each journaled; repairs loop back a bounded number of times."""

    def __init__(
        self,
        config: RunConfig,
        prepared: PreparedTask,
        journal: JournalWriter,
        options: RunOptions,
        *,
        budget: Budget | None = None,
    ) -> None:
        self.config = config
        self.budget = budget  # the limits the run's first event records (its keeper's)
        self.prepared = prepared
        self.journal = journal
        self.options = options
        self.started = time.monotonic()
        self.workers = config.max_workers or prepared.task.max_workers
        self.plans = PlanBook(prepared)
        self.calls = CallLedger()
        self.memory = Remembering(config.memory, prepared, journal, options, self.plans)
        self.gate = ApprovalGate(
            prepared,
            journal,
            options,
            self.plans,
            planner=config.planner,
            max_workers=self.workers,
            backend=config.backend,
            settle=self.calls.settle,
            origin=self.memory.origin,
        )
        self.early: EarlyStart | None = None  # steps of a streamed first plan, started early
        self.ahead: WorkedAhead | None = None  # the worked answer, asked beside the plan
        # memory's worked examples for the first plan; later plans of the run are shown them too
        self.examples: Sequence[WorkedExample] = ()
        # The task's plan as `run.start` dumped it, for `plan.proposed` (one dump, not two).
        self._task_plan_dump: dict[str, Any] | None = None

    def _answer_verdicts(self, plan: StepGraph, execution: Execution) -> list[Verdict]:
        """Failed verdicts: a fraction of things needed, another kind, a floor, no halving."""
        goal, verdicts = self.prepared.task.goal, []
        target = answer_target(plan, execution, self.prepared)
        if target is not None and target in execution.values:
            verdicts.append(whole_count(goal, execution.values[target]))
        verdicts.append(answer_kind(goal, answer_values(plan, execution, self.prepared)))
        verdicts.append(dropped_remainders(goal, plan.steps, execution.actions))
        verdicts.append(unpaired(goal, plan.steps, execution.actions))
        return [verdict for verdict in verdicts if verdict is not None]

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
        if self.plans.is_given(plan):
            return False
        if self.options.prior is None and self.options.awaiting is None:
            return True
        # A resumed or parked run did not pass `_first_plan` or an edit here: the task's
        # plan and the plans a person edited are given.
        given = set(self.options.edited)
        if self.options.plan_file:
            given.add(self.options.plan_file.plan_hash)
        if self.prepared.plan is not None:
            given.add(self.plans.hash(self.prepared.plan))
        return self.plans.hash(plan) not in given

    def run(self) -> RunResult:
        """Go through every stage; errors are journaled with a `run.end` before they propagate."""
        with frozen_heap(self.config.freeze_heap):  # the collector skips what exists now
            return self._run()

    def _run(self) -> RunResult:
        if self.options.resumed is None:
            self._start()
        else:
            # A copy: the journal stamps the event it writes, and the options are the caller's.
            self.journal.emit(self.options.resumed.model_copy(update={"budget": self.budget}))
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
        except RunCancelledError as e:  # stopped cleanly, as asked: no call was cut short
            how = self.options.cancel.how if self.options.cancel is not None else ""
            self.journal.emit(cancelled_event(e, how))
            self._end(CANCELLED, e)
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
        planner = self.config.planner
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
                tool_prints=self.plans.tool_prints(),
                config=RecordedConfig(
                    repair_rounds=self.config.repair_rounds,
                    plan_retries=getattr(planner, "plan_retries", None),  # any planner's
                    plan_syntax=getattr(planner, "syntax", None),
                    read_goal=getattr(planner, "read_goal", None),
                    reason_first=getattr(planner, "reason_first", None),
                    cross_check=self.config.cross_check,
                    cross_route=getattr(planner, "cross_route", None),
                    numbered_names=getattr(planner, "numbered_names", None),
                    retry_with=getattr(planner, "retry_with", None),
                    afresh_on_disagreement=getattr(planner, "afresh_on_disagreement", None),
                    program_plan=getattr(planner, "program_plan", None),
                    program_first=getattr(planner, "program_first", None),
                    program_only=getattr(planner, "program_only", None),
                    second_words=getattr(planner, "second_words", None),
                    program_tries=getattr(planner, "program_tries", None),
                    reuse_repeats=getattr(planner, "reuse_repeats", None),
                    examples=getattr(planner, "examples", None),
                    stop_loops=getattr(planner, "stop_loops", None),
                    memory=self.config.memory is not None,
                    stream=self._streams(),
                    # the policy asked for (None: the task's, or the default): for replays
                    approval=self.options.policy.value if self.options.policy else None,
                ),
                budget=self.budget,
                replay_of=self.options.replay_of,
                parent=self.options.parent,
            )
        )

    def _stages(self) -> RunResult:
        prior = self.options.prior
        if prior is not None:
            plan, first_round = prior.plan, prior.round
        else:
            self.calls.settle(self.options.reuse)  # a parked repair keeps what settled
            self.ahead = self._worked_ahead()
            approved = self.gate.approve(self.options.awaiting or self._first_plan())
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
                    if self._afresh_after_words(crossed):
                        disagreed, failures = True, [crossed.verdict.description]
            planner = self.config.planner
            if not failures or planner is None or round_number == rounds:
                break
            if plan is self.memory.plan:  # not this goal's plan after all: planned afresh
                better = planned(planner, self.prepared, self.journal, self.plans)
            else:
                better = repaired(
                    planner, self.prepared, plan, execution.values, failures, self.journal,
                    self.plans, examples=self.examples,
                )  # fmt: skip
            if disagreed and better.plan_hash() == plan.plan_hash():
                break  # the model keeps its plan against the second: nothing left to try
            self.journal.emit(
                PlanRepair(
                    round=round_number + 1,
                    failures=failures,
                    diff=plan_diff(plan, better),
                    plan_hash=self.plans.hash(better),
                )
            )
            approved = self.gate.approve(better)
            if approved is None:
                return self._result(better, execution, verdicts, None, RunStatus.NOT_RUN)
            plan = approved
        return self._answer(plan, execution, verdicts)

    def _answer(self, plan: StepGraph, execution: Execution, verdicts: list[Verdict]) -> RunResult:
        final = self.prepared.for_plan(plan)  # the plan's own inputs answer with it
        answer, answer_verdict = compose_answer(
            final, plan, execution, verdicts, self.config.planner, self.journal
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
        elif answer_checked(answer_steps(final, plan, execution, sources), verdicts):
            status = RunStatus.VERIFIED
        else:  # everything passed, but nothing looked at the value the answer gives
            status = RunStatus.UNCHECKED
        result = self._result(plan, execution, verdicts, answer, status)
        result.answer_sources = sources
        return result

    def _cross_check(
        self, plan: StepGraph, execution: Execution, previous: CrossOutcome | None
    ) -> CrossOutcome | None:
        """A second plan's answer against this one's; after a repair, the same second plan."""
        planner = self.config.planner
        if not self._cross_wanted or planner is None:
            return None
        if previous is not None and previous.second is not None:
            template = self.prepared.answer or plan.answer
            return compare_with(previous.second, plan, execution, template)
        if previous is not None and previous.words is not None:
            return compare_with_words(previous.words, self.prepared, plan, execution)
        ahead, self.ahead = self.ahead, None  # one answer, for the first comparison
        try:
            return cross_check(
                self.prepared,
                plan,
                execution,
                planner,
                self.journal,
                max_workers=self.workers,
                backend=self.config.backend(),
                ahead=ahead,
                examples=self.examples,
            )
        finally:
            if ahead is not None and not ahead.taken:
                # `auto` checked by another plan after all (by the plan's own inputs)
                self._unused(ahead, "the check took another plan as its witness")

    @property
    def _cross_wanted(self) -> bool:
        """Whether the engine or the task asks for the cross-check."""
        return self.config.cross_check or self.prepared.task.cross_check

    def _afresh_after_words(self, crossed: CrossOutcome) -> bool:
        """Whether a worked answer's disagreement asks for a fresh plan to hold against it.

        Only when asked for (`afresh_on_disagreement`) and with fresh retries: the new
        plan is asked from the goal alone (neither the plan nor the words shown, so it
        cannot copy their number), and the same words judge it. With feedback the repair
        would show the words' number to the planner.
        """
        planner = self.config.planner
        if not getattr(planner, "afresh_on_disagreement", False):
            return False
        return crossed.words_disagree and getattr(planner, "retry_with", None) == "fresh"

    def _worked_ahead(self) -> WorkedAhead | None:
        """The worked answer a worked cross-check will want, asked now, beside the plan.

        Not under a limit on model calls, tokens or cost: the budget refuses a call before
        it is made, and this one would be made before its turn.
        """
        planner = self.config.planner
        if not self._cross_wanted or planner is None:
            return None
        limits = set(self.budget.limits()) if self.budget is not None else set()
        if limits & {"model_calls", "prompt_tokens", "completion_tokens", "cost"}:
            return None
        return planner.worked_ahead(self.prepared)

    def _drop_ahead(self) -> None:
        """A worked answer asked ahead that no plan reached: stopped, its cost journaled."""
        ahead, self.ahead = self.ahead, None
        if ahead is not None:
            self._unused(ahead, "no plan reached it")

    def _unused(self, ahead: WorkedAhead, why: str) -> None:
        """A worked answer asked ahead and never compared: stopped, and its cost journaled."""
        reply = ahead.stop()
        self.journal.emit(
            LLMUnused(
                purpose="worked",
                text=reply.text if reply is not None else "",
                usage=reply.usage if reply is not None else {},
                latency_ms=reply.latency_ms if reply is not None else None,
                model=ahead.model,
                reason=f"asked beside the plan for the cross-check; {why}",
            )
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
                        source=source, plan=dumped, plan_hash=self.plans.hash(plan, dumped)
                    )
                )
                del dumped
            self.plans.check_given(plan)
            return plan
        refuse_time_of_day(prepared)
        recalled = self.memory.recall()
        if recalled is not None:
            return recalled
        planner = require_planner(self.config.planner, prepared)
        self.examples = examples = self.memory.examples()
        self.early = self._early_start()
        try:
            return planned(
                planner, prepared, self.journal, self.plans, watch=self.early, examples=examples
            )
        except PlanningError as refused:
            if self.early is not None:  # the streamed plan was refused: none of it runs
                self.early.abandon()
                self.early = None
            return programmed(planner, prepared, self.journal, self.plans, refused)

    def _streams(self) -> bool:
        """Whether this run's first plan streams into execution (`streaming_applies`)."""
        options, config, prepared = self.options, self.config, self.prepared
        if options.early_start is not None:  # a replay streams exactly when its record did
            return options.early_start
        planner = config.planner
        return streaming_applies(
            wanted=bool(prepared.task.stream if config.stream is None else config.stream),
            client=planner.client if planner is not None else None,
            plans=prepared.plan is None and options.plan_file is None and options.prior is None,
            policy=options.policy,
            approver=options.approver is not None,
        )

    def _early_start(self) -> EarlyStart | None:
        if not self._streams():
            return None
        return EarlyStart(
            self.prepared.tools,
            self.prepared.inputs,
            self.journal,
            max_workers=self.workers,
            backend=self.config.backend,
        )

    def _execute(self, plan: StepGraph, prior: Prior | None) -> tuple[Execution, list[Verdict]]:
        prepared = self.prepared.for_plan(plan)
        graph = self.plans.graph(plan, prepared)
        round_ = self.calls.plan_round(graph, prior)
        early, self.early = self.early, None
        execution = early.finish(plan, graph) if early is not None else None
        execution = execution or execute(
            graph,
            prepared.tools,
            prepared.inputs,
            self.journal,
            max_workers=self.workers,
            reused=round_.reused,
            refused=round_.refused,
            backend=self.config.backend(),
        )
        self.calls.ran(graph, round_, execution, prepared.tools, prepared.inputs)
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
            verdicts.extend(self._answer_verdicts(plan, execution))
        self._journal_verdicts(verdicts)
        return execution, verdicts

    def _journal_verdicts(self, verdicts: list[Verdict]) -> None:
        for verdict in verdicts:
            self.journal.emit(CheckEvent(**verdict.model_dump(mode="json")))

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
            recalled_from=self.memory.from_run(plan),
            reused=sorted(execution.reused),
            step_states=step_states(
                {**dict.fromkeys(execution.failed, False), **dict.fromkeys(execution.values, True)},
                execution.skipped,
                verdicts,
            ),
        )

    def _parked(self) -> RunResult:
        self._drop_ahead()
        return RunResult(
            run_id=self.journal.run_id,
            task=self.prepared.task.name,
            status=RunStatus.AWAITING_APPROVAL,
            journal=str(self.journal.path),
            plan=self.gate.awaiting,
        )

    def _seal(self, plan: StepGraph | None, status: RunStatus) -> str | None:
        """A verified run's seal, so memory can tell runs of this machine from planted ones."""
        if plan is None or status is not RunStatus.VERIFIED or not self.journal.heard:
            return None
        prints = tool_fingerprints(self.prepared.tools)
        goal = self.prepared.task.goal
        try:
            return seal_verified(self.journal.run_id, goal, self.plans.hash(plan), prints)
        except ApprovalError:  # no key to seal with: the run stands, memory skips it
            return None

    def _end(
        self, status: str, reason: BaseException | str | None = None, seal: str | None = None
    ) -> None:
        elapsed = round((time.monotonic() - self.started) * 1000, 3)
        self._drop_ahead()
        why = None if reason is None else f"{type(reason).__name__}: {reason}"
        if isinstance(reason, str):
            why = reason
        self.journal.emit(RunEnd(status=status, duration_ms=elapsed, reason=why, seal=seal))

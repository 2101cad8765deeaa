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
from typing import Any

from stepgraph.engine._answer import compose_answer, failures_of
from stepgraph.engine._approval import (
    HOW_TO_APPROVE,
    MAX_REVIEWS,
    Approver,
    PlanFile,
    effective_policy,
    now,
    plan_view,
)
from stepgraph.engine._cross import cross_check
from stepgraph.exceptions import (
    ApprovalError,
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
    PlanEdited,
    PlanInvalid,
    PlanProposed,
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
    RunResult,
    RunStatus,
    StepGraph,
    Verdict,
    plan_hash_of,
)
from stepgraph.planner import Planner
from stepgraph.task import PreparedTask
from stepgraph.tools import ToolRegistry
from stepgraph.verifiers import goal_coverage, verify

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


def tool_fingerprints(tools: ToolRegistry) -> dict[str, str]:
    """A short hash of each tool's schema, so a replay can tell that a tool changed."""
    return {
        item.name: hashlib.sha256(json.dumps(item.schema(), sort_keys=True).encode()).hexdigest()[
            :12
        ]
        for item in tools
    }


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
        self.runs_of_call: Counter[str] = Counter()
        # Plans are not changed once made (an edit is a new plan): hash each one once.
        self._hashes: dict[int, tuple[StepGraph, str]] = {}

    def _plan_hash(self, plan: StepGraph, dumped: dict[str, Any] | None = None) -> str:
        known = self._hashes.get(id(plan))
        if known is None or known[0] is not plan:
            dumped = plan.model_dump(mode="json") if dumped is None else dumped
            known = self._hashes[id(plan)] = (plan, plan_hash_of(dumped))
        return known[1]

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

    def _start(self) -> None:
        task = self.prepared.task
        self.journal.emit(
            RunStart(
                task=task.name,
                goal=task.goal,
                version=JOURNAL_VERSION,
                inputs=self.prepared.inputs,
                definition=task.model_dump(mode="json"),
                base_dir=str(self.prepared.base_dir),
                tools=tool_fingerprints(self.prepared.tools),
                config={
                    "repair_rounds": self.config.repair_rounds,
                    "cross_check": self.config.cross_check,
                },
                **self.options.start_fields,
            )
        )

    def _stages(self) -> RunResult:
        prior = self.options.prior
        if prior is not None:
            plan, first_round = prior.plan, prior.round
        else:
            approved = self._approve(self._first_plan())
            if approved is None:
                return self._result(self.prepared.plan, Execution(), [], None, RunStatus.NOT_RUN)
            plan, first_round = approved, 0
        rounds = self.config.repair_rounds
        for round_number in range(first_round, rounds + 1):
            execution, verdicts = self._execute(
                plan, prior if round_number == first_round else None
            )
            failures = failures_of(execution, verdicts)
            planner = self.config.planner
            if not failures or planner is None or round_number == rounds:
                break
            repaired = planner.repair(self.prepared, plan, execution.values, failures, self.journal)
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
        answer, answer_verdict = compose_answer(
            self.prepared, plan, execution, verdicts, self.config.planner, self.journal
        )
        if answer_verdict is not None:
            verdicts.append(answer_verdict)
            self._journal_verdicts([answer_verdict])
        crossed = self._cross_check(plan, execution, verdicts)
        if crossed is not None:  # spent only on a run that would otherwise verify
            verdicts.append(crossed)
            self._journal_verdicts([crossed])
            if not crossed.passed:
                answer = f"no answer: {'; '.join(failures_of(execution, verdicts))}"
        self.journal.emit(AnswerEvent(text=answer))
        if execution.failed or execution.skipped:
            status = RunStatus.STEP_FAILED
        elif all(verdict.passed for verdict in verdicts):
            status = RunStatus.VERIFIED
        else:
            status = RunStatus.UNVERIFIED
        return self._result(plan, execution, verdicts, answer, status)

    def _cross_check(
        self, plan: StepGraph, execution: Execution, verdicts: list[Verdict]
    ) -> Verdict | None:
        planner = self.config.planner
        wanted = self.config.cross_check or self.prepared.task.cross_check
        if not wanted or planner is None or failures_of(execution, verdicts):
            return None
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
            dumped = plan.model_dump(mode="json")
            self.journal.emit(
                PlanProposed(source=source, plan=dumped, plan_hash=self._plan_hash(plan, dumped))
            )
            return plan
        return require_planner(self.config.planner, prepared).plan(prepared, self.journal)

    def _execute(self, plan: StepGraph, prior: Prior | None) -> tuple[Execution, list[Verdict]]:
        prepared = self.prepared
        graph = check_plan(plan, prepared)
        signatures = step_signatures(graph)
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
        execution = execute(
            graph,
            prepared.tools,
            prepared.inputs,
            self.journal,
            max_workers=workers,
            reused=reused,
            refused=refused,
            backend=self.config.backend(),
        )
        for sid, sig in signatures.items():
            if sid in reused:
                execution.record(sid).args = self.completed[sig][1]  # verifiers need the arguments
            elif sid in execution.actions and sid not in refused:
                self.runs_of_call[sig] += 1
            if sid in execution.values and sid not in reused:
                self.completed[sig] = (execution.values[sid], execution.actions.get(sid, {}))
        verdicts = verify(
            plan.steps,
            execution.values,
            execution.actions,
            [*plan.checks, *prepared.extra_checks],
            prepared.inputs,
            prepared.tools,
        )
        if not prepared.inputs:  # a goal typed with its numbers: the plan must use them all
            coverage = goal_coverage(prepared.task.goal, plan)
            if coverage is not None:
                verdicts.append(coverage)
        self._journal_verdicts(verdicts)
        return execution, verdicts

    def _journal_verdicts(self, verdicts: list[Verdict]) -> None:
        for verdict in verdicts:
            self.journal.emit(CheckEvent(**verdict.model_dump(mode="json")))

    def _approve(self, plan: StepGraph) -> StepGraph | None:
        """The plan to run (perhaps edited or revised), or None when it must not run."""
        plan_file = self.options.plan_file
        if plan_file is not None and self._plan_hash(plan) == plan_file.plan_hash:
            record = plan_file.approval
            assert record is not None  # checked when the file was loaded
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
        if policy is not ApprovalPolicy.ASK:
            self._decided(PlanApproved, plan, how=f"policy:{policy.value}")
            return plan
        if approver is None:
            raise ApprovalError(
                f"policy 'ask' needs a person and there is no terminal; {HOW_TO_APPROVE}"
            )
        return self._ask(plan, approver)

    def _ask(self, plan: StepGraph, approver: Approver) -> StepGraph | None:
        prepared = self.prepared
        for _ in range(MAX_REVIEWS):
            decision = approver.review(plan_view(plan, prepared.tools, prepared.inputs))
            if decision.action == "approve":
                self._decided(PlanApproved, plan, who=decision.who, how="person")
                return plan
            if decision.action == "reject":
                self._decided(PlanRejected, plan, who=decision.who, how="person")
                return None
            if decision.action == "edit" and decision.plan is not None:
                check_plan(decision.plan, prepared)
                dumped = decision.plan.model_dump(mode="json")
                self.journal.emit(
                    PlanEdited(
                        who=decision.who,
                        how="person",
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
        self.journal.emit(
            kind(
                who=who or getpass.getuser(),
                how=how,
                when=when or now(),
                plan_hash=self._plan_hash(plan),
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
        self._end(status.value)
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
            reused=sorted(execution.reused),
        )

    def _end(self, status: str, reason: BaseException | str | None = None) -> None:
        elapsed = round((time.monotonic() - self.started) * 1000, 3)
        why = None if reason is None else f"{type(reason).__name__}: {reason}"
        if isinstance(reason, str):
            why = reason
        self.journal.emit(RunEnd(status=status, duration_ms=elapsed, reason=why))

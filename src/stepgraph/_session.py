"""One run, stage by stage: plan, approve, execute, verify, repair, answer."""

from __future__ import annotations

import getpass
import time
from collections import Counter
from typing import TYPE_CHECKING, Any

from stepgraph.exceptions import ApprovalError, PlanningError, PlanValidationError, StepgraphError
from stepgraph.executor import Execution, execute, plan_diff, step_signatures, validate_plan
from stepgraph.journal import JOURNAL_VERSION, JournalWriter
from stepgraph.model import ApprovalPolicy, RunResult, RunStatus, StepGraph, Verdict
from stepgraph.references import ReferenceError_, resolve
from stepgraph.units import format_value
from stepgraph.verifiers import observations_text, trace_answer, verify

if TYPE_CHECKING:
    from stepgraph.engine import Engine, PreparedTask

MAX_RUNS_OF_ONE_CALL = 2  # the loop guard: a third request for the same call is refused


class RunSession:
    """The stages of one run, each journaled; repairs loop back a bounded number of times."""

    def __init__(
        self, engine: Engine, prepared: PreparedTask, journal: JournalWriter, policy: ApprovalPolicy
    ) -> None:
        self.engine = engine
        self.prepared = prepared
        self.journal = journal
        self.policy = policy
        self.started = time.monotonic()
        self.completed: dict[str, tuple[Any, dict[str, Any]]] = {}  # signature -> value, args
        self.runs_of_call: Counter[str] = Counter()

    def run(self) -> RunResult:
        """Go through every stage; errors are journaled with a `run.end` before they propagate."""
        task = self.prepared.task
        self.journal.emit(
            "run.start",
            task=task.name,
            goal=task.goal,
            version=JOURNAL_VERSION,
            inputs=self.prepared.inputs,
        )
        try:
            return self._stages()
        except PlanValidationError as e:
            self.journal.emit("plan.invalid", problems=[str(p) for p in e.problems])
            self._end("invalid")
            raise
        except PlanningError:
            self._end("invalid")
            raise
        except ApprovalError:
            self._end("not_approved")
            raise
        except KeyboardInterrupt:
            self._end("interrupted")
            raise
        except StepgraphError:
            self._end("error")
            raise

    def _stages(self) -> RunResult:
        plan = self._first_plan()
        if not self._approve(plan):
            return self._result(plan, Execution(), [], None, RunStatus.NOT_RUN)
        for round_number in range(self.engine.repair_rounds + 1):
            execution, verdicts = self._execute(plan)
            failures = _failures(execution, verdicts)
            planner = self.engine.planner
            if not failures or planner is None or round_number == self.engine.repair_rounds:
                break
            repaired = planner.repair(
                self.prepared.task.goal,
                plan,
                observations_text(execution.values),
                failures,
                self.prepared.tools,
                self.prepared.inputs,
                self.journal,
                self.prepared.extra_checks,
            )
            self.journal.emit(
                "plan.repair",
                round=round_number + 1,
                failures=failures,
                diff=plan_diff(plan, repaired),
                plan_hash=repaired.plan_hash(),
            )
            if not self._approve(repaired):
                return self._result(repaired, execution, verdicts, None, RunStatus.NOT_RUN)
            plan = repaired
        answer, answer_verdict = self._answer(plan, execution)
        if answer_verdict is not None:
            verdicts.append(answer_verdict)
            self._journal_verdicts([answer_verdict])
        self.journal.emit("answer", text=answer)
        if execution.failed or execution.skipped:
            status = RunStatus.STEP_FAILED
        elif all(verdict.passed for verdict in verdicts):
            status = RunStatus.VERIFIED
        else:
            status = RunStatus.UNVERIFIED
        return self._result(plan, execution, verdicts, answer, status)

    def _first_plan(self) -> StepGraph:
        prepared = self.prepared
        if prepared.plan is not None:
            self.journal.emit(
                "plan.proposed",
                source="task",
                plan=prepared.plan.model_dump(mode="json"),
                plan_hash=prepared.plan.plan_hash(),
            )
            return prepared.plan
        planner = self.engine.require_planner(prepared.task)
        return planner.plan(
            prepared.task.goal, prepared.tools, prepared.inputs, self.journal, prepared.extra_checks
        )

    def _execute(self, plan: StepGraph) -> tuple[Execution, list[Verdict]]:
        prepared = self.prepared
        graph = validate_plan(plan, prepared.tools, prepared.inputs, prepared.extra_checks)
        signatures = step_signatures(graph)
        reused = {
            sid: self.completed[sig][0] for sid, sig in signatures.items() if sig in self.completed
        }
        refused = {
            sid: f"refused: this call already ran {self.runs_of_call[sig]} times without success"
            for sid, sig in signatures.items()
            if sid not in reused and self.runs_of_call[sig] >= MAX_RUNS_OF_ONE_CALL
        }
        workers = self.engine.max_workers or prepared.task.max_workers
        execution = execute(
            graph,
            prepared.tools,
            prepared.inputs,
            self.journal,
            max_workers=workers,
            reused=reused,
            refused=refused,
        )
        for sid, sig in signatures.items():
            if sid in reused:
                execution.actions[sid] = self.completed[sig][1]
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
        )
        self._journal_verdicts(verdicts)
        return execution, verdicts

    def _journal_verdicts(self, verdicts: list[Verdict]) -> None:
        for verdict in verdicts:
            self.journal.emit("check", **verdict.model_dump(mode="json"))

    def _approve(self, plan: StepGraph) -> bool:
        who, how = getpass.getuser(), f"policy:{self.policy.value}"
        if self.policy is ApprovalPolicy.NEVER:
            self.journal.emit("plan.rejected", who=who, how=how, plan_hash=plan.plan_hash())
            return False
        if self.policy is ApprovalPolicy.READONLY:
            tools = self.prepared.tools
            risky = sorted(
                {s.tool for s in plan.steps if s.tool in tools and tools.get(s.tool).side_effects}
            )
            if risky:
                raise ApprovalError(
                    f"the plan uses tools with side effects ({', '.join(risky)}); the readonly "
                    "policy does not run them: pass --approve auto to run it anyway",
                    run_id=self.journal.run_id,
                )
        self.journal.emit("plan.approved", who=who, how=how, plan_hash=plan.plan_hash())
        return True

    def _answer(self, plan: StepGraph, execution: Execution) -> tuple[str, Verdict | None]:
        template = self.prepared.task.answer or plan.answer
        scope = {"inputs": self.prepared.inputs, **execution.values}
        if template:
            try:
                return str(resolve(template, scope)), None
            except ReferenceError_ as e:
                return f"(no answer: {e})", None
        planner = self.engine.planner
        if planner is None or not execution.values:
            last = [step.id for step in plan.steps if step.id in execution.values][-1:]
            return "; ".join(f"{s} = {format_value(execution.values[s])}" for s in last), None
        text = planner.answer(
            self.prepared.task.goal, observations_text(execution.values), self.journal
        )
        sources = {
            **execution.values,
            **{f"inputs.{k}": v for k, v in self.prepared.inputs.items()},
        }
        return text, trace_answer(text, sources)

    def _result(
        self,
        plan: StepGraph,
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
            values=execution.values,
            observations=execution.observations,
            skipped=execution.skipped,
            verdicts=verdicts,
            answer=answer,
            journal=str(self.journal.path),
            plan=plan,
            reused=sorted(execution.reused),
        )

    def _end(self, status: str) -> None:
        elapsed = round((time.monotonic() - self.started) * 1000, 3)
        self.journal.emit("run.end", status=status, duration_ms=elapsed)


def _failures(execution: Execution, verdicts: list[Verdict]) -> list[str]:
    """What a repair must address: failed steps, then failed verifications."""
    failures = [f"step '{step}' failed: {error}" for step, error in execution.failed.items()]
    failures += [
        f"verification failed ({v.kind.value}{', step ' + repr(v.step) if v.step else ''}): "
        f"{v.description}"
        for v in verdicts
        if not v.passed
    ]
    return failures

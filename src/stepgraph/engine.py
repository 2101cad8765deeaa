"""The engine: validate a task's plan, approve it, run it, verify it, journal all of it."""

from __future__ import annotations

import getpass
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import networkx as nx

from stepgraph.exceptions import ApprovalError, PlanValidationError, TaskFileError
from stepgraph.executor import Execution, execute, validate_plan
from stepgraph.journal import JOURNAL_VERSION, JournalWriter, Listener
from stepgraph.model import ApprovalPolicy, RunResult, RunStatus, StepGraph, Task
from stepgraph.references import ReferenceError_, resolve
from stepgraph.task import load_task, resolve_inputs
from stepgraph.tools import Tool, ToolRegistry, default_registry, load_plugin
from stepgraph.units import format_value
from stepgraph.verifiers import verify


@dataclass
class PreparedTask:
    """A task ready to validate and run: its plan, its tools and its input values."""

    task: Task
    plan: StepGraph
    tools: ToolRegistry
    inputs: dict[str, Any]

    @property
    def checks(self) -> list[Any]:
        """The plan's checks followed by the task's."""
        return [*self.plan.checks, *self.task.checks]


class Engine:
    """Runs tasks with the built-in tools plus any custom ones.

    Example:
        >>> engine = Engine(tools=[my_lookup_tool])
        >>> result = engine.run("examples/migration.yaml")
    """

    def __init__(
        self,
        tools: Iterable[Tool | Callable[..., Any]] = (),
        *,
        journal_dir: Path | str = "runs",
        max_workers: int | None = None,
    ) -> None:
        self.tools = default_registry()
        for item in tools:
            self.tools.register(item)
        self.journal_dir = Path(journal_dir)
        self.max_workers = max_workers

    def prepare(
        self, task: Task | Path | str | PreparedTask, *, overrides: Mapping[str, str] | None = None
    ) -> PreparedTask:
        """Load the task (a path or a `Task`), its plugins and its inputs."""
        if isinstance(task, PreparedTask):
            return task
        base_dir = Path.cwd()
        if not isinstance(task, Task):
            base_dir = Path(task).parent
            task = load_task(Path(task))
        if task.plan is None:
            raise TaskFileError(
                f"task '{task.name}' has no plan; add a 'plan:' to the task file "
                "(planning from the goal alone needs the planner, which is not available yet)"
            )
        tools = ToolRegistry(self.tools)
        for plugin in task.plugins:
            for item in load_plugin(base_dir / plugin):
                tools.register(item)
        unknown = [name for name in task.tools if name not in tools]
        if unknown:
            raise TaskFileError(
                f"task '{task.name}' allows unknown tools: {', '.join(unknown)} "
                f"(known: {', '.join(tools.names())})"
            )
        inputs = resolve_inputs(task, overrides)
        return PreparedTask(task, task.plan, tools.restricted(task.tools), inputs)

    def validate(
        self, task: Task | Path | str, *, overrides: Mapping[str, str] | None = None
    ) -> nx.DiGraph:
        """Run only the static checks; raise `PlanValidationError` listing every problem."""
        prepared = self.prepare(task, overrides=overrides)
        return validate_plan(prepared.plan, prepared.tools, prepared.inputs, prepared.task.checks)

    def run(
        self,
        task: Task | Path | str | PreparedTask,
        *,
        overrides: Mapping[str, str] | None = None,
        journal: Path | str | None = None,
        listeners: Iterable[Listener] = (),
        approval: ApprovalPolicy | None = None,
    ) -> RunResult:
        """Validate, approve, execute and verify a task, journaling every event."""
        prepared = self.prepare(task, overrides=overrides)
        name = prepared.task.name
        run_id = uuid.uuid4().hex[:12]
        path = Path(journal) if journal else self._journal_path(name)
        with JournalWriter(path, run_id, listeners=list(listeners)) as writer:
            return _Run(self, prepared, writer, approval or prepared.task.approval).go()

    def _journal_path(self, name: str) -> Path:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
        return self.journal_dir / f"{stamp}-{name}.jsonl"


class _Run:
    """One run's sequence of stages, each journaled."""

    def __init__(
        self, engine: Engine, prepared: PreparedTask, journal: JournalWriter, policy: ApprovalPolicy
    ) -> None:
        self.engine = engine
        self.prepared = prepared
        self.journal = journal
        self.policy = policy
        self.started = time.monotonic()

    def go(self) -> RunResult:
        task, plan = self.prepared.task, self.prepared.plan
        self.journal.emit(
            "run.start",
            task=task.name,
            goal=task.goal,
            version=JOURNAL_VERSION,
            inputs=self.prepared.inputs,
        )
        self.journal.emit(
            "plan.proposed",
            source="task",
            plan=plan.model_dump(mode="json"),
            plan_hash=plan.plan_hash(),
        )
        try:
            graph = validate_plan(plan, self.prepared.tools, self.prepared.inputs, task.checks)
            if not self._approve():
                return self._result(Execution(), [], None, RunStatus.NOT_RUN)
            workers = self.engine.max_workers or task.max_workers
            execution = execute(
                graph, self.prepared.tools, self.prepared.inputs, self.journal, max_workers=workers
            )
        except PlanValidationError as e:
            self.journal.emit("plan.invalid", problems=[str(p) for p in e.problems])
            self._end("invalid")
            raise
        except ApprovalError:
            self._end("not_approved")
            raise
        except KeyboardInterrupt:
            self._end("interrupted")
            raise
        verdicts = verify(
            plan.steps,
            execution.values,
            execution.actions,
            self.prepared.checks,
            self.prepared.inputs,
        )
        for verdict in verdicts:
            self.journal.emit("check", **verdict.model_dump(mode="json"))
        answer = self._answer(execution)
        self.journal.emit("answer", text=answer)
        if execution.failed or execution.skipped:
            status = RunStatus.STEP_FAILED
        elif all(verdict.passed for verdict in verdicts):
            status = RunStatus.VERIFIED
        else:
            status = RunStatus.UNVERIFIED
        return self._result(execution, verdicts, answer, status)

    def _approve(self) -> bool:
        plan = self.prepared.plan
        who, how = getpass.getuser(), f"policy:{self.policy.value}"
        if self.policy is ApprovalPolicy.NEVER:
            self.journal.emit("plan.rejected", who=who, how=how, plan_hash=plan.plan_hash())
            return False
        if self.policy is ApprovalPolicy.READONLY:
            risky = sorted(
                {s.tool for s in plan.steps if self.prepared.tools.get(s.tool).side_effects}
            )
            if risky:
                raise ApprovalError(
                    f"the plan uses tools with side effects ({', '.join(risky)}); the readonly "
                    "policy does not run them: pass --approve auto to run it anyway",
                    run_id=self.journal.run_id,
                )
        self.journal.emit("plan.approved", who=who, how=how, plan_hash=plan.plan_hash())
        return True

    def _answer(self, execution: Execution) -> str:
        template = self.prepared.task.answer or self.prepared.plan.answer
        scope = {"inputs": self.prepared.inputs, **execution.values}
        if template:
            try:
                return str(resolve(template, scope))
            except ReferenceError_ as e:
                return f"(no answer: {e})"
        sinks = [step.id for step in self.prepared.plan.steps if step.id in execution.values]
        return "; ".join(f"{sid} = {format_value(execution.values[sid])}" for sid in sinks[-1:])

    def _result(
        self, execution: Execution, verdicts: list[Any], answer: str | None, status: RunStatus
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
        )

    def _end(self, status: str) -> None:
        self.journal.emit(
            "run.end", status=status, duration_ms=round((time.monotonic() - self.started) * 1000, 3)
        )


def run(task: Task | Path | str | PreparedTask, **options: Any) -> RunResult:
    """Run a task with the built-in tools: ``stepgraph.run("examples/migration.yaml")``."""
    engine_options = {
        k: options.pop(k) for k in ("tools", "journal_dir", "max_workers") if k in options
    }
    return Engine(**engine_options).run(task, **options)

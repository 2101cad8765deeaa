"""The MCP tools' logic, apart from the SDK's wiring: `plan`, `validate`, `run` and `replay`.

A client gets a verified, journaled answer instead of doing arithmetic in its head. A
run whose plan has side effects is not the client's to approve (a client approving its
own request approves nothing): it parks, and the result says how a person decides it
(`stepgraph approve RUN_ID`, or the run's page in `stepgraph serve`).

What a client may name is bounded: task files and journals only under the server's
root, and a task given inline may not load plugins or start MCP servers (both run
code on this machine). A task file's plugins must lie under the root too, and
`validate`, which its hints call read-only, imports and starts nothing: it refuses a
task that would.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import networkx as nx
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import ValidationError

from stepgraph.engine import Engine, ParkingApprover, code_inside, plan_view, replay
from stepgraph.exceptions import PlanValidationError, StepgraphError, UntrustedTaskError
from stepgraph.guards import path_problem
from stepgraph.journal import Listener
from stepgraph.mcp_server._results import Planned, Replayed, RunReport, Validation
from stepgraph.model import ApprovalPolicy, RunStatus, StepGraph, Task
from stepgraph.planner import Planner
from stepgraph.task import load_task, plugins_outside, too_deep


class StepgraphMcp:
    """The tools' logic, apart from the SDK's wiring so it reads (and tests) as plain Python."""

    def __init__(
        self,
        root: Path,
        journal_dir: Path,
        planner: Callable[[], Planner | None] = lambda: None,
    ) -> None:
        self.root = root.resolve()
        self.journal_dir = journal_dir if journal_dir.is_absolute() else self.root / journal_dir
        self.planner = planner

    def _engine(self) -> Engine:
        return Engine(planner=self.planner(), journal_dir=self.journal_dir)

    def _inside_root(self, name: str, what: str) -> Path:
        problem = path_problem(name)
        if problem:
            raise ToolError(f"{what} {name!r}: the name {problem}")
        path = (self.root / name).resolve()
        if not path.is_relative_to(self.root):
            raise ToolError(f"{what} {name!r} is outside the server's root {self.root}")
        if not path.is_file():
            raise ToolError(f"no such {what} under the server's root: {name}")
        return path

    def task(
        self,
        task_file: str | None,
        task: dict[str, Any] | None,
        goal: str | None,
        plan: dict[str, Any] | None = None,
    ) -> tuple[Task, Path]:
        """The one task the arguments name (with `plan` in place of its own), and its folder."""
        named = {"task_file": task_file, "task": task, "goal": goal}
        given = [name for name, value in named.items() if value is not None]
        if len(given) != 1:
            raise ToolError(f"give exactly one of task_file, task or goal (got: {given or 'none'})")
        chosen: Task
        base_dir = self.root
        if task_file is not None:
            chosen, base_dir = self._task_file(task_file)
        elif task is not None:
            if too_deep(task):
                raise ToolError("the task nests too deeply to be a task")
            try:
                chosen = Task.model_validate(task)
            except ValidationError as e:
                raise ToolError(f"not a valid task: {e}") from e
            if chosen.plugins or chosen.mcp_servers:
                raise ToolError(
                    "a task given inline may not load plugins or start MCP servers; "
                    "put it in a task file under the server's root"
                )
        else:
            chosen = Task(name="goal", goal=goal or "")
        if plan is None:
            return chosen, base_dir
        try:
            graph = StepGraph.model_validate(plan)
        except ValidationError as e:
            raise ToolError(f"not a valid plan: {e}") from e
        return chosen.model_copy(update={"plan": graph}), base_dir

    def _task_file(self, name: str) -> tuple[Task, Path]:
        """The task in a file under the root, whose plugins lie under the root too; its folder.

        The task is read once, here, and handed on as read: a file changed between the
        check and the import must not bring in a plugin that was not checked.
        """
        path = self._inside_root(name, "task file")
        try:
            loaded = load_task(path)
        except StepgraphError as e:
            raise ToolError(str(e)) from e
        outside = plugins_outside(loaded, path.parent, self.root)
        if outside:
            raise ToolError(
                f"task file {name!r} loads plugin {outside[0]!r} from outside the "
                f"server's root {self.root}"
            )
        return loaded, path.parent

    def validate(
        self, task_file: str | None, task: dict[str, Any] | None, plan: dict[str, Any] | None
    ) -> Validation:
        chosen, base_dir = self.task(task_file, task, None, plan)
        engine = self._engine()
        try:
            # Read-only, as its hints promise: a task's plugins and servers are code.
            graph = engine.validate(engine.prepare(chosen, base_dir=base_dir, trust_code=False))
        except UntrustedTaskError as e:
            raise ToolError(
                f"{e}; validate imports and starts nothing: "
                "plan or run it to use its tools (validation is part of both)"
            ) from e
        except PlanValidationError as e:
            return Validation.of_problems(e)
        except StepgraphError as e:
            raise ToolError(str(e)) from e
        order = [sorted(group) for group in nx.topological_generations(graph)]
        return Validation(valid=True, problems=[], runs_in_order=order)

    def plan(
        self,
        task_file: str | None,
        task: dict[str, Any] | None,
        goal: str | None,
        inputs: dict[str, str] | None,
    ) -> Planned:
        chosen, base_dir = self.task(task_file, task, goal)
        engine = self._engine()
        try:
            prepared = engine.prepare(chosen, overrides=inputs, base_dir=base_dir)
            graph = engine.plan(prepared)
        except StepgraphError as e:
            raise ToolError(str(e)) from e
        return Planned(plan=graph, plan_hash=graph.plan_hash())

    def run(
        self,
        task_file: str | None,
        task: dict[str, Any] | None,
        goal: str | None,
        plan: dict[str, Any] | None,
        inputs: dict[str, str] | None,
        listeners: Iterable[Listener] = (),
    ) -> RunReport:
        """Run the task the arguments name; `listeners` see its journal events as written."""
        chosen, base_dir = self.task(task_file, task, goal, plan)
        # A task file's own `approval: auto` is its author's decision; a plan or a task
        # the client wrote is not the client's to approve.
        client_wrote = task is not None or plan is not None
        if client_wrote and isinstance(chosen, Task) and chosen.approval is ApprovalPolicy.AUTO:
            chosen = chosen.model_copy(update={"approval": None})
        engine = self._engine()
        try:
            prepared = engine.prepare(chosen, overrides=inputs, base_dir=base_dir)
            # Nobody here can decide: a plan with side effects parks for a person.
            result = engine.run(prepared, approver=ParkingApprover(), listeners=listeners)
        except StepgraphError as e:
            raise ToolError(str(e)) from e
        if result.status is RunStatus.AWAITING_APPROVAL and result.plan is not None:
            return RunReport.awaiting(result, plan_view(result.plan, prepared))
        return RunReport.finished(result)

    def replay(self, journal: str) -> Replayed:
        path = self._inside_root(journal, "journal")
        try:
            # Replaying imports the task's plugins: only code under the root is run.
            report = replay(path, trust_plugins=code_inside(path, self.root))
        except StepgraphError as e:
            raise ToolError(str(e)) from e
        return Replayed(
            identical=report.identical,
            divergences=[str(d) for d in report.divergences],
            error=report.error,
            answer=report.result.answer if report.result else None,
            journal=str(report.journal),
        )

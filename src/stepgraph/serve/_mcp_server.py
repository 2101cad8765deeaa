"""stepgraph as an MCP server: `plan`, `validate`, `run` and `replay` as tools any client can call.

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

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import networkx as nx
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import ValidationError

from stepgraph.engine import Engine, ParkingApprover, PlanView, code_inside, plan_view, replay
from stepgraph.exceptions import PlanValidationError, StepgraphError, UntrustedTaskError
from stepgraph.model import ApprovalPolicy, RunResult, RunStatus, StepGraph, Task
from stepgraph.planner import Planner
from stepgraph.serve._names import path_problem
from stepgraph.task import load_task, plugins_outside, too_deep
from stepgraph.units import display_data

INSTRUCTIONS = (
    "stepgraph runs a plan of tool calls (unit conversions, calculations, lookups) and "
    "re-checks every number. Give a task as `task_file` (a YAML file under the server's "
    "root), as `task` (an object with goal, inputs, tools, plan) or as a plain `goal`. "
    "Use `validate` to check a plan, `plan` to have the model write one, `run` to get a "
    "verified answer with its journal, and `replay` to re-run a journal without tools."
)


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
    ) -> dict[str, Any]:
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
            problems = [{"step": p.step, "problem": p.message} for p in e.problems]
            return {"valid": False, "problems": problems, "message": str(e)}
        except StepgraphError as e:
            raise ToolError(str(e)) from e
        order = [sorted(group) for group in nx.topological_generations(graph)]
        return {"valid": True, "problems": [], "runs_in_order": order}

    def plan(
        self,
        task_file: str | None,
        task: dict[str, Any] | None,
        goal: str | None,
        inputs: dict[str, str] | None,
    ) -> dict[str, Any]:
        chosen, base_dir = self.task(task_file, task, goal)
        engine = self._engine()
        try:
            prepared = engine.prepare(chosen, overrides=inputs, base_dir=base_dir)
            graph = engine.plan(prepared)
        except StepgraphError as e:
            raise ToolError(str(e)) from e
        return {
            "plan": graph.model_dump(mode="json", exclude_defaults=True),
            "plan_hash": graph.plan_hash(),
        }

    def run(
        self,
        task_file: str | None,
        task: dict[str, Any] | None,
        goal: str | None,
        plan: dict[str, Any] | None,
        inputs: dict[str, str] | None,
    ) -> dict[str, Any]:
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
            result = engine.run(prepared, approver=ParkingApprover())
        except StepgraphError as e:
            raise ToolError(str(e)) from e
        if result.status is RunStatus.AWAITING_APPROVAL and result.plan is not None:
            return _awaiting(result, plan_view(result.plan, prepared))
        return _outcome(result)

    def replay(self, journal: str) -> dict[str, Any]:
        path = self._inside_root(journal, "journal")
        try:
            # Replaying imports the task's plugins: only code under the root is run.
            report = replay(path, trust_plugins=code_inside(path, self.root))
        except StepgraphError as e:
            raise ToolError(str(e)) from e
        return {
            "identical": report.identical,
            "divergences": [str(d) for d in report.divergences],
            "error": report.error,
            "answer": report.result.answer if report.result else None,
            "journal": str(report.journal),
        }


def _awaiting(result: RunResult, view: PlanView) -> dict[str, Any]:
    """A parked run as the client reports it to its user: what waits, and who can decide."""
    return {
        "status": result.status.value,
        "run_id": result.run_id,
        "journal": result.journal,
        "plan": view.plan.model_dump(mode="json", exclude_defaults=True),
        "steps": [
            {
                "id": row.id,
                "tool": row.tool,
                "args": json.loads(row.args),  # with the inputs resolved, as data
                "side_effects": row.side_effects,
            }
            for row in view.rows
        ],
        "inputs": view.inputs,
        "plan_hash": view.plan.plan_hash(),
        "approval_hash": view.approval_hash,
        "side_effect_tools": view.side_effect_tools,
        "how_to_approve": (
            "the plan has side effects and waits for a person; nothing has run. Ask the "
            f"user to decide: `stepgraph approve {result.run_id} --by NAME` (or --reject), "
            "or on the run's page in `stepgraph serve`"
        ),
    }


def _outcome(result: RunResult) -> dict[str, Any]:
    return {
        "status": result.status.value,
        "verified": result.verified,
        "answer": result.answer,
        "values": display_data(result.values),
        "unverified_values": display_data(result.unverified_values),
        "failed": result.failed,
        "skipped": result.skipped,
        "verdicts": [
            {"kind": v.kind.value, "step": v.step, "passed": v.passed, "description": v.description}
            for v in result.verdicts
        ],
        "plan_hash": result.plan.plan_hash() if result.plan else None,
        "run_id": result.run_id,
        "journal": result.journal,
    }


def build_server(face: StepgraphMcp) -> MCPServer:
    """The MCP server: four tools over `face`, with hints a client may rely on."""
    server = MCPServer("stepgraph", instructions=INSTRUCTIONS, log_level="WARNING")
    checks_only = ToolAnnotations(readOnlyHint=True, idempotentHint=True, openWorldHint=False)

    @server.tool(annotations=checks_only)
    def validate(
        task_file: str | None = None,
        task: dict[str, Any] | None = None,
        plan: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Check a plan before anything runs: graph, tools, argument schemas, references, units.

        Args:
            task_file: A task file (YAML) under the server's root.
            task: A task as an object: goal, inputs, tools, plan.
            plan: A plan (steps, checks, answer) to check in place of the task's own.
        """
        return face.validate(task_file, task, plan)

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=True))
    def plan(
        task_file: str | None = None,
        task: dict[str, Any] | None = None,
        goal: str | None = None,
        inputs: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """Have the model write a validated plan (a step graph) for a task; nothing runs.

        Args:
            task_file: A task file (YAML) under the server's root.
            task: A task as an object: goal, inputs, tools.
            goal: A goal in plain language, numbers and units included.
            inputs: Input overrides, name to value ("10 TiB").
        """
        return face.plan(task_file, task, goal, inputs)

    @server.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=True))
    def run(
        task_file: str | None = None,
        task: dict[str, Any] | None = None,
        goal: str | None = None,
        plan: dict[str, Any] | None = None,
        inputs: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """Run a task: plan if needed, execute, re-verify every number, answer; journaled.

        A plan with side effects is not run unasked, and not on the client's word: the
        run parks (status 'awaiting_approval', with the plan, its inputs and the run id)
        until a person decides with `stepgraph approve RUN_ID` or the web page.

        Args:
            task_file: A task file (YAML) under the server's root.
            task: A task as an object: goal, inputs, tools, plan.
            goal: A goal in plain language, numbers and units included.
            plan: A plan to run in place of the task's own (or the model's).
            inputs: Input overrides, name to value ("10 TiB").
        """
        return face.run(task_file, task, goal, plan, inputs)

    @server.tool(annotations=checks_only)
    def replay(journal: str) -> dict[str, Any]:
        """Re-run a recorded run from its journal, calling no tool and no model; report differences.

        Args:
            journal: A journal file (.jsonl) under the server's root.
        """
        return face.replay(journal)

    return server

"""Who lets a plan run: policies, a person at a terminal, or a plan file approved offline."""

from __future__ import annotations

import getpass
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Protocol

import networkx as nx
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from stepgraph.exceptions import ApprovalError, TaskFileError
from stepgraph.executor import build_graph, dependencies
from stepgraph.model import ApprovalPolicy, StepGraph, Task
from stepgraph.references import ReferenceError_, resolve, whole_reference
from stepgraph.tools import ToolRegistry
from stepgraph.units import format_value

MAX_REVIEWS = 20  # edits and revisions are bounded like every other loop

HOW_TO_APPROVE = (
    "approve it in one of these ways: run in a terminal to be asked; pass --approve auto; "
    "or write it with `stepgraph plan TASK --out plan.json`, approve it with "
    "`stepgraph approve plan.json`, and run it with `stepgraph run --plan plan.json`"
)


def now() -> str:
    """The current UTC time, ISO 8601."""
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


@dataclass
class StepRow:
    """One line of the plan as a person reviews it."""

    id: str
    tool: str
    args: str
    depends_on: list[str]
    thought: str
    side_effects: bool


@dataclass
class PlanView:
    """What a person needs to judge a plan."""

    plan: StepGraph
    rows: list[StepRow]
    critical_path: list[str]
    parallel_groups: list[list[str]]
    side_effect_tools: list[str] = field(default_factory=list)


def plan_view(plan: StepGraph, tools: ToolRegistry, inputs: Mapping[str, Any]) -> PlanView:
    """Rows with arguments resolved where inputs allow, the critical path, what runs at once."""
    graph = build_graph(plan.steps)
    rows = []
    for step in plan.steps:
        shown = {name: _shown(value, inputs) for name, value in step.args.items()}
        effects = step.tool in tools and tools.get(step.tool).side_effects
        rows.append(
            StepRow(
                step.id,
                step.tool,
                json.dumps(shown, ensure_ascii=False),
                dependencies(step),
                step.thought,
                effects,
            )
        )
    acyclic = nx.is_directed_acyclic_graph(graph)
    return PlanView(
        plan=plan,
        rows=rows,
        critical_path=list(nx.dag_longest_path(graph)) if acyclic else [],
        parallel_groups=[sorted(g) for g in nx.topological_generations(graph)] if acyclic else [],
        side_effect_tools=sorted({row.tool for row in rows if row.side_effects}),
    )


def _shown(value: Any, inputs: Mapping[str, Any]) -> Any:
    """Inputs are shown with their values; step references stay references."""
    whole = whole_reference(value)
    if whole is not None and whole.step == "inputs":
        try:
            return format_value(resolve(value, {"inputs": inputs}))
        except ReferenceError_:
            return value
    return value


Action = Literal["approve", "reject", "edit", "revise"]


@dataclass
class Decision:
    """A person's answer to a plan."""

    action: Action
    plan: StepGraph | None = None  # the edited plan, for "edit"
    comment: str = ""  # what to change, for "revise"
    who: str = field(default_factory=getpass.getuser)
    how: str = "person"  # where it was given: person (a terminal), cli, web, api


class RunParked(Exception):  # noqa: N818 - a signal, not an error: the run waits, nothing failed
    """Raised by an approver that cannot ask now: the run parks in `awaiting approval`."""


class Approver(Protocol):
    """Shows a plan to a person and returns their decision."""

    def review(self, view: PlanView) -> Decision:
        """Ask once."""
        ...


class ParkingApprover:
    """Gives the decisions it was handed, in order; with none left, the run parks.

    This is how a run with nobody at a terminal waits for a person elsewhere: the
    session journals `plan.awaiting` and returns; a decision made later (web page, API,
    `stepgraph approve RUN_ID`) continues the run from its journal with that decision.
    """

    def __init__(self, *decisions: Decision) -> None:
        self.decisions = list(decisions)

    def review(self, view: PlanView) -> Decision:
        """The next decision, or park."""
        if not self.decisions:
            raise RunParked(view.plan.plan_hash())
        return self.decisions.pop(0)


def effective_policy(
    policy: ApprovalPolicy | None, side_effects: bool, can_ask: bool
) -> ApprovalPolicy:
    """The policy in force: an explicit one, else ask for side effects at a terminal, else auto."""
    if policy is not None:
        return policy
    if not side_effects:
        return ApprovalPolicy.AUTO
    return ApprovalPolicy.ASK if can_ask else ApprovalPolicy.READONLY


class ApprovalRecord(BaseModel):
    """Who approved a plan file, and when."""

    model_config = ConfigDict(extra="forbid")

    by: str = Field(description="Who approved it.")
    at: str = Field(description="When, ISO 8601 UTC.")
    plan_hash: str = Field(description="The hash of the plan that was approved.")


class PlanFile(BaseModel):
    """A plan written for offline review: the task it answers, the plan, its hash, approvals."""

    model_config = ConfigDict(extra="forbid")

    version: int = Field(1, description="Format version.")
    task: Task = Field(description="The task the plan answers (without its own plan).")
    plan: StepGraph = Field(description="The plan.")
    plan_hash: str = Field(description="SHA-256 of the plan's content when it was written.")
    approval: ApprovalRecord | None = Field(None, description="Set by `stepgraph approve`.")

    @classmethod
    def load(cls, path: Path) -> PlanFile:
        """Read a plan file, with a clear error for anything else."""
        try:
            return cls.model_validate_json(path.read_text(encoding="utf-8"))
        except (OSError, ValidationError) as e:
            raise TaskFileError(f"not a stepgraph plan file: {e}", path=str(path)) from e

    def save(self, path: Path) -> None:
        """Write the file as indented JSON."""
        path.write_text(self.model_dump_json(indent=2, exclude_none=True) + "\n", encoding="utf-8")

    def approve(self, who: str) -> None:
        """Record an approval of the plan as it is now; a changed plan cannot be approved."""
        self.check_unchanged()
        self.approval = ApprovalRecord(by=who, at=now(), plan_hash=self.plan_hash)

    def check_unchanged(self) -> None:
        """Refuse a plan whose content no longer matches the hash it was written with."""
        if self.plan.plan_hash() != self.plan_hash:
            raise ApprovalError(
                "the plan in this file was changed after it was written (its hash differs); "
                "write it again with `stepgraph plan --out`"
            )

    def approved_plan(self) -> StepGraph:
        """The plan, if it is approved and unchanged since; else an `ApprovalError`."""
        self.check_unchanged()
        if self.approval is None:
            raise ApprovalError("the plan file is not approved: run `stepgraph approve FILE` first")
        if self.approval.plan_hash != self.plan_hash:
            raise ApprovalError("the approval in this file is for a different plan")
        return self.plan

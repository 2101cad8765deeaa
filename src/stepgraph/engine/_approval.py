"""Who lets a plan run: policies, a person at a terminal, or a plan file approved offline."""

from __future__ import annotations

import getpass
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Protocol

import networkx as nx
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from stepgraph.engine._signing import check_signature, sign
from stepgraph.exceptions import ApprovalError, ApprovalMismatchError, TaskFileError
from stepgraph.executor import build_graph, dependencies
from stepgraph.model import ApprovalPolicy, StepGraph, Task, canonical_json
from stepgraph.references import REFERENCE_PATTERN, ReferenceError_, lookup, whole_reference
from stepgraph.task import PreparedTask
from stepgraph.tools import ToolRegistry
from stepgraph.units import format_value
from stepgraph.values import encode_value

MAX_REVIEWS = 20  # edits and revisions are bounded like every other loop

HOW_TO_APPROVE = (
    "approve it in one of these ways: run in a terminal to be asked; pass --approve auto; "
    "or write it with `stepgraph plan TASK --out plan.json`, approve it with "
    "`stepgraph approve plan.json`, and run it with `stepgraph run --plan plan.json`"
)


def now() -> str:
    """The current UTC time, ISO 8601."""
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class ApprovalSubject(BaseModel):
    """What an approval binds: the plan together with the resolved task it runs in.

    A change to any of it (an input after `--set`, the answer template, a tool's schema or
    code, an MCP server) is a different subject, with another hash: an approval of one
    never lets the other run.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    plan_hash: str = Field(description="The plan's own hash.")
    goal: str = Field(description="The task's goal.")
    inputs: dict[str, Any] = Field(description="Every input as the run resolves it (encoded).")
    answer: str | None = Field(None, description="The task's answer template, if any.")
    tools: dict[str, str] = Field(description="Each tool the plan calls: schema + code hash.")
    mcp_servers: list[dict[str, Any]] = Field(description="The task's MCP servers.")

    def digest(self) -> str:
        """The approval hash: SHA-256 of the subject's canonical JSON."""
        digest = hashlib.sha256()
        for piece in canonical_json(self.model_dump(mode="json")):
            digest.update(piece.encode())
        return digest.hexdigest()

    def differences(self, other: ApprovalSubject) -> list[str]:
        """What differs from `other`, in words, for a refusal that says what changed."""
        found = []
        if self.plan_hash != other.plan_hash:
            found.append("the plan")
        if self.goal != other.goal:
            found.append("the goal")
        for name in sorted(set(self.inputs) | set(other.inputs)):
            if self.inputs.get(name) != other.inputs.get(name):
                found.append(f"input '{name}'")
        if self.answer != other.answer:
            found.append("the answer template")
        for name in sorted(set(self.tools) | set(other.tools)):
            if name not in other.tools:
                found.append(f"tool '{name}' (new)")
            elif name not in self.tools:
                found.append(f"tool '{name}' (gone)")
            elif self.tools[name] != other.tools[name]:
                found.append(f"tool '{name}' (schema or code)")
        if self.mcp_servers != other.mcp_servers:
            found.append("the MCP servers")
        return found


def tool_prints(tools: ToolRegistry) -> dict[str, str]:
    """Each tool's fingerprint as an approval binds it: its schema and its code."""
    prints = {}
    for item in tools:
        schema = json.dumps(item.schema(), sort_keys=True, default=str)
        material = f"{schema}\n{item.code_fingerprint()}"
        prints[item.name] = hashlib.sha256(material.encode()).hexdigest()[:16]
    return prints


def tool_fingerprints(tools: ToolRegistry) -> dict[str, str]:
    """A short hash of each tool's schema, so a replay can tell that a tool changed."""
    return {
        item.name: hashlib.sha256(json.dumps(item.schema(), sort_keys=True).encode()).hexdigest()[
            :12
        ]
        for item in tools
    }


def approval_subject(
    plan: StepGraph,
    prepared: PreparedTask,
    *,
    plan_hash: str | None = None,
    tools: dict[str, str] | None = None,
) -> ApprovalSubject:
    """What approving `plan` in `prepared` binds (`plan_hash`, `tools`: when known already)."""
    inputs = prepared.for_plan(plan).inputs
    every = tool_prints(prepared.tools) if tools is None else tools
    # The tools the plan calls: only they can run under this approval (a repair's new plan
    # is approved again), so a change to another tool does not void it.
    called = sorted({step.tool for step in plan.steps})
    return ApprovalSubject(
        plan_hash=plan_hash or plan.plan_hash(),
        goal=prepared.task.goal,
        inputs={name: encode_value(value) for name, value in sorted(inputs.items())},
        answer=prepared.answer,
        tools={name: every.get(name, "missing") for name in called},
        mcp_servers=[server.model_dump(mode="json") for server in prepared.task.mcp_servers],
    )


def approval_hash(plan: StepGraph, prepared: PreparedTask) -> str:
    """The hash an approval of `plan` in `prepared` records and is checked against."""
    return approval_subject(plan, prepared).digest()


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
    """What a person needs to judge a plan: the steps, the inputs, and what approving binds."""

    plan: StepGraph
    rows: list[StepRow]
    critical_path: list[str]
    parallel_groups: list[list[str]]
    side_effect_tools: list[str] = field(default_factory=list)
    inputs: dict[str, str] = field(default_factory=dict)  # name -> value, as people read it
    subject: ApprovalSubject | None = None
    origin: str = ""  # where the plan came from when not the planner: a recalled plan says so

    @property
    def approval_hash(self) -> str:
        """The hash an approval of this view records (the plan's alone without a subject)."""
        return self.subject.digest() if self.subject else self.plan.plan_hash()


def plan_view(
    plan: StepGraph,
    prepared: PreparedTask,
    *,
    subject: ApprovalSubject | None = None,
    origin: str = "",
) -> PlanView:
    """Rows with the inputs resolved, the inputs table, the critical path, what runs at once."""
    tools = prepared.tools
    inputs = prepared.for_plan(plan).inputs
    graph = build_graph(plan.steps)
    rows = []
    for step in plan.steps:
        shown = {name: _shown(value, inputs) for name, value in step.args.items()}
        effects = step.tool in tools and tools.get(step.tool).side_effects
        rows.append(
            StepRow(
                step.id,
                step.tool,
                json.dumps(shown, ensure_ascii=False, default=str),
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
        inputs={name: format_value(value) for name, value in sorted(inputs.items())},
        subject=subject or approval_subject(plan, prepared),
        origin=origin,
    )


def _shown(value: Any, inputs: Mapping[str, Any]) -> Any:
    """Inputs are shown with their values, also inside text; step references stay references."""
    whole = whole_reference(value)
    if whole is not None and whole.step == "inputs":
        try:
            return format_value(lookup(whole, {"inputs": inputs}))
        except ReferenceError_:
            return value
    if isinstance(value, str) and "${" in value:
        return REFERENCE_PATTERN.sub(lambda m: _input_text(m, inputs), value)
    if isinstance(value, dict):
        return {key: _shown(item, inputs) for key, item in value.items()}
    if isinstance(value, list):
        return [_shown(item, inputs) for item in value]
    return value


def _input_text(match: re.Match[str], inputs: Mapping[str, Any]) -> str:
    reference = whole_reference(match.group(0))
    if reference is None or reference.step != "inputs":
        return match.group(0)
    try:
        return format_value(lookup(reference, {"inputs": inputs}))
    except ReferenceError_:
        return match.group(0)


Action = Literal["approve", "reject", "edit", "revise"]


@dataclass
class Decision:
    """A person's answer to a plan."""

    action: Action
    plan: StepGraph | None = None  # the edited plan, for "edit"
    comment: str = ""  # what to change, for "revise"
    who: str = field(default_factory=getpass.getuser)
    how: str = "person"  # where it was given: person (a terminal), cli, web, api
    # The approval hash the decider was shown; a decision about anything else is refused.
    approval_hash: str | None = None


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
    """Who approved a plan file, when, and what exactly: the plan in its resolved task."""

    model_config = ConfigDict(extra="forbid")

    by: str = Field(description="Who approved it.")
    at: str = Field(description="When, ISO 8601 UTC.")
    plan_hash: str = Field(description="The hash of the plan that was approved.")
    approval_hash: str | None = Field(
        None, description="The hash of the plan with its resolved task (inputs, tools, ...)."
    )
    subject: ApprovalSubject | None = Field(
        None, description="What the approval hash covers, so a refusal can say what changed."
    )
    signature: str | None = Field(
        None, description="HMAC of who, when and the approval hash, by the machine's key."
    )

    def signed_text(self) -> str:
        """What the signature covers: who, when, the plan hash and the approval hash."""
        return f"{self.by}\n{self.at}\n{self.plan_hash}\n{self.approval_hash}"


class PlanFile(BaseModel):
    """A plan written for offline review: the task it answers, the plan, its hash, approvals."""

    model_config = ConfigDict(extra="forbid")

    version: int = Field(1, description="Format version.")
    task: Task = Field(description="The task the plan answers (without its own plan).")
    plan: StepGraph = Field(description="The plan.")
    plan_hash: str = Field(description="SHA-256 of the plan's content when it was written.")
    base_dir: str | None = Field(
        None, description="The task's folder, where its plugins are found (absolute)."
    )
    approval: ApprovalRecord | None = Field(None, description="Set by `stepgraph approve`.")

    @property
    def folder(self) -> Path | None:
        """The folder to prepare the task in, when the file names one."""
        return Path(self.base_dir) if self.base_dir else None

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

    def approve(self, who: str, subject: ApprovalSubject) -> None:
        """Record an approval of the plan with its resolved task (`subject`), as they are now."""
        self.check_unchanged()
        if subject.plan_hash != self.plan_hash:
            raise ApprovalMismatchError("the subject of the approval is not this file's plan")
        record = ApprovalRecord(
            by=who,
            at=now(),
            plan_hash=self.plan_hash,
            approval_hash=subject.digest(),
            subject=subject,
        )
        record.signature = sign(record.signed_text())
        self.approval = record

    def check_unchanged(self) -> None:
        """Refuse a plan whose content no longer matches the hash it was written with."""
        if self.plan.plan_hash() != self.plan_hash:
            raise ApprovalMismatchError(
                "the plan in this file was changed after it was written (its hash differs); "
                "write it again with `stepgraph plan --out`"
            )

    def approved_plan(self) -> StepGraph:
        """The plan, if it is approved and unchanged since; else an `ApprovalError`.

        The run checks the rest of what was approved (`check_subject`): the inputs and tools
        are only known once the task is prepared.
        """
        self.check_unchanged()
        if self.approval is None:
            raise ApprovalError("the plan file is not approved: run `stepgraph approve FILE` first")
        if self.approval.plan_hash != self.plan_hash:
            raise ApprovalMismatchError("the approval in this file is for a different plan")
        if self.approval.approval_hash is None:
            raise ApprovalMismatchError(
                "the approval in this file binds the plan but not its inputs and tools "
                "(an older stepgraph wrote it): approve it again with `stepgraph approve FILE`"
            )
        # Anyone who can write the file can write a record: only this machine's key signs.
        check_signature(self.approval.signed_text(), self.approval.signature)
        return self.plan

    def check_subject(self, subject: ApprovalSubject) -> ApprovalRecord:
        """The approval, if it covers `subject` (the plan as it would run now); else refused."""
        self.approved_plan()
        record = self.approval
        assert record is not None  # approved_plan refuses a file without one
        if subject.digest() == record.approval_hash:
            return record
        changed = subject.differences(record.subject) if record.subject else []
        raise ApprovalMismatchError(
            "the plan file was approved for another task than the one it would run in now"
            + (f" ({', '.join(changed)} changed)" if changed else "")
            + "; nothing ran. Write and approve a new plan file for it "
            "(`stepgraph plan TASK --set ... --out FILE`, then `stepgraph approve FILE`)"
        )

"""The plans of one run, each held with what was worked out about it once.

A plan is not changed once made (an edit is a new plan), so its hash is computed once, and
the graph its static checks built (the planner's, or the given plan's check) is what runs:
checking it again was a fifth of a big run. Plans are held as objects and found by
identity: a run has a handful (the first, edits, repairs), and an id of a plan that is
gone could name a new one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import networkx as nx

from stepgraph.engine._approval import ApprovalSubject, approval_subject, tool_prints
from stepgraph.engine._given import check_given_plan
from stepgraph.executor import check_plan
from stepgraph.model import StepGraph, plan_hash_of
from stepgraph.task import PreparedTask


@dataclass
class _Held:
    plan: StepGraph
    hash: str | None = None
    graph: nx.DiGraph | None = None  # until it is run: the scheduler may add to a graph
    given: bool = False  # a person's plan (the task's, a plan file's, an edit), not a model's


class PlanBook:
    """Each plan of a run with its hash, its checked graph and whether a person gave it."""

    def __init__(self, prepared: PreparedTask) -> None:
        self.prepared = prepared
        self._held: list[_Held] = []
        self._tool_prints: dict[str, str] | None = None  # what approvals bind of the tools

    def _find(self, plan: StepGraph) -> _Held:
        for held in self._held:
            if held.plan is plan:
                return held
        held = _Held(plan)
        self._held.append(held)
        return held

    def hash(self, plan: StepGraph, dumped: dict[str, Any] | None = None) -> str:
        """The plan's hash, from `dumped` (its JSON dump) when the caller has made one."""
        held = self._find(plan)
        if held.hash is None:
            held.hash = plan_hash_of(plan.model_dump(mode="json") if dumped is None else dumped)
        return held.hash

    def check_given(self, plan: StepGraph) -> None:
        """Check a plan a person gave (raises `PlanValidationError`); keep its graph."""
        held = self._find(plan)
        held.given = True
        held.graph = check_given_plan(plan, self.prepared)

    def checked(self, plan: StepGraph, graph: nx.DiGraph) -> StepGraph:
        """Keep the graph the planner's checks built for `plan`; return the plan."""
        self._find(plan).graph = graph
        return plan

    def is_given(self, plan: StepGraph) -> bool:
        """Whether a person gave this plan object (in this process)."""
        return any(held.plan is plan and held.given for held in self._held)

    def graph(self, plan: StepGraph, prepared: PreparedTask) -> nx.DiGraph:
        """The graph to run: the one checked before, once, else the plan checked now."""
        held = self._find(plan)
        graph, held.graph = held.graph, None
        return graph if graph is not None else check_plan(plan, prepared)

    def tool_prints(self) -> dict[str, str]:
        """The tools' fingerprints as approvals bind them (made once)."""
        if self._tool_prints is None:
            self._tool_prints = tool_prints(self.prepared.tools)
        return self._tool_prints

    def subject(self, plan: StepGraph) -> ApprovalSubject:
        """What approving `plan` binds: the plan with the task as this run resolved it."""
        return approval_subject(
            plan, self.prepared, plan_hash=self.hash(plan), tools=self.tool_prints()
        )

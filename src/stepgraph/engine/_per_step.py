"""Approval per step: what needs nobody's approval runs while the side-effecting steps wait.

With `approval: per-step` and nobody at a terminal, the read-only steps that depend on
no side-effecting step run at once; then the run parks with the whole plan. Once it is
approved, their observations are reused (by step signature) and only the rest runs.
"""

from __future__ import annotations

from typing import Any

import networkx as nx

from stepgraph.executor import Backend, check_plan, execute, step_signatures
from stepgraph.journal import JournalWriter
from stepgraph.model import StepGraph
from stepgraph.task import PreparedTask


def run_read_only(
    plan: StepGraph,
    prepared: PreparedTask,
    journal: JournalWriter,
    *,
    max_workers: int,
    backend: Backend,
) -> dict[str, tuple[Any, dict[str, Any]]]:
    """Run the steps no approval is needed for; their values and arguments by signature."""
    tools = prepared.tools
    graph = check_plan(plan, prepared)
    risky = {s.id for s in plan.steps if s.tool in tools and tools.get(s.tool).side_effects}
    held = risky | {later for step in risky for later in nx.descendants(graph, step)}
    free = graph.subgraph([sid for sid in graph if sid not in held]).copy()
    if not free:
        return {}
    execution = execute(
        free, tools, prepared.inputs, journal, max_workers=max_workers, backend=backend
    )
    signatures = step_signatures(graph)  # a free step's upstream is free: the same signature
    return {
        signatures[sid]: (value, execution.actions.get(sid, {}))
        for sid, value in execution.values.items()
    }

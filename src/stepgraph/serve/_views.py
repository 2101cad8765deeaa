"""What the pages and the API show of a run, computed from its journal."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import networkx as nx
import pint

from stepgraph.engine import Engine, ParkedRun, parked
from stepgraph.executor import build_graph
from stepgraph.journal import (
    AnswerEvent,
    CheckEvent,
    ObservationEvent,
    PlanApproved,
    PlanEdited,
    PlanProposed,
    Recording,
    RunRow,
    StepReused,
)
from stepgraph.model import StepGraph
from stepgraph.units import format_value
from stepgraph.values import decode_value

NODE_W, NODE_H, GAP_X, GAP_Y = 170, 46, 60, 22
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w])")
_TOLERANCE = 5e-3  # an answer may round 962.2800001 to 962.28


@dataclass
class Node:
    """One step drawn in the graph."""

    id: str
    tool: str
    x: int
    y: int


@dataclass
class Edge:
    """A dependency drawn from one step's right edge to another's left edge."""

    x1: int
    y1: int
    x2: int
    y2: int


@dataclass
class GraphPicture:
    """The step graph laid out in columns by dependency depth."""

    nodes: list[Node] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    width: int = 0
    height: int = 0


def layout(plan: StepGraph | None) -> GraphPicture:
    """Columns are topological generations; a step sits right of everything it needs."""
    picture = GraphPicture()
    if plan is None or not plan.steps:
        return picture
    graph = build_graph(plan.steps)
    if not nx.is_directed_acyclic_graph(graph):
        return picture
    tools = {step.id: step.tool for step in plan.steps}
    where: dict[str, tuple[int, int]] = {}
    for column, generation in enumerate(nx.topological_generations(graph)):
        for row, sid in enumerate(sorted(generation)):
            x, y = 10 + column * (NODE_W + GAP_X), 10 + row * (NODE_H + GAP_Y)
            where[sid] = (x, y)
            picture.nodes.append(Node(sid, tools.get(sid, ""), x, y))
    for a, b in graph.edges:
        (x1, y1), (x2, y2) = where[a], where[b]
        picture.edges.append(Edge(x1 + NODE_W, y1 + NODE_H // 2, x2, y2 + NODE_H // 2))
    picture.width = max(n.x for n in picture.nodes) + NODE_W + 10
    picture.height = max(n.y for n in picture.nodes) + NODE_H + 10
    return picture


def current_plan(recording: Recording) -> StepGraph | None:
    """The plan that ran (the last approved), else the last one put forward."""
    latest: StepGraph | None = None
    approved: StepGraph | None = None
    for event in recording.journal.events:
        if isinstance(event, PlanProposed | PlanEdited) and getattr(event, "purpose", None) in (
            None,
            "plan",
            "repair",
            "revise",
        ):
            latest = recording.plans.get(event.plan_hash, latest)
        elif isinstance(event, PlanApproved):
            approved = recording.plans.get(event.plan_hash, approved)
    return approved or latest


def step_values(recording: Recording) -> dict[str, Any]:
    """Each step's final value (decoded), from its last successful observation or reuse."""
    values: dict[str, Any] = {}
    for event in recording.journal.events:
        if event.step is None:
            continue
        if (
            isinstance(event, ObservationEvent)
            and event.final
            and event.ok
            or isinstance(event, StepReused)
        ):
            values[event.step] = decode_value(event.value)
    return values


def _magnitudes(value: Any) -> list[float]:
    if isinstance(value, bool):
        return []
    if isinstance(value, pint.Quantity):
        return [float(value.magnitude)]
    if isinstance(value, int | float):
        return [float(value)]
    return []


def answer_parts(answer: str, values: dict[str, Any]) -> list[dict[str, str | None]]:
    """The answer cut into text and numbers, each number with the step whose value it is."""
    parts: list[dict[str, str | None]] = []
    last = 0
    for match in _NUMBER.finditer(answer):
        try:
            number = float(match.group().replace(",", ""))
        except ValueError:
            continue
        step = next(
            (
                sid
                for sid, value in values.items()
                for magnitude in _magnitudes(value)
                if math.isclose(number, magnitude, rel_tol=_TOLERANCE, abs_tol=1e-12)
            ),
            None,
        )
        if step is None:
            continue
        if match.start() > last:
            parts.append({"text": answer[last : match.start()], "step": None})
        parts.append({"text": match.group(), "step": step})
        last = match.end()
    if last < len(answer):
        parts.append({"text": answer[last:], "step": None})
    return parts


def result_of(row: RunRow) -> dict[str, Any]:
    """A run's result as the API gives it: the index row, values, verdicts, the linked answer."""
    recording = Recording.load(Path(row.path))
    values = step_values(recording)
    answers = [e for e in recording.journal.events if isinstance(e, AnswerEvent)]
    answer = answers[-1].text if answers else None
    checks = [e for e in recording.journal.events if isinstance(e, CheckEvent)]
    data = row.as_dict()
    data.pop("path")
    return {
        **data,
        "values": {sid: format_value(value) for sid, value in values.items()},
        "verdicts": [
            {"step": c.step, "kind": c.kind, "passed": c.passed, "description": c.description}
            for c in checks
        ],
        "answer_parts": answer_parts(answer, values) if answer else [],
        "answer": answer,
    }


@dataclass
class Review:
    """What the approval page shows of a parked run."""

    state: ParkedRun
    rows: list[Any]
    critical_path: list[str]
    side_effects: list[str]
    diff: dict[str, Any] | None
    plan_json: str
    inputs: dict[str, str]  # as the plan will use them
    approval_hash: str  # what a decision on this page binds: sent back with it


def review_of(row: RunRow, tools: list[Any]) -> Review | None:
    """The parked plan as a person reviews it, or None when the run is not waiting."""
    state = parked(Path(row.path))
    if state is None:
        return None
    view = state.view(Engine(tools=tools))
    return Review(
        state=state,
        rows=view.rows,
        critical_path=view.critical_path,
        side_effects=view.side_effect_tools,
        diff=state.diff(),
        plan_json=state.plan.model_dump_json(indent=2, exclude_defaults=True),
        inputs=view.inputs,
        approval_hash=view.approval_hash,
    )

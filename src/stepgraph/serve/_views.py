"""What the pages and the API show of a run, computed from its journal."""

from __future__ import annotations

import math
import os
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import networkx as nx
import orjson

from stepgraph.engine import Engine, ParkedRun, parked
from stepgraph.executor import build_graph, layered_layout
from stepgraph.journal import RunDigest, RunRow, digest
from stepgraph.model import StepGraph

NODE_W, NODE_H, GAP_X, GAP_Y = 170, 46, 60, 22
MAX_DRAWN_STEPS = 1_000  # a larger plan is not drawn: the page lists what its steps did instead
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w])")
_TOLERANCE = 5e-3  # an answer may round 962.2800001 to 962.28
_TAIL_BYTES = 2**16  # the end of a journal read for its last two events


@dataclass
class Node:
    """One step drawn in the graph: its box's top-left corner."""

    id: str
    tool: str
    x: float
    y: float


@dataclass
class Edge:
    """A dependency drawn as the layout routed it (an SVG path), from one step to the next."""

    source: str
    target: str
    d: str


@dataclass
class GraphPicture:
    """The step graph as the layered layout places it (the same layout `stepgraph graph` draws)."""

    nodes: list[Node] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    width: float = 0
    height: float = 0
    engine: str = "none"


_LAID_OUT: OrderedDict[str, GraphPicture] = OrderedDict()  # plan hash -> its picture
_LAYOUTS_LOCK = threading.Lock()
_KEPT_LAYOUTS = 32  # a plan's layout is the same on every visit: the recent ones are kept


def layout(plan: StepGraph | None, plan_hash: str = "") -> GraphPicture:
    """Columns by dependency depth, rows ordered to cross few edges (`layered_layout`)."""
    if plan is None or not plan.steps:
        return GraphPicture()
    with _LAYOUTS_LOCK:  # pages are served from several threads
        kept = _LAID_OUT.get(plan_hash) if plan_hash else None
        if kept is not None:
            _LAID_OUT.move_to_end(plan_hash)
            return kept
    graph = build_graph(plan.steps)
    if not nx.is_directed_acyclic_graph(graph):
        return GraphPicture()
    laid = layered_layout(graph, node_w=NODE_W, node_h=NODE_H, gap_x=GAP_X, gap_y=GAP_Y)
    tools = {step.id: step.tool for step in plan.steps}
    picture = GraphPicture(width=round(laid.width), height=round(laid.height), engine=laid.engine)
    for box in laid.boxes.values():
        picture.nodes.append(Node(box.id, tools.get(box.id, ""), round(box.x, 1), round(box.y, 1)))
    picture.edges = [Edge(r.source, r.target, r.svg_path()) for r in laid.routes]
    if plan_hash:
        with _LAYOUTS_LOCK:
            _LAID_OUT[plan_hash] = picture
            while len(_LAID_OUT) > _KEPT_LAYOUTS:
                _LAID_OUT.popitem(last=False)
    return picture


@dataclass
class RunView:
    """What the run page shows: the digest, the plan that ran and its picture, or why not."""

    digest: RunDigest
    plan_hash: str
    picture: GraphPicture
    not_drawn: str | None  # why the graph is not drawn, when there is a plan
    state_counts: dict[str, int]


def run_view(row: RunRow) -> RunView:
    """The run page's content, from the digest; the plan is built only when it will be drawn."""
    found = digest(Path(row.path))
    plan_bytes = found.plan_size()
    plan = found.plan() if plan_bytes is not None else None
    not_drawn: str | None = None
    if plan_bytes is not None and plan is None:
        not_drawn = f"the plan is {_mb(plan_bytes)} of JSON, too large to draw here"
    elif plan is not None and len(plan.steps) > MAX_DRAWN_STEPS:
        not_drawn = f"the plan has {len(plan.steps):,} steps; it is drawn up to {MAX_DRAWN_STEPS:,}"
        plan = None
    counts: dict[str, int] = {}
    for state in found.states.values():
        counts[state] = counts.get(state, 0) + 1
    return RunView(
        digest=found,
        plan_hash=found.plan_hash or "",
        picture=layout(plan, found.plan_hash or ""),
        not_drawn=not_drawn,
        state_counts=dict(sorted(counts.items())),
    )


def _mb(size: int) -> str:
    return f"{size / 2**20:,.1f} MB"


def answer_parts(answer: str, magnitudes: dict[str, list[float]]) -> list[dict[str, str | None]]:
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
                for sid, numbers in magnitudes.items()
                for magnitude in numbers
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


def recorded_decision(path: Path) -> str | None:
    """Who decided, when the journal ends with a decision on its parked plan and nothing since.

    Such a decision was recorded by a process that stopped before carrying it out (or is
    about to); only the end of the journal is read.
    """
    try:
        with path.open("rb") as file:
            size = os.fstat(file.fileno()).st_size
            file.seek(max(0, size - _TAIL_BYTES))
            tail = file.read(_TAIL_BYTES)
    except OSError:
        return None
    lines = [line for line in tail.split(b"\n") if line.strip()]
    if size > _TAIL_BYTES:
        lines = lines[1:]  # the first may be the end of a longer line
    if len(lines) < 2:
        return None
    try:
        awaiting, decided = orjson.loads(lines[-2]), orjson.loads(lines[-1])
    except orjson.JSONDecodeError:  # a line still being written
        return None
    if not isinstance(awaiting, dict) or not isinstance(decided, dict):
        return None
    verb = {"plan.approved": "the approval", "plan.rejected": "the rejection"}
    if (
        awaiting.get("event") != "plan.awaiting"
        or decided.get("event") not in verb
        or decided.get("plan_hash") != awaiting.get("plan_hash")
    ):
        return None
    return f"{verb[decided['event']]} by {decided.get('who')} ({decided.get('how')})"


def way_on(row: RunRow) -> str | None:
    """How a run whose process stopped goes on (for the API and the page); None for others."""
    if row.status != "interrupted" or row.duration_ms is not None:  # ended, or never stopped
        return None
    decided = recorded_decision(Path(row.path))
    if decided:
        return (
            f"{decided} was recorded but not carried out (the process that recorded it "
            f"stopped): POST /api/runs/{row.run_id}/continue carries it out (the Continue "
            "button on the run's page)"
        )
    return (
        "the process running it stopped before the run ended: finish it on the server with "
        f"`stepgraph resume RUNS/{Path(row.path).name}` (RUNS: the runs folder); steps that "
        "finished are not run again"
    )


def result_of(row: RunRow) -> dict[str, Any]:
    """A run's result as the API gives it: the index row, values, verdicts, the linked answer.

    From the run's digest (one pass over its journal, keeping only this), so a journal of
    any size costs about what its answer, verdicts and step values take.
    """
    found = digest(Path(row.path))
    data = row.as_dict()
    data.pop("path")
    return {
        **data,
        "values": found.values,
        "steps": found.states,
        "verdicts": [
            {"step": v.step, "kind": v.kind, "passed": v.passed, "description": v.description}
            for v in found.verdicts
        ],
        "answer_parts": answer_parts(found.answer, found.magnitudes) if found.answer else [],
        "answer": found.answer,
        "last_seq": found.last_seq,
        "journal_bytes": found.size,
        "way_on": way_on(row),
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
    origin: str = ""  # where the plan came from when memory gave it


def review_of(row: RunRow, tools: list[Any]) -> Review | None:
    """The parked plan as a person reviews it, or None when the run is not waiting."""
    if not row.awaiting:  # the index reads the journal as `parked` would, every kind of line
        return None
    state = parked(Path(row.path), review_only=True)
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
        origin=view.origin,
    )

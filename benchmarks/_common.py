"""Shared pieces: seeded random DAGs, a simulated-latency tool, tables, machine facts."""

from __future__ import annotations

import os
import platform
import random
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import networkx as nx

from stepgraph import RunStatus, StepGraph, tool

# A benchmark run passed when every verdict passed; no-op tools leave nothing to check.
PASSED = frozenset({RunStatus.VERIFIED, RunStatus.UNCHECKED})


@tool
def sleep_ms(ms: float) -> float:
    """Simulate a tool call that takes `ms` milliseconds (a sleep, as I/O would)."""
    time.sleep(ms / 1000)
    return ms


@tool
def noop(ms: float = 0.0) -> float:
    """Return at once: measures pure engine overhead."""
    return ms


def random_dag(
    count: int, width: int, seed: int, latency: tuple[float, float] = (0, 0)
) -> StepGraph:
    """Layers of up to `width` steps; each step waits for 1-3 steps of the layers just before."""
    rng = random.Random(seed)
    steps: list[dict[str, Any]] = []
    layers: list[list[str]] = []
    while len(steps) < count:
        layer = []
        for _ in range(min(rng.randint(1, width), count - len(steps))):
            step_id = f"s{len(steps)}"
            earlier = [s for previous in layers[-2:] for s in previous]
            parents = rng.sample(earlier, min(len(earlier), rng.randint(1, 3))) if earlier else []
            ms = round(rng.uniform(*latency), 3)
            tool_name = "sleep_ms" if latency[1] > 0 else "noop"
            steps.append(
                {"id": step_id, "tool": tool_name, "args": {"ms": ms}, "depends_on": parents}
            )
            layer.append(step_id)
        layers.append(layer)
    return StepGraph.model_validate({"steps": steps})


def latency_graph(plan: StepGraph) -> nx.DiGraph:
    """The plan as a DiGraph whose nodes carry their simulated latency in ms."""
    graph = nx.DiGraph()
    for step in plan.steps:
        graph.add_node(step.id, ms=step.args["ms"])
        graph.add_edges_from((parent, step.id) for parent in step.depends_on)
    return graph


def critical_path_ms(plan: StepGraph) -> float:
    """The longest latency-weighted path: no schedule can finish sooner."""
    graph = latency_graph(plan)
    best: dict[str, float] = {}
    for node in nx.topological_sort(graph):
        before = max((best[p] for p in graph.predecessors(node)), default=0.0)
        best[node] = before + graph.nodes[node]["ms"]
    return max(best.values(), default=0.0)


def machine() -> str:
    """Cores, Python, platform and date, printed above every table."""
    return (
        f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}, "
        f"{platform.system()} {platform.machine()}, {datetime.now(UTC):%Y-%m-%d}"
    )


def table(title: str, header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain-text table that reads the same in a terminal and in the README."""
    cells = [[str(c) for c in header]] + [[_cell(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = [f"## {title}", ""]
    lines.append(
        "| " + " | ".join(c.ljust(w) for c, w in zip(cells[0], widths, strict=True)) + " |"
    )
    lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in cells[1:]:
        lines.append("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |")
    return "\n".join(lines) + "\n"


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.3f}" if abs(value) < 10 else f"{value:,.1f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def reference_dag(count: int, width: int, seed: int) -> StepGraph:
    """`random_dag` with data flowing: each step takes its first parent's output as `${id}`."""
    steps = []
    for step in random_dag(count, width, seed).steps:
        fields = step.model_dump(exclude_defaults=True)
        if step.depends_on:
            fields["args"] = {"ms": "${" + step.depends_on[0] + "}"}
            fields["depends_on"] = step.depends_on[1:]
        steps.append(fields)
    return StepGraph.model_validate({"steps": steps})

"""Benchmark 1: does a run take as long as its critical path, not the sum of its steps?"""

from __future__ import annotations

import time

from benchmarks._common import critical_path_ms, random_dag, sleep_ms, table
from stepgraph.executor import execute, validate_plan
from stepgraph.journal import NullJournal
from stepgraph.tools import ToolRegistry


def run(steps: int = 200, width: int = 20, seed: int = 7, serial: bool = True) -> str:
    """Wall time against the latency-weighted critical path, and against one-by-one."""
    plan = random_dag(steps, width, seed, latency=(20, 50))
    tools = ToolRegistry([sleep_ms])
    graph = validate_plan(plan, tools)
    bound = critical_path_ms(plan)
    total = sum(step.args["ms"] for step in plan.steps)

    started = time.perf_counter()
    execute(graph, tools, {}, NullJournal(), max_workers=64)
    wall = (time.perf_counter() - started) * 1000
    rows = [["stepgraph, 64 workers", wall, bound, wall / bound, wall - bound]]
    speedup = ""
    if serial:
        started = time.perf_counter()
        execute(graph, tools, {}, NullJournal(), max_workers=1)
        one_by_one = (time.perf_counter() - started) * 1000
        rows.append(
            ["same steps one by one", one_by_one, bound, one_by_one / bound, one_by_one - bound]
        )
        speedup = f"Speedup over one by one: {one_by_one / wall:.1f}x. "
    title = (
        f"1. Critical-path efficiency ({steps} steps, width <= {width}, latency 20-50 ms, "
        f"seed {seed})"
    )
    header = ["run", "wall ms", "critical path ms", "wall / bound", "over bound ms"]
    note = f"Sum of all latencies: {total:,.0f} ms. {speedup}Target: wall / bound <= 1.05.\n"
    return table(title, header, rows) + "\n" + note

"""Benchmark 5: stepgraph on a real Dask cluster against plain `Client.submit` of the same graph.

A LocalCluster with two worker processes on 127.0.0.1. The plain contender submits
every step with its upstream futures as arguments and gathers every result: what
Dask does with no engine around it. stepgraph runs the same plan through `Engine.run`
with the journal on, every event written by this process.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import networkx as nx

from benchmarks import _common
from benchmarks._common import critical_path_ms, latency_graph, noop, random_dag, sleep_ms, table
from stepgraph import Engine, StepGraph, Task
from stepgraph.executor import DaskBackend


def _step(ms: float, *_upstream: Any) -> float:
    """A plain Dask task: sleep like the tool, take the upstream values as arguments."""
    time.sleep(ms / 1000)
    return ms


def _plain(client: Any, plan: StepGraph) -> None:
    graph = latency_graph(plan)
    futures: dict[str, Any] = {}
    for node in nx.topological_sort(graph):
        upstream = [futures[parent] for parent in graph.predecessors(node)]
        futures[node] = client.submit(_step, graph.nodes[node]["ms"], *upstream, pure=False)
    client.gather(list(futures.values()))


def _timed(function: Callable[[], object]) -> float:
    started = time.perf_counter()
    function()
    return time.perf_counter() - started


def run(steps: int = 200, width: int = 20, seed: int = 3, repeats: int = 5) -> str:
    """Wall time against plain Client.submit: a sleep graph and a no-op graph, taking turns."""
    import cloudpickle
    from distributed import Client, LocalCluster

    # The workers cannot import the benchmarks package: its functions travel by value.
    cloudpickle.register_pickle_by_value(_common)
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    sleepy = random_dag(steps, width, seed, latency=(5, 20))
    instant = random_dag(steps, width, seed)
    bound = critical_path_ms(sleepy) / 1000
    workers = min(steps, 256)
    with (
        LocalCluster(
            n_workers=2,
            threads_per_worker=width,
            processes=True,
            host="127.0.0.1",
            dashboard_address=":0",  # a free port: a fixed one may be taken on this host
        ) as cluster,
        Client(cluster) as client,
        tempfile.TemporaryDirectory() as folder,
    ):
        engine = Engine(tools=[sleep_ms, noop], backend=lambda: DaskBackend(client))
        runs = iter(range(1_000_000))

        def stepgraph(plan: StepGraph) -> None:
            task = Task(name="dask", goal="dask", plan=plan, max_workers=workers)
            result = engine.run(task, journal=Path(folder) / f"{next(runs)}.jsonl")
            if not result.verified:
                raise RuntimeError(f"the benchmark run did not verify: {result.answer}")

        contenders: dict[str, Callable[[], object]] = {
            "plain Client.submit, sleep graph": lambda: _plain(client, sleepy),
            "stepgraph Engine.run, sleep graph": lambda: stepgraph(sleepy),
            "plain Client.submit, no-op graph": lambda: _plain(client, instant),
            "stepgraph Engine.run, no-op graph": lambda: stepgraph(instant),
        }
        for contender in contenders.values():  # warm up: workers import, functions ship
            contender()
        times: dict[str, list[float]] = {name: [] for name in contenders}
        for _ in range(repeats):
            for name, contender in contenders.items():
                times[name].append(_timed(contender))
    wall = {name: statistics.median(spent) for name, spent in times.items()}
    plain_sleep, ours_sleep = (
        wall["plain Client.submit, sleep graph"],
        wall["stepgraph Engine.run, sleep graph"],
    )
    plain_step = wall["plain Client.submit, no-op graph"] * 1000 / steps
    ours_step = wall["stepgraph Engine.run, no-op graph"] * 1000 / steps
    rows = [
        ["plain Client.submit, sleep graph", plain_sleep * 1000, plain_sleep / bound, 1.0],
        [
            "stepgraph Engine.run, sleep graph",
            ours_sleep * 1000,
            ours_sleep / bound,
            ours_sleep / plain_sleep,
        ],
        ["plain Client.submit, no-op graph (ms per step)", plain_step, "", 1.0],
        ["stepgraph Engine.run, no-op graph (ms per step)", ours_step, "", ours_step / plain_step],
    ]
    title = (
        f"8. Dask: a LocalCluster, 2 worker processes x {width} threads on 127.0.0.1 "
        f"({steps} steps, width <= {width}, latency 5-20 ms, seed {seed}, median of {repeats})"
    )
    header = ["contender", "wall ms", "x critical path", "x plain Client.submit"]
    whole, per_step = ours_sleep / plain_sleep, ours_step / plain_step
    note = (
        f"Critical path: {bound * 1000:,.0f} ms. "
        f"Goal: sleep graph within 1.1x of plain Client.submit: {whole:.2f}x "
        f"({'met' if whole <= 1.1 else 'NOT met'}); "
        f"per-step overhead within 1.5x: {per_step:.2f}x "
        f"({'met' if per_step <= 1.5 else 'NOT met'}).\n"
    )
    return table(title, header, rows) + "\n" + note


if __name__ == "__main__":
    print(run())

"""Where a Dask run's time goes, step by step: ``python -m benchmarks.dask_timeline``.

A companion to benchmark 8 (`dask_overhead`), not a goal of its own: for the same sleep
graph it records, on the client, when each step was handed to the cluster, and from
the workers' task stream when each step ran. It prints, for stepgraph and for plain
`Client.submit`, the median over rounds of: the first submission, the first task
started, the span from first start to last end, and the tail from the last end to
the caller's return; and for stepgraph, how many steps went ahead of their inputs and
how long before their upstream steps finished they were on the cluster.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from benchmarks import _common, dask_overhead
from benchmarks._common import latency_graph, noop, random_dag, sleep_ms, table
from stepgraph import Engine, Task
from stepgraph.executor import DaskBackend
from stepgraph.model import Step
from stepgraph.tools import Tool


class _Recording(DaskBackend):
    """A DaskBackend that notes when each step's task left for the cluster, and its key."""

    def __init__(self, client: Any, sent: dict[str, tuple[float, str]]) -> None:
        super().__init__(client)
        self.sent = sent
        self._queued: list[tuple[str, Future[Any]]] = []

    def submit(self, call: Any) -> Future[Any]:
        future = super().submit(call)
        self.sent[call.step.id] = (time.time(), self._keys[future])
        return future

    def submit_ahead(
        self, step: Step, tool: Tool, known: dict[str, Any], upstream: Any
    ) -> Future[Any] | None:
        future = super().submit_ahead(step, tool, known, upstream)
        if future is not None:
            self._queued.append((step.id, future))
        return future

    def flush(self) -> None:
        super().flush()
        now = time.time()
        for step_id, future in self._queued:
            self.sent[step_id] = (now, self._keys[future])
        self._queued.clear()


def _computed(stream: list[dict[str, Any]]) -> dict[str, tuple[float, float]]:
    spans: dict[str, tuple[float, float]] = {}
    for task in stream:
        for part in task["startstops"]:
            if part["action"] == "compute":
                spans[task["key"]] = (part["start"], part["stop"])
    return spans


def run(steps: int = 200, width: int = 20, seed: int = 3, repeats: int = 7) -> str:
    """The timeline of both contenders on the sleep graph of benchmark 8."""
    import cloudpickle
    from distributed import Client, LocalCluster, get_task_stream

    cloudpickle.register_pickle_by_value(_common)
    cloudpickle.register_pickle_by_value(dask_overhead)
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    plan = random_dag(steps, width, seed, latency=(5, 20))
    graph = latency_graph(plan)
    phases: dict[str, list[list[float]]] = {"plain Client.submit": [], "stepgraph Engine.run": []}
    ahead_counts: list[int] = []
    leads: list[float] = []
    with (
        LocalCluster(
            n_workers=2,
            threads_per_worker=width,
            processes=True,
            host="127.0.0.1",
            dashboard_address=":0",
        ) as cluster,
        Client(cluster) as client,
        tempfile.TemporaryDirectory() as folder,
    ):
        sent: dict[str, tuple[float, str]] = {}
        engine = Engine(tools=[sleep_ms, noop], backend=lambda: _Recording(client, sent))
        task = Task(name="dask", goal="dask", plan=plan, max_workers=min(steps, 256))
        first_submit: list[float] = []
        original = client.submit

        def noting(*args: Any, **kwargs: Any) -> Any:
            first_submit.append(time.time())
            return original(*args, **kwargs)

        def plain() -> None:
            client.submit = noting
            try:
                dask_overhead._plain(client, plan)
            finally:
                client.submit = original

        def ours() -> None:
            engine.run(task, journal=Path(folder) / f"{time.time_ns()}.jsonl")

        plain()
        ours()
        for _ in range(repeats):
            for name, contender in (("plain Client.submit", plain), ("stepgraph Engine.run", ours)):
                sent.clear()
                first_submit.clear()
                with get_task_stream(client) as stream:
                    started = time.time()
                    contender()
                    ended = time.time()
                spans = _computed(stream.data)
                first = min(start for start, _ in spans.values())
                last = max(stop for _, stop in spans.values())
                submitted = min(first_submit) if first_submit else min(t for t, _ in sent.values())
                phases[name].append(
                    [
                        (submitted - started) * 1000,
                        (first - started) * 1000,
                        (last - first) * 1000,
                        (ended - last) * 1000,
                        (ended - started) * 1000,
                    ]
                )
                if sent:
                    done = {step_id: spans[key][1] for step_id, (_, key) in sent.items()}
                    ahead = 0
                    for step_id, (at, _) in sent.items():
                        upstream = [done[p] for p in graph.predecessors(step_id)]
                        if upstream and at < max(upstream):
                            ahead += 1
                            leads.append((max(upstream) - at) * 1000)
                    ahead_counts.append(ahead)
    rows = [
        [name, *(statistics.median(column) for column in zip(*runs, strict=True))]
        for name, runs in phases.items()
    ]
    header = ["contender", "first submit", "first start", "span", "tail", "wall ms"]
    title = (
        f"8b. Dask timeline: ms from the call, median of {repeats} rounds "
        f"({steps} steps, seed {seed})"
    )
    note = (
        f"stepgraph: {statistics.median(ahead_counts):.0f} of {steps} steps were on the "
        f"cluster before their last upstream step finished, a median of "
        f"{statistics.median(leads) if leads else 0:.0f} ms before it.\n"
    )
    return table(title, header, rows) + "\n" + note


if __name__ == "__main__":
    print(run())

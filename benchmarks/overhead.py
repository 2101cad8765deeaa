"""Benchmark 2: per-step overhead on the paths users take, against dask and a bare loop.

Every contender runs the same 10k no-op steps on 4 workers. stepgraph is timed where
users meet it: `Engine.run` (validation, signatures, approval, journal, verification,
answer) with `${id}` references between steps, and the `stepgraph run --json` command in
a subprocess (its start-up and task-file loading included). `execute()` on a graph
validated beforehand is a breakdown row: the scheduler alone.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from pathlib import Path

import networkx as nx
import orjson

from benchmarks._common import PASSED, latency_graph, noop, reference_dag, table
from stepgraph import Engine, Task
from stepgraph.executor import execute, validate_plan
from stepgraph.journal import Action, JournalWriter, ObservationEvent, Thought
from stepgraph.tools import ToolRegistry

BARE = "bare futures ready-set loop"
DASK = "dask.threaded.get, every key requested"
RUN_ON = "Engine.run, journal on, ${id} references"
RUN_OFF = "Engine.run, journal off, ${id} references"
EXECUTE = "  breakdown: execute(), journal on, graph validated before"
VALIDATE = "  breakdown: validate_plan() alone (the static checks)"
EVENTS = "  breakdown: the journal alone (thought, action, observation a step)"
CLI = "stepgraph run --json (subprocess)"

# The CLI finds the no-op tool in a plugin file next to the task file.
PLUGIN = textwrap.dedent(
    '''
    from stepgraph import tool


    @tool
    def noop(ms: float = 0.0) -> float:
        """Return at once: measures pure engine overhead."""
        return ms
    '''
)


def _bare_loop(graph: nx.DiGraph, workers: int) -> None:
    """The least a ready-set scheduler can do: futures, a dependency count, FIRST_COMPLETED."""
    waiting = {node: graph.in_degree(node) for node in graph}
    ready = [node for node, count in waiting.items() if count == 0]
    with ThreadPoolExecutor(workers) as pool:
        running = {}
        while ready or running:
            while ready:
                node = ready.pop()
                running[pool.submit(noop.func, 0.0)] = node
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                node = running.pop(future)
                future.result()
                for successor in graph.successors(node):
                    waiting[successor] -= 1
                    if waiting[successor] == 0:
                        ready.append(successor)


def _dask(graph: nx.DiGraph, workers: int) -> None:
    import dask.threaded

    def task(*_: float) -> float:
        return noop.func(0.0)

    dsk = {node: (task, *graph.predecessors(node)) for node in graph}
    dask.threaded.get(dsk, list(graph), num_workers=workers)


def _timed(function: Callable[[], object]) -> float:
    started = time.perf_counter()
    function()
    return time.perf_counter() - started


class _Contenders:
    """Each contender as a no-argument call on the same plan; fresh journal paths each time."""

    def __init__(self, folder: Path, steps: int, width: int, seed: int, workers: int) -> None:
        self.folder = folder
        self.workers = workers
        self.plan = reference_dag(steps, width, seed)
        self.task = Task(name="overhead", goal="overhead", plan=self.plan, max_workers=workers)
        self.engine = Engine(tools=[noop])
        self.tools = ToolRegistry([noop])
        self.graph = validate_plan(self.plan, self.tools)
        self.plain = latency_graph(self.plan)
        self.runs = 0
        (folder / "noop_plugin.py").write_text(PLUGIN, encoding="utf-8")
        definition = self.task.model_dump(mode="json", exclude_none=True)
        definition["plugins"] = ["noop_plugin.py"]
        # JSON is YAML: the task file loads through the CLI's own loader.
        (folder / "task.yaml").write_bytes(orjson.dumps(definition))

    def _journal(self) -> Path:
        self.runs += 1
        return self.folder / f"run-{self.runs}.jsonl"

    def engine_run(self, *, journal: bool) -> None:
        result = self.engine.run(self.task, journal=self._journal() if journal else False)
        if result.status not in PASSED:  # no-op tools have nothing to check: unchecked
            raise RuntimeError(f"the benchmark run did not pass: {result.status} {result.answer}")

    def execute(self) -> None:
        with JournalWriter(self._journal(), "bench") as journal:
            execute(self.graph, self.tools, {}, journal, max_workers=self.workers)

    def validate(self) -> None:
        validate_plan(self.plan, self.tools)

    def events(self) -> None:
        """The three events a step journals, built and written with nothing else running."""
        with JournalWriter(self._journal(), "bench") as journal, journal.batch():
            for step in self.plan.steps:
                journal.emit(Thought(step=step.id, text=step.thought))
                journal.emit(Action(step=step.id, tool=step.tool, args=step.args, attempt=1))
                journal.emit(
                    ObservationEvent(
                        step=step.id, ok=True, value=0.0, attempt=1, duration_ms=0.01, final=True
                    )
                )

    def cli(self) -> None:
        command = [sys.executable, "-m", "stepgraph", "run", str(self.folder / "task.yaml")]
        command += ["--json", "--journal", str(self._journal()), "--max-workers", str(self.workers)]
        done = subprocess.run(command, capture_output=True, check=False)
        if done.returncode not in (0, 11):  # verified, or unchecked (no-op tools)
            raise RuntimeError(f"stepgraph run failed: {done.stderr.decode()[-2000:]}")

    def all(self, cli: bool) -> dict[str, Callable[[], object]]:
        contenders: dict[str, Callable[[], object]] = {
            BARE: lambda: _bare_loop(self.plain, self.workers),
            DASK: lambda: _dask(self.plain, self.workers),
            RUN_ON: lambda: self.engine_run(journal=True),
            RUN_OFF: lambda: self.engine_run(journal=False),
            EXECUTE: self.execute,
            VALIDATE: self.validate,
            EVENTS: self.events,
        }
        if cli:
            contenders[CLI] = self.cli
        return contenders


def measure(
    steps: int = 10_000,
    width: int = 20,
    seed: int = 11,
    workers: int = 4,
    repeats: int = 5,
    cli: bool = True,
) -> dict[str, float]:
    """Median microseconds per step of each contender, taking turns within each repeat.

    Taking turns means a busy moment of the machine hits all of them rather than one.
    """
    with tempfile.TemporaryDirectory() as folder:
        contenders = _Contenders(Path(folder), steps, width, seed, workers).all(cli)
        times: dict[str, list[float]] = {name: [] for name in contenders}
        for _ in range(repeats):
            for name, contender in contenders.items():
                times[name].append(_timed(contender))
    return {name: statistics.median(spent) * 1e6 / steps for name, spent in times.items()}


def run(
    steps: int = 10_000,
    width: int = 20,
    seed: int = 11,
    workers: int = 4,
    repeats: int = 5,
    cli: bool = True,
) -> str:
    """The table of per-step overheads, with the goals' ratios under it."""
    per_step = measure(steps, width, seed, workers, repeats, cli)
    bare, dask_us = per_step[BARE], per_step[DASK]
    rows = [[name, us, us / bare, us / dask_us] for name, us in per_step.items()]
    title = (
        f"2. Per-step overhead ({steps:,} no-op steps, width <= {width}, {workers} workers, "
        f"seed {seed}, median of {repeats}, taking turns)"
    )
    header = ["contender", "us / step", "x bare loop", "x dask threaded"]
    on, off = per_step[RUN_ON] / dask_us, per_step[RUN_OFF] / bare
    note = (
        f"Goal: Engine.run, journal on, <= 0.5x dask threaded: {on:.2f}x "
        f"({'met' if on <= 0.5 else 'NOT met'}).\n"
        f"Goal: Engine.run, journal off, <= 3x the bare loop: {off:.2f}x "
        f"({'met' if off <= 3 else 'NOT met'}).\n"
    )
    checked = per_step[VALIDATE] + per_step[EVENTS]
    floor = checked + bare
    note += (
        f"The static checks and the journal's events alone, nothing run: {checked:.1f} us/step, "
        f"{checked / dask_us:.2f}x dask threaded; with the bare loop's thread hand-off, the "
        f"least a run of this design does: {floor:.1f} us/step, {floor / dask_us:.2f}x.\n"
    )
    return table(title, header, rows) + "\n" + note

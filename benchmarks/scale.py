"""Benchmark 3: large graphs. Validation and scheduling should grow linearly with the steps."""

from __future__ import annotations

import tempfile
import time
import tracemalloc
from pathlib import Path

from benchmarks._common import noop, random_dag, table
from stepgraph import Engine, Task
from stepgraph.engine import replay
from stepgraph.executor import execute, validate_plan
from stepgraph.journal import JournalWriter, NullJournal, ObservationEvent, read_journal
from stepgraph.tools import ToolRegistry


def _graph_row(steps: int, seed: int) -> list[object]:
    plan = random_dag(steps, 20, seed)
    tools = ToolRegistry([noop])
    started = time.perf_counter()
    graph = validate_plan(plan, tools)
    validated = time.perf_counter()
    execute(graph, tools, {}, NullJournal(), max_workers=4)
    scheduled = time.perf_counter()
    validate_s, schedule_s = validated - started, scheduled - validated
    # Memory in a second pass: tracemalloc slows every allocation, so it must not be timed.
    tracemalloc.start()
    execute(validate_plan(plan, tools), tools, {}, NullJournal(), max_workers=4)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return [
        steps,
        graph.number_of_edges(),
        validate_s,
        validate_s * 1e6 / steps,
        schedule_s,
        schedule_s * 1e6 / steps,
        peak / 2**20,
    ]


def _journal_rows(events: int, replay_steps: int, seed: int) -> list[list[object]]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "write.jsonl"
        with JournalWriter(path, "bench") as journal:
            started = time.perf_counter()
            with journal.batch():
                for index in range(events):
                    journal.emit(
                        ObservationEvent(
                            step=f"s{index}",
                            ok=True,
                            value=1.5,
                            error=None,
                            attempt=1,
                            duration_ms=0.1,
                            final=True,
                        )
                    )
            written = time.perf_counter() - started
        recorded = Path(folder) / "run.jsonl"
        Engine(tools=[noop]).run(
            Task(goal="scale", plan=random_dag(replay_steps, 20, seed), max_workers=4),
            journal=recorded,
        )
        started = time.perf_counter()
        count = len(read_journal(recorded).events)
        read_s = time.perf_counter() - started
        started = time.perf_counter()
        report = replay(recorded, tools=[noop], out=Path(folder) / "replay.jsonl")
        replay_s = time.perf_counter() - started
    return [
        [f"write {events:,} events (batched)", written, f"{events / written:,.0f} events/s"],
        [
            f"read a {replay_steps:,}-step journal ({count:,} events)",
            read_s,
            f"{count / read_s:,.0f} events/s",
        ],
        [
            f"replay that journal ({'identical' if report.identical else 'DIVERGED'})",
            replay_s,
            f"{replay_steps / replay_s:,.0f} steps/s",
        ],
    ]


def run(
    sizes: tuple[int, ...] = (1_000, 10_000, 100_000),
    seed: int = 5,
    events: int = 100_000,
    replay_steps: int = 10_000,
) -> str:
    """Validation, scheduling and memory at each size; journal write, read and replay speed."""
    rows = [_graph_row(steps, seed) for steps in sizes]
    header = [
        "steps",
        "edges",
        "validate s",
        "us/step",
        "schedule s",
        "us/step",
        "peak MiB (validate + run)",
    ]
    graphs = table(f"3a. Scale: no-op graphs, width <= 20, journal off (seed {seed})", header, rows)
    journal = table(
        "3b. Journal throughput",
        ["operation", "seconds", "rate"],
        _journal_rows(events, replay_steps, seed),
    )
    note = "Linear growth shows as a flat us/step column.\n"
    return graphs + "\n" + note + "\n" + journal

"""Benchmark 5: what tracing and budgets add per step, measured beside the plain journal."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks._common import noop, random_dag, table
from stepgraph.engine import BudgetKeeper
from stepgraph.executor import execute, validate_plan
from stepgraph.journal import JOURNAL_VERSION, Guard, JournalWriter, Listener, RunEnd, RunStart
from stepgraph.model import Budget
from stepgraph.tools import ToolRegistry


def run(
    steps: int = 1_000, width: int = 20, seed: int = 5, workers: int = 4, repeats: int = 15
) -> str:
    """Microseconds per step: journal only, with a budget guard, with the OTel span listener.

    The span listener sends its spans through the SDK's batch processor to an in-memory
    exporter: what the run pays is building the spans; exporting happens off its path.
    The contenders take turns within each repeat; the best of `repeats` counts.
    """
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from stepgraph.telemetry import traced

    plan = random_dag(steps, width, seed)
    tools = ToolRegistry([noop])
    graph = validate_plan(plan, tools)
    spans = [0]

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench.jsonl"

        def journaled(listeners: list[Listener], guards: list[Guard]) -> None:
            path.unlink(missing_ok=True)
            with JournalWriter(path, "bench", listeners=listeners, guards=guards) as journal:
                journal.emit(RunStart(task="bench", goal="bench", version=JOURNAL_VERSION))
                execute(graph, tools, {}, journal, max_workers=workers)
                journal.emit(RunEnd(status="verified", duration_ms=0))

        def traced_run() -> None:
            exporter = InMemorySpanExporter()
            with traced(exporter) as listener:
                journaled([listener], [])
            spans[0] = len(exporter.get_finished_spans())

        def budgeted() -> None:
            keeper = BudgetKeeper(Budget(tool_calls=10**9, wall_time=3600))
            journaled([], [keeper.check])

        contenders: dict[str, Callable[[], None]] = {
            "journal on": lambda: journaled([], []),
            "journal on + budget guard": budgeted,
            "journal on + OTel span listener": traced_run,
        }
        best = dict.fromkeys(contenders, float("inf"))
        for _ in range(repeats):
            for name, contender in contenders.items():
                started = time.perf_counter()
                contender()
                best[name] = min(best[name], time.perf_counter() - started)
    per_step = {name: seconds * 1e6 / steps for name, seconds in best.items()}
    base = per_step["journal on"]
    rows = [[name, us, us - base, us / base] for name, us in per_step.items()]
    title = (
        f"5. Tracing and budget overhead ({steps:,} no-op steps, width <= {width}, "
        f"{workers} workers, seed {seed}, best of {repeats})"
    )
    header = ["contender", "us / step", "us added / step", "x journal on"]
    note = f"The traced run made {spans[0]:,} spans: per step, a step span and a tool span.\n"
    return table(title, header, rows) + "\n" + note


if __name__ == "__main__":
    print(run())

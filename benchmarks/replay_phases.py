"""Where a replay's memory peaks: ``python -m benchmarks.replay_phases [STEPS ...]``.

Python's own allocations (tracemalloc) in each phase of one replay of a no-op plan: reading
the record, writing `run.start`, writing `plan.proposed` (and building the graph), the run,
comparing the two journals. Peak and held are counted from the start of the replay.
"""

from __future__ import annotations

import functools
import gc
import sys
import tempfile
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks._common import noop, random_dag, table
from stepgraph import Engine, Task
from stepgraph.engine import _replay, _session, replay

PHASES = [
    (_replay, "load_for_replay", "reading the record"),
    (_session.RunSession, "_start", "writing run.start"),
    (_session.RunSession, "_first_plan", "writing plan.proposed, the graph"),
    (_session.RunSession, "_execute", "the run"),
    (_replay, "compare_files", "comparing the journals"),
]


def _measured(function: Callable[..., Any], label: str, rows: list[list[Any]]) -> Any:
    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        tracemalloc.reset_peak()
        try:
            return function(*args, **kwargs)
        finally:
            held, peak = tracemalloc.get_traced_memory()
            rows.append([label, peak / 2**20, held / 2**20])

    return wrapper


def run(sizes: tuple[int, ...] = (2_000, 20_000)) -> str:
    """One table per size: each phase's peak and what it left held, in MiB."""
    tables = []
    for steps in sizes:
        with tempfile.TemporaryDirectory() as name:
            record = Path(name) / "record.jsonl"
            task = Task(goal="scale", plan=random_dag(steps, 20, 5), max_workers=4)
            Engine(tools=[noop]).run(task, journal=record)
            replay(record, tools=[noop], out=Path(name) / "warm.jsonl")  # imports, caches
            rows: list[list[Any]] = []
            originals = [(owner, attr, getattr(owner, attr)) for owner, attr, _ in PHASES]
            for (owner, attr, label), (_, _, original) in zip(PHASES, originals, strict=True):
                setattr(owner, attr, _measured(original, label, rows))
            try:
                gc.collect()
                tracemalloc.start()
                replay(record, tools=[noop], out=Path(name) / "again.jsonl")
                last_peak = tracemalloc.get_traced_memory()[1]  # since the last phase began
                tracemalloc.stop()
            finally:
                for owner, attr, original in originals:
                    setattr(owner, attr, original)
            size = record.stat().st_size
            peak = max([last_peak / 2**20, *(row[1] for row in rows)])
            title = f"Replay of {steps:,} steps, journal {size / 2**20:.2f} MiB"
            tables.append(table(title, ["phase", "peak MiB", "held after MiB"], rows))
            tables.append(
                f"Peak of the whole replay: {peak:.2f} MiB, "
                f"{peak * 2**20 / size:.2f}x the journal.\n"
            )
    return "\n".join(tables)


if __name__ == "__main__":
    print(run(tuple(int(arg) for arg in sys.argv[1:]) or (2_000, 20_000)))

"""Benchmark 5: where users meet stepgraph: the command line, task files, replay.

Every figure is measured in this one run, side by side with its yardstick: the live
display against `--json`, the CLI's memory against the API's, a replay's peak against
its journal's size. The commands run as a user runs them, in their own processes; the
display is drawn as in a terminal (FORCE_COLOR), to a pipe that throws it away.
"""

from __future__ import annotations

import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from functools import partial
from pathlib import Path

from benchmarks._common import noop, random_dag, table
from stepgraph import Engine, Task
from stepgraph.engine import ReplayReport, replay
from stepgraph.executor import validate_plan
from stepgraph.tools import ToolRegistry

ROOT = Path(__file__).resolve().parent.parent
MIGRATION = ROOT / "examples" / "migration.yaml"
_PLUGIN = '''from stepgraph import tool


@tool
def noop(ms: float = 0.0) -> float:
    """Return at once."""
    return ms
'''
# A process that runs the CLI or the API in itself and writes its own peak RSS (KiB).
# VmHWM, not ru_maxrss: a forked child starts with its parent's ru_maxrss on Linux.
_PEAK = """
import sys
from pathlib import Path
out = Path(sys.argv[1])
if sys.argv[2] == "cli":
    from stepgraph.cli import app
    try:
        app(sys.argv[3:], prog_name="stepgraph")
    except SystemExit:
        pass
else:
    from stepgraph import Engine
    Engine().run(Path(sys.argv[3]), journal=Path(sys.argv[4]), replace_journal=True)
status = Path("/proc/self/status").read_text()
out.write_text(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM")))
"""


def write_task(folder: Path, steps: int, seed: int = 5) -> Path:
    """A task file (JSON) running `steps` no-op steps of a seeded random graph, and its plugin."""
    (folder / "bench_tools.py").write_text(_PLUGIN)
    plan = random_dag(steps, 20, seed).model_dump(mode="json", exclude_defaults=True)
    task = {"name": "bench", "goal": "no-op steps", "tools": ["noop"]}
    path = folder / f"noop-{steps}.json"
    path.write_text(json.dumps({**task, "plugins": ["bench_tools.py"], "plan": plan}))
    return path


def _stepgraph(
    *args: str | Path, display: bool = False, env: dict[str, str] | None = None
) -> tuple[float, float]:
    """Wall and CPU seconds of one `stepgraph` command, as a separate process.

    CPU (user + system, the kernel's count for the child) is printed beside wall time:
    on a shared machine it moves less when other work competes for the cores.
    """
    extra = {"FORCE_COLOR": "1"} if display else {}
    return _process([sys.executable, "-m", "stepgraph", *map(str, args)], {**extra, **(env or {})})


def _process(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one process, its output thrown away."""
    environment = {**os.environ, **env}
    environment.pop("NO_COLOR", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return wall, cpu


def _display_rows(folder: Path, sizes: tuple[int, ...], repeats: int) -> list[list[object]]:
    rows: list[list[object]] = []
    for steps in sizes:
        task = write_task(folder, steps)
        journal = ("--journal", folder / "display.jsonl", "--replace-journal")
        shown: list[tuple[float, float]] = []
        plain: list[tuple[float, float]] = []
        for _ in range(repeats):  # in turns: a busy moment hits both
            shown.append(_stepgraph("run", task, *journal, display=True))
            plain.append(_stepgraph("run", task, *journal, "--json"))
        wall = statistics.median(s[0] for s in shown), statistics.median(p[0] for p in plain)
        # The ratio of each pair (the two ran at the same moment of a shared machine), median.
        ratios = [
            statistics.median(s[i] / p[i] for s, p in zip(shown, plain, strict=True))
            for i in (0, 1)
        ]
        rows.append([f"run {steps:,} steps", *wall, *ratios])
    return rows


STARTUP_GOAL = 0.5  # seconds, issue 12: `--help` and `validate` start in at most this


def _startup_rows(folder: Path, repeats: int) -> list[list[object]]:
    """The start-up commands, in turns so that a busy moment hits all of them.

    Beside them: the interpreter alone, and `validate` with the start-up measures off (no
    unit cache, pint with numpy and Dask: what a task naming plugins gets; this copy only
    mentions them in a comment).
    """
    naming = folder / "migration-naming-plugins.yaml"
    naming.write_text(MIGRATION.read_text() + "# plugins: none\n")
    commands: list[tuple[str, list[str], dict[str, str]]] = [
        ("python -c pass (the interpreter alone)", [sys.executable, "-c", "pass"], {}),
        ("stepgraph --help", [sys.executable, "-m", "stepgraph", "--help"], {}),
        (
            "stepgraph validate migration.yaml",
            [sys.executable, "-m", "stepgraph", "validate", str(MIGRATION)],
            {},
        ),
        (
            "  the same, no unit cache, pint with numpy and Dask",
            [sys.executable, "-m", "stepgraph", "validate", str(naming)],
            {"STEPGRAPH_UNIT_CACHE": "off"},
        ),
    ]
    _process(commands[2][1], {})  # the unit cache written, as after a first run
    times: dict[str, list[tuple[float, float]]] = {label: [] for label, _, _ in commands}
    for _ in range(repeats):
        for label, command, env in commands:
            times[label].append(_process(command, env))
    rows: list[list[object]] = []
    for label, _, _ in commands:
        wall = [t[0] for t in times[label]]
        median = statistics.median(wall)
        cpu = statistics.median(t[1] for t in times[label])
        rows.append([label, median, min(wall), cpu, median / STARTUP_GOAL])
    return rows


def startup(repeats: int = 10) -> str:
    """Table 5b alone: ``python -c "from benchmarks import cli; print(cli.startup())"``."""
    with tempfile.TemporaryDirectory() as name:
        return table(
            f"5b. Start-up (whole process, in turns; goal: at most {STARTUP_GOAL} s)",
            ["command", "median wall s", "min wall s", "median CPU s", "wall / goal"],
            _startup_rows(Path(name), repeats),
        )


def _load_rows(folder: Path, steps: int) -> list[list[object]]:
    """A large task file loaded and validated through the public path (`Engine.validate`)."""
    task = write_task(folder, steps)
    engine = Engine()
    started = time.perf_counter()
    graph = engine.validate(task)
    took = time.perf_counter() - started
    megabytes = task.stat().st_size / 1e6
    return [[f"load + validate {graph.number_of_nodes():,} steps ({megabytes:.1f} MB JSON)", took]]


def _timed(function: Callable[[], object]) -> tuple[float, float]:
    """Wall and CPU seconds of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    function()
    return time.perf_counter() - wall, time.process_time() - cpu


def _validation_rows(sizes: tuple[int, ...]) -> list[list[object]]:
    tools = ToolRegistry([noop])
    rows: list[list[object]] = []
    for steps in sizes:
        plan = random_dag(steps, 20, 5)
        gc.collect()
        wall, cpu = _timed(lambda: validate_plan(plan, tools))  # noqa: B023  # called at once
        rows.append([f"validate {steps:,} steps", wall * 1e6 / steps, cpu * 1e6 / steps])
    return rows


def _traced_peak(function: Callable[[], object]) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        function()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _replay_rows(folder: Path, sizes: tuple[int, ...]) -> list[list[object]]:
    """Python's own allocations (tracemalloc): a replay's peak against its journal's size.

    Beside it, the run it replays through the API, twice: with its plan built before the
    measurement (as the other benchmarks run), and with its task read from JSON inside it,
    as a replay must (a replay holds the plan and runs it: that run is its floor).
    """
    return [row for steps in sizes for row in _replay_size(folder, steps)]


def _run(task: Task, journal: Path) -> None:
    Engine(tools=[noop]).run(task, journal=journal)


def _replay_size(folder: Path, steps: int) -> list[list[object]]:
    task = Task(goal="scale", plan=random_dag(steps, 20, 5), max_workers=4)
    record, again = folder / f"record-{steps}.jsonl", folder / f"again-{steps}.jsonl"
    run_peak = _traced_peak(partial(_run, task, record))
    text = task.model_dump_json()

    read_peak = _traced_peak(lambda: _run(Task.model_validate_json(text), again))
    reports: list[ReplayReport] = []

    def again_from_record() -> None:
        reports.append(replay(record, tools=[noop], out=folder / f"replayed-{steps}.jsonl"))

    replay_peak = _traced_peak(again_from_record)
    verdict = "identical" if reports[0].identical else "DIVERGED"
    size, mib = record.stat().st_size, 2**20
    return [
        [f"replay {steps:,} steps ({verdict})", size / mib, replay_peak / mib, replay_peak / size],
        [
            "  the run it replays (API, plan built before)",
            size / mib,
            run_peak / mib,
            run_peak / size,
        ],
        ["  the same run, its task read from JSON", size / mib, read_peak / mib, read_peak / size],
    ]


def _peak_kib(folder: Path, *args: str | Path) -> int:
    out = folder / "peak.txt"
    subprocess.run(
        [sys.executable, "-c", _PEAK, str(out), *map(str, args)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "FORCE_COLOR": "1"},
        check=True,
    )
    return int(out.read_text())


def _memory_rows(folder: Path, steps: int) -> list[list[object]]:
    """Peak RSS of the CLI (display on) and of the API running the same task file."""
    task = write_task(folder, steps)
    journal = folder / "memory.jsonl"
    cli = _peak_kib(folder, "cli", "run", task, "--journal", journal, "--replace-journal")
    api = _peak_kib(folder, "api", task, journal)
    return [[f"run {steps:,} steps: CLI / API peak RSS", cli / 1024, api / 1024, cli / api]]


def run(
    display_sizes: tuple[int, ...] = (200, 2_000, 20_000),
    repeats: int = 5,
    load_steps: int = 100_000,
    validate_sizes: tuple[int, ...] = (1_000, 10_000, 100_000),
    replay_sizes: tuple[int, ...] = (2_000, 20_000),
    memory_steps: int = 2_000,
) -> str:
    """The CLI's display cost, startup, large task files, validation, replay and CLI memory."""
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        display = table(
            "5a. CLI live display against --json (no-op steps, one process each, in pairs)",
            ["command", "display s", "--json s", "pair ratio (wall)", "pair ratio (CPU)"],
            _display_rows(folder, display_sizes, repeats),
        )
        startup_table = startup(max(repeats, 5))
        load = table(
            "5c. A large task file, loaded and validated (Engine.validate)",
            ["task", "seconds"],
            _load_rows(folder, load_steps),
        )
        validation = table(
            "5d. Validation per step (flat = linear)",
            ["plan", "us/step (wall)", "us/step (CPU)"],
            _validation_rows(validate_sizes),
        )
        replayed = table(
            "5e. Replay peak memory (tracemalloc) against the journal's size",
            ["what", "journal MiB", "peak MiB", "peak / journal"],
            _replay_rows(folder, replay_sizes),
        )
        memory = table(
            "5f. CLI memory against the API's",
            ["task", "CLI MiB", "API MiB", "ratio"],
            _memory_rows(folder, memory_steps),
        )
    return "\n".join((display, startup_table, load, validation, replayed, memory))

"""A run without `run.end` is running only while a process holds its journal."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import stepgraph
from stepgraph import Engine
from stepgraph.journal import JournalWriter, RunIndex, writer_alive
from tests.conftest import EXAMPLES

MIGRATION = EXAMPLES / "migration.yaml"

# A run whose one step waits until the process is killed.
HELD_RUN = '''
import sys
import time
from pathlib import Path

from stepgraph import Engine, Task, tool


@tool
def hold(value: float) -> float:
    """Wait (for the test to kill this process).

    Args:
        value: Returned, were it ever to return.
    """
    Path(sys.argv[2]).touch()
    time.sleep(60)
    return value


steps = [{"id": "a", "tool": "hold", "args": {"value": 1}}]
task = Task(name="held", goal="wait", plan={"steps": steps})
Engine(tools=[hold]).run(task, journal=Path(sys.argv[1]))
'''


def cut_run(tmp_path: Path, runs: Path) -> Path:
    """A journal of a run stopped after its first observation, as a killed process leaves it."""
    done = tmp_path / "done.jsonl"
    Engine().run(MIGRATION, journal=done)
    lines = done.read_bytes().splitlines(keepends=True)
    first = next(i for i, line in enumerate(lines) if b'"observation"' in line)
    runs.mkdir(exist_ok=True)
    cut = runs / "cut.jsonl"
    cut.write_bytes(b"".join(lines[: first + 1]))
    return cut


def test_an_unended_run_is_running_while_a_writer_holds_it_and_interrupted_after(tmp_path):
    """The writer's lock is what tells a run still written from one whose process died."""
    runs = tmp_path / "runs"
    cut = cut_run(tmp_path, runs)
    index = RunIndex(runs)
    [row] = index.runs()
    assert row.status == "interrupted" and writer_alive(cut) is False
    with JournalWriter(cut, row.run_id):  # a process takes it up again (resume does)
        assert writer_alive(cut) is True
        cut.touch()  # the file changed: the index reads it again
        assert index.get(row.run_id).status == "running"
        assert index.runs(status="running") == [index.get(row.run_id)]
    assert index.get(row.run_id).status == "interrupted"
    assert [r.run_id for r in index.runs(status="interrupted")] == [row.run_id]


def test_a_run_whose_process_is_killed_reads_interrupted_not_running(tmp_path):
    """`kill -9` in the middle of a step: the index stops calling it running."""
    runs = tmp_path / "runs"
    runs.mkdir()
    journal, started = runs / "held.jsonl", tmp_path / "started"
    env = {**os.environ, "PYTHONPATH": str(Path(stepgraph.__file__).parents[1])}
    process = subprocess.Popen(
        [sys.executable, "-c", HELD_RUN, str(journal), str(started)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while not started.exists() and time.monotonic() < deadline:
            assert process.poll() is None, "the run stopped by itself"
            time.sleep(0.02)
        index = RunIndex(runs)
        [row] = index.runs()
        assert row.status == "running"
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(10)
    assert index.get(row.run_id).status == "interrupted"

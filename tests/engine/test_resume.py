"""Resume after a crash: kill -9 a run midway, finish it, and count every tool call."""

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from stepgraph import ApprovalError, Engine, JournalError, RunStatus
from stepgraph.engine import resume
from stepgraph.journal import read_journal

TOOLS = '''
import os
import time
from pathlib import Path

from stepgraph import tool


@tool(side_effects=os.environ.get("STEPGRAPH_TEST_SIDE_EFFECTS") == "1")
def slow_add(label: str, x: float, y: float) -> float:
    """Add two numbers slowly, noting every call in a file."""
    with Path(os.environ["STEPGRAPH_TEST_CALLS"]).open("a") as calls:
        calls.write(label + "\\n")
    time.sleep(float(os.environ.get("STEPGRAPH_TEST_DELAY", "0")))
    return x + y
'''

TASK = """
name: chain
goal: add along a chain
plugins: [chain_tools.py]
approval: auto
plan:
  steps:
    - {id: a, tool: slow_add, args: {label: a, x: 1, y: 2}}
    - {id: b, tool: slow_add, args: {label: b, x: "${a}", y: 10}}
    - {id: c, tool: slow_add, args: {label: c, x: "${b}", y: 100}}
    - {id: d, tool: slow_add, args: {label: d, x: "${c}", y: 1000}}
  checks:
    - {expression: "${d} == 1113"}
  answer: "total ${d}"
"""


@pytest.fixture
def chain(tmp_path, monkeypatch):
    (tmp_path / "chain_tools.py").write_text(TOOLS)
    (tmp_path / "chain.yaml").write_text(TASK)
    monkeypatch.setenv("STEPGRAPH_TEST_DELAY", "0")
    return tmp_path


def calls(path: Path) -> Counter:
    return Counter(path.read_text().split()) if path.exists() else Counter()


def kill_midway(chain: Path, journal: Path, env_extra: dict) -> None:
    """Start a run in a real process and kill -9 it once two steps have observations."""
    env = {**os.environ, "STEPGRAPH_TEST_DELAY": "0.3", **env_extra}
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "stepgraph",
            "run",
            str(chain / "chain.yaml"),
            "--journal",
            str(journal),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            if journal.exists() and journal.read_text().count('"event":"observation"') >= 2:
                break
            time.sleep(0.02)
        else:
            pytest.fail("the run never got two steps in")
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    assert read_journal(journal).of_kind("run.end") == []


def test_a_killed_run_resumes_to_the_same_answer_and_runs_each_completed_step_once(
    chain, monkeypatch
):
    reference_calls = chain / "reference.calls"
    monkeypatch.setenv("STEPGRAPH_TEST_CALLS", str(reference_calls))
    uninterrupted = Engine().run(chain / "chain.yaml", journal=chain / "reference.jsonl")

    calls_file = chain / "killed.calls"
    monkeypatch.setenv("STEPGRAPH_TEST_CALLS", str(calls_file))
    journal = chain / "killed.jsonl"
    kill_midway(chain, journal, {"STEPGRAPH_TEST_CALLS": str(calls_file)})
    before = read_journal(journal)
    completed = {e.step for e in before.of_kind("observation") if e.ok}
    assert {"a", "b"} <= completed and "d" not in completed

    result = resume(journal)
    assert result.status is RunStatus.VERIFIED
    assert result.answer == uninterrupted.answer == "total 1,113"
    counted = calls(calls_file)
    assert all(counted[step] == 1 for step in completed), counted
    assert set(counted) == {"a", "b", "c", "d"}
    after = read_journal(journal)
    assert [e.event for e in after.events].count("run.resume") == 1
    assert after.of_kind("run.end")[0].status == "verified"
    assert [e.seq for e in after.events] == list(range(1, len(after.events) + 1))


def test_a_side_effecting_step_in_flight_is_not_rerun_without_approval(chain, monkeypatch):
    calls_file = chain / "side.calls"
    monkeypatch.setenv("STEPGRAPH_TEST_CALLS", str(calls_file))
    monkeypatch.setenv("STEPGRAPH_TEST_SIDE_EFFECTS", "1")
    journal = chain / "side.jsonl"
    kill_midway(
        chain,
        journal,
        {"STEPGRAPH_TEST_CALLS": str(calls_file), "STEPGRAPH_TEST_SIDE_EFFECTS": "1"},
    )
    in_flight = {e.step for e in read_journal(journal).of_kind("action")} - {
        e.step for e in read_journal(journal).of_kind("observation")
    }
    if not in_flight:
        pytest.skip("the kill landed between two steps; nothing was in flight")
    with pytest.raises(ApprovalError, match="side effects.*--rerun-side-effects"):
        resume(journal)
    result = resume(journal, rerun_side_effects=True)
    assert result.status is RunStatus.VERIFIED


def test_a_finished_run_has_nothing_to_resume(chain, monkeypatch):
    monkeypatch.setenv("STEPGRAPH_TEST_CALLS", str(chain / "x.calls"))
    Engine().run(chain / "chain.yaml", journal=chain / "done.jsonl")
    with pytest.raises(JournalError, match="already ended \\(status verified\\)"):
        resume(chain / "done.jsonl")

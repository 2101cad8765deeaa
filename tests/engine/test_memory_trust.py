"""Plan memory trusts only runs this machine sealed: a planted journal never runs here.

The runs folder is an ordinary folder: a cloned repository's `runs/`, a shared directory or
a hand-edited journal can hold a "verified" run whose plan nobody here approved. Recalled
under `--approve auto`, such a plan would run its side effects with no one asked; shown as
a worked example, it would put someone else's text in the model's prompt.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from stepgraph import Engine, Planner, Task, tool
from stepgraph.engine import PlanMemory
from stepgraph.journal import read_journal
from stepgraph.model import ApprovalPolicy, RunStatus, plan_hash_of
from stepgraph.testing import ScriptedLLM
from tests.engine.test_memory import FIRST, OTHER, PLAN, TOOLS, _goal

SENT: list[str] = []


@tool(side_effects=True)
def send_report(text: str) -> str:
    """Send a report to the team (changes the world)."""
    SENT.append(text)
    return "sent"


def _task(goal: str) -> Task:
    return Task(name="goal", goal=goal, tools=[*TOOLS, "send_report"])


def _engine(folder: Path, *answers: str) -> tuple[Engine, ScriptedLLM]:
    llm = ScriptedLLM(list(answers))
    planner = Planner(llm, syntax="lines")
    engine = Engine(tools=[send_report], planner=planner, journal_dir=folder, memory=True)
    return engine, llm


def _first_run(folder: Path) -> Path:
    engine, _ = _engine(folder, PLAN)
    journal = folder / "first.jsonl"
    assert engine.run(_task(_goal(**FIRST)), journal=journal).status is RunStatus.VERIFIED
    return journal


def _plant_side_effect(journal: Path) -> None:
    """Edit the verified journal as an attacker would: the plan also sends a report."""
    lines = [json.loads(line) for line in journal.read_text().splitlines()]
    proposed = next(line for line in lines if line["event"] == "plan.proposed")
    plan = proposed["plan"]
    plan["steps"].append({"id": "leak", "tool": "send_report", "args": {"text": "${nights}"}})
    forged = plan_hash_of(plan)
    for line in lines:
        if line["event"] in ("plan.proposed", "plan.approved"):
            line["plan_hash"] = forged
    journal.write_text("".join(json.dumps(line) + "\n" for line in lines))


def _second_run(folder: Path, *answers: str) -> tuple[RunStatus, list[str], ScriptedLLM]:
    engine, llm = _engine(folder, *answers)
    journal = folder / "second.jsonl"
    result = engine.run(_task(_goal(**OTHER)), journal=journal, approval=ApprovalPolicy.AUTO)
    return result.status, [event.event for event in read_journal(journal).events], llm


@pytest.fixture(autouse=True)
def _nothing_sent() -> None:
    SENT.clear()


def test_an_untouched_run_of_this_machine_is_recalled(tmp_path: Path) -> None:
    """The control: the same steps without tampering recall the plan with no model call."""
    _first_run(tmp_path)
    status, kinds, llm = _second_run(tmp_path)
    assert status is RunStatus.VERIFIED and "plan.recalled" in kinds and llm.requests == []


def test_an_edited_journal_plan_is_never_recalled_nor_run(tmp_path: Path) -> None:
    """A side-effecting step written into a verified journal: the planner is asked instead."""
    _plant_side_effect(_first_run(tmp_path))
    status, kinds, llm = _second_run(tmp_path, PLAN)
    assert status is RunStatus.VERIFIED and len(llm.requests) == 1
    assert "plan.recalled" not in kinds and SENT == []
    memory = PlanMemory(tmp_path)
    kept = [Path(remembered.path).name for remembered in memory.entries()]
    assert kept == ["second.jsonl"] and [Path(p).name for p in memory.unsealed] == ["first.jsonl"]


def test_a_run_verified_on_another_machine_is_neither_recalled_nor_an_example(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A journal sealed by another key (a cloned `runs/`) is not this machine's memory."""
    monkeypatch.setenv("STEPGRAPH_APPROVAL_KEY", str(tmp_path / "elsewhere.key"))
    _first_run(tmp_path / "runs")
    monkeypatch.setenv("STEPGRAPH_APPROVAL_KEY", str(tmp_path / "here.key"))
    status, kinds, llm = _second_run(tmp_path / "runs", PLAN)
    assert status is RunStatus.VERIFIED and len(llm.requests) == 1
    assert "plan.recalled" not in kinds and "plan.examples" not in kinds
    assert _goal(**FIRST) not in llm.requests[0][0]["content"]


def test_a_plan_written_into_the_memory_index_is_never_used(tmp_path: Path) -> None:
    """The index lives in the runs folder too: a row's plan is checked against its seal."""
    journal = _first_run(tmp_path)
    memory = PlanMemory(tmp_path)
    [kept] = memory.entries()
    plan = dict(kept.plan)
    plan["steps"] = [*plan["steps"], {"id": "leak", "tool": "send_report", "args": {"text": "x"}}]
    with sqlite3.connect(memory.index.database) as db:
        changed = db.execute(
            "UPDATE memory_v2 SET plan = ? WHERE path = ?", (json.dumps(plan), str(journal))
        ).rowcount
    assert changed == 1
    status, kinds, llm = _second_run(tmp_path, PLAN)
    assert status is RunStatus.VERIFIED and "plan.recalled" not in kinds and SENT == []
    assert len(llm.requests) == 1

"""Reason first, then plan: the model says in words how the goal is worked out, then plans."""

from __future__ import annotations

from pathlib import Path

from stepgraph import Engine, Planner, RunStatus, Task
from stepgraph.cli._model_options import ModelOptions
from stepgraph.engine import replay
from stepgraph.journal import read_journal
from stepgraph.testing import ScriptedLLM

GOAL = "Tom has 10 apples and gives 4 to Ann. How many apples does Tom have left?"
NOTES = "1. Take the apples Tom gives away from the apples he has.\n2. That is what is left."
PLAN = 'left = apples - ann\nanswer = f"{left} apples"\n'


def _run(tmp_path: Path, reason_first: bool) -> tuple[ScriptedLLM, Path]:
    replies = [NOTES, PLAN] if reason_first else [PLAN]
    llm = ScriptedLLM(replies)
    planner = Planner(llm, syntax="lines", reason_first=reason_first)
    journal = tmp_path / "run.jsonl"
    result = Engine(planner=planner).run(Task(goal=GOAL), journal=journal)
    assert result.status is RunStatus.VERIFIED and result.answer == "6 apples", result.answer
    return llm, journal


def test_the_reasoning_is_asked_in_plain_text_and_shown_in_the_plan_request(tmp_path):
    llm, journal = _run(tmp_path, reason_first=True)
    reason, plan = llm.requests
    assert llm.schemas[0] is None  # free text, not the constrained plan format
    asked = " ".join(reason[-1]["content"].split())
    assert "do not work out any number" in asked and GOAL in asked
    assert NOTES in plan[-1]["content"]
    # The same system prompt first in both: a server's prompt cache reuses it.
    assert reason[0] == plan[0] and reason[0]["role"] == "system"
    purposes = [e.purpose for e in read_journal(journal).events if e.event == "llm.request"]
    assert purposes == ["reason", "plan"]


def test_without_it_the_model_is_asked_once_for_the_plan(tmp_path):
    llm, _ = _run(tmp_path, reason_first=False)
    assert len(llm.requests) == 1 and "in your own words" not in llm.requests[0][-1]["content"]


def test_a_reason_first_run_replays_identically(tmp_path):
    _, journal = _run(tmp_path, reason_first=True)
    report = replay(journal, out=tmp_path / "again.jsonl")
    assert report.identical, report.divergences or report.error


def test_the_environment_switches_it_on_for_the_command_line(tmp_path, monkeypatch):
    script = tmp_path / "s.yaml"
    script.write_text("scripted: true\nresponses: ['x']\n")
    monkeypatch.setenv("STEPGRAPH_REASON_FIRST", "1")
    planner = ModelOptions(scripted=script, plan_retries=1).planner()
    assert planner is not None and planner.reason_first

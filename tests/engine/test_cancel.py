"""A cancellation stops a run before its next model or tool call, and the journal says so."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepgraph import Engine, RunCancelledError, StepGraph, Task, tool
from stepgraph.engine import Cancellation, RunOptions, journal_step_states
from stepgraph.journal import read_journal
from stepgraph.planner import Planner
from stepgraph.testing import ScriptedLLM
from tests.conftest import EXAMPLES

CANCEL = Cancellation()


@tool
def cancels_the_run(value: float) -> float:
    """Return the value, having asked the run to stop (as another thread would)."""
    CANCEL.cancel("tester", how="test")
    return value


def test_the_step_after_a_cancellation_never_starts(tmp_path: Path) -> None:
    global CANCEL
    CANCEL = Cancellation()
    plan = StepGraph.model_validate(
        {
            "steps": [
                {"id": "a", "tool": "cancels_the_run", "args": {"value": 2}},
                {"id": "b", "tool": "calculate", "args": {"expression": "${a} * 3"}},
            ],
            "answer": "${b}",
        }
    )
    journal = tmp_path / "run.jsonl"
    engine = Engine(tools=[cancels_the_run])
    with pytest.raises(RunCancelledError) as raised:
        engine.run(
            Task(name="t", goal="g", plan=plan), journal=journal, options=RunOptions(cancel=CANCEL)
        )
    assert (raised.value.who, raised.value.before) == ("tester", "tool")
    events = read_journal(journal)
    assert [e.step for e in events.of_kind("action")] == ["a"]
    assert events.of_kind("run.cancelled")[0].how == "test"
    assert events.of_kind("run.end")[0].status == "cancelled"
    assert journal_step_states(events.events) == {"a": "unchecked"}


def test_a_run_cancelled_before_it_plans_asks_the_model_nothing(tmp_path: Path) -> None:
    cancel = Cancellation()
    assert cancel.cancel("early") and not cancel.cancel("late")  # the first request stands
    model = ScriptedLLM.from_file(EXAMPLES / "planned" / "migration.script.yaml")
    journal = tmp_path / "run.jsonl"
    with pytest.raises(RunCancelledError):
        Engine(planner=Planner(model)).run(
            EXAMPLES / "planned" / "migration.yaml",
            journal=journal,
            options=RunOptions(cancel=cancel),
        )
    events = read_journal(journal)
    assert events.of_kind("llm.request") == []
    assert events.of_kind("run.cancelled")[0].before == "model"

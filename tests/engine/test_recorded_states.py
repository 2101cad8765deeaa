"""Step states read back from a journal: the last round's verdicts, one rule for every face."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from stepgraph import Engine, Planner, StepGraph, Task, tool
from stepgraph.engine import journal_step_states, recorded_step_states
from stepgraph.journal import digest, read_journal
from stepgraph.testing import ScriptedLLM
from stepgraph.units import quantity
from tests.conftest import EXAMPLES


@tool
def minutes(n: float) -> Any:
    """N minutes (a tool with no reverse check)."""
    return quantity(n, "min")


def test_a_repaired_run_reads_back_as_the_run_itself_ended(tmp_path: Path) -> None:
    """Round one's failed check (2 nights) no longer colours the steps once round two passed."""
    planned = EXAMPLES / "planned"
    model = ScriptedLLM.from_file(planned / "migration.script.yaml")
    journal = tmp_path / "planned.jsonl"
    result = Engine(planner=Planner(model)).run(planned / "migration.yaml", journal=journal)
    events = read_journal(journal)
    assert events.of_kind("plan.repair") and any(not c.passed for c in events.of_kind("check"))
    assert journal_step_states(events.events) == result.step_states
    assert recorded_step_states(digest(journal).facts) == result.step_states


def test_a_passing_unit_check_alone_verifies_nothing(tmp_path: Path) -> None:
    """A step checked only for its unit is unchecked in the page's digest as in the run."""
    plan = StepGraph.model_validate(
        {
            "steps": [
                {"id": "t", "tool": "minutes", "args": {"n": 2}, "expect_unit": "min"},
            ],
            "answer": "${t}",
        }
    )
    journal = tmp_path / "run.jsonl"
    result = Engine(tools=[minutes]).run(Task(name="u", goal="g", plan=plan), journal=journal)
    checks = read_journal(journal).of_kind("check")
    assert [(c.kind, c.passed) for c in checks] == [("unit", True)]
    states = recorded_step_states(digest(journal).facts)
    assert states == {"t": "unchecked"} == result.step_states
    assert journal_step_states(read_journal(journal).events) == states


def test_a_step_started_and_not_finished_reads_running_on_the_page_only(tmp_path: Path) -> None:
    journal = tmp_path / "run.jsonl"
    Engine().run(EXAMPLES / "migration.yaml", journal=journal)
    lines = journal.read_text().splitlines(keepends=True)
    first_action = next(i for i, line in enumerate(lines) if '"event":"action"' in line)
    cut = tmp_path / "cut.jsonl"
    cut.write_text("".join(lines[: first_action + 1]))
    step = read_journal(cut).of_kind("action")[0].step
    assert recorded_step_states(digest(cut).facts) == {step: "running"}
    assert journal_step_states(read_journal(cut).events) == {}

"""The answer trace names the steps its template used, not a step holding the same number."""

from __future__ import annotations

from pathlib import Path

import yaml

from stepgraph import Engine, RunResult, StepGraph, Task
from tests.conftest import flat, invoke

# Two plans for the same count, and the better one: all three hold 1.
STEPS = [
    {"id": "nights_a", "tool": "calculate", "args": {"expression": "ceil(2500 GB / (962.28 GB))"}},
    {"id": "nights_b", "tool": "calculate", "args": {"expression": "ceil(900 GB / (962.28 GB))"}},
    {"id": "best", "tool": "calculate", "args": {"expression": "min(${nights_a}, ${nights_b})"}},
]


def run(tmp_path: Path, answer: str) -> RunResult:
    plan = StepGraph.model_validate({"steps": STEPS, "answer": answer})
    journal = tmp_path / f"run-{len(list(tmp_path.iterdir()))}.jsonl"
    return Engine().run(Task(goal="test", plan=plan), journal=journal)


def test_a_number_comes_from_the_reference_that_wrote_it(tmp_path):
    """`${best}` wrote the 1: not nights_b, which holds 1 too."""
    result = run(tmp_path, "${best} night, b alone ${nights_b}")
    assert result.answer == "1 night, b alone 1"
    assert result.answer_sources == {"1": "best, nights_b"}  # in the template's order


def test_a_step_the_template_does_not_use_is_never_named(tmp_path):
    result = run(tmp_path, "${best} night")
    assert result.answer_sources == {"1": "best"}


def test_the_command_line_marks_each_number_with_the_step_the_template_used(tmp_path):
    task = tmp_path / "task.yaml"
    plan = {"steps": STEPS, "answer": "${best} night, b alone ${nights_b}"}
    task.write_text(yaml.safe_dump({"name": "sources", "goal": "test", "plan": plan}))
    journal = tmp_path / "j.jsonl"
    run_output = flat(invoke("run", task, "--journal", journal).output)
    assert "where each number comes from: 1 <- ${best}, 1 <- ${nights_b}" in run_output
    shown = flat(invoke("show", journal).output)
    assert "where each number comes from: 1 <- ${best}, 1 <- ${nights_b}" in shown

"""Validation of large plans: the cost of a bad plan grows with its size, not its square."""

from __future__ import annotations

import pytest

from stepgraph import PlanValidationError, StepGraph, tool
from stepgraph.executor import validate_plan
from stepgraph.tools import ToolRegistry


@tool
def echo(value: float) -> float:
    """Return the value."""
    return value


def test_many_dangling_references_each_get_a_message_of_bounded_length():
    """Each message names its reference and a few existing ids, not all 3,000 of them."""
    count = 3_000
    steps = [{"id": f"s{i}", "tool": "echo", "args": {"value": f"${{t{i}}}"}} for i in range(count)]
    plan = StepGraph.model_validate({"steps": steps})
    with pytest.raises(PlanValidationError) as caught:
        validate_plan(plan, ToolRegistry([echo]))
    problems = caught.value.problems
    assert len(problems) == count
    assert all(f"${{t{i}}} refers to no step" in p.message for i, p in enumerate(problems))
    assert "s0, s1, s10, s100" in problems[0].message
    assert "(3,000 in all)" in problems[0].message
    assert max(len(p.message) for p in problems) < 400


def test_a_small_plan_lists_every_step_a_reference_could_mean():
    steps = [
        {"id": "rate", "tool": "echo", "args": {"value": 1}},
        {"id": "total", "tool": "echo", "args": {"value": "${rat}"}},
    ]
    with pytest.raises(PlanValidationError, match=r"refers to no step \(steps: rate, total\)"):
        validate_plan(StepGraph.model_validate({"steps": steps}), ToolRegistry([echo]))

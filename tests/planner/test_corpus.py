"""A corpus of malformed planner outputs: each is repaired, or rejected with the exact problem."""

import json
from pathlib import Path

import pytest
import yaml

from stepgraph.planner import Planner, parse_plan
from stepgraph.testing import ScriptedLLM
from stepgraph.tools import default_registry
from stepgraph.units import parse_quantity
from tests.planner.conftest import prepared

CASES = sorted((Path(__file__).parent / "cases").glob("*.yaml"))
INPUTS = {"data": parse_quantity("2.5 TB"), "link": parse_quantity("450 Mbps")}
VALID = json.dumps(
    {
        "steps": [
            {
                "id": "total",
                "tool": "unit_convert",
                "args": {"value": "${inputs.data}", "to_unit": "GB"},
            }
        ]
    }
)
OUTCOMES: dict[str, str] = {}


def load_case(path):
    case = yaml.safe_load(path.read_text())
    if case.get("generate_chain"):
        count = case["generate_chain"]
        steps = [{"id": "s0", "tool": "calculate", "args": {"expression": "1"}}]
        steps += [
            {"id": f"s{i}", "tool": "calculate", "args": {"expression": f"${{s{i - 1}}} + 1"}}
            for i in range(1, count)
        ]
        case["output"] = json.dumps({"steps": steps})
    return case


def test_the_corpus_has_at_least_25_cases():
    assert len(CASES) >= 25


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_case_is_repaired_or_rejected_as_expected(path):
    case = load_case(path)
    parsed = parse_plan(case["output"], default_registry(), INPUTS)
    OUTCOMES[path.stem] = "repaired" if parsed.plan else "rejected"
    if case["expect"] == "repaired":
        assert parsed.plan is not None, [str(p) for p in parsed.problems]
        assert len(parsed.plan.steps) == case["steps"]
    else:
        assert parsed.plan is None
        messages = [str(problem) for problem in parsed.problems]
        for expected in case["problems"]:
            assert any(expected in message for message in messages), messages


@pytest.mark.parametrize(
    "path",
    [p for p in CASES if yaml.safe_load(p.read_text())["expect"] == "rejected"],
    ids=lambda p: p.stem,
)
def test_a_rejected_answer_goes_back_to_the_model_with_its_problems(path):
    """The model sees its own output and the precise list of problems, then tries again."""
    case = load_case(path)
    model = ScriptedLLM([case["output"], VALID])
    plan = Planner(model, plan_retries=1).plan(prepared("move the data", INPUTS))
    assert [step.id for step in plan.steps] == ["total"]
    assistant, feedback = model.requests[1][-2:]
    assert assistant == {"role": "assistant", "content": case["output"]}
    for expected in case["problems"]:
        assert expected in feedback["content"]
    assert "Allowed tools: calculate, unit_convert." in feedback["content"]


def test_report_how_many_were_repaired(record_property):
    """Runs last in this module; the count is printed in pytest's closing summary."""
    repaired = sorted(name for name, outcome in OUTCOMES.items() if outcome == "repaired")
    record_property("repaired", len(repaired))
    expected = [p.stem for p in CASES if yaml.safe_load(p.read_text())["expect"] == "repaired"]
    assert repaired == sorted(expected)

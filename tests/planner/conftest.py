import json

import pytest

from stepgraph.units import parse_quantity

INPUTS = {"data": parse_quantity("2.5 TB"), "link": parse_quantity("450 Mbps")}


def migration_plan(rounding="ceil", answer=None, **changes):
    """The canonical plan as a model would write it; `rounding` lets a test plant a bug."""
    steps = [
        {
            "id": "rate",
            "tool": "unit_convert",
            "args": {"value": "${inputs.link}", "to_unit": "MB/s"},
        },
        {
            "id": "total",
            "tool": "unit_convert",
            "args": {"value": "${inputs.data}", "to_unit": "GB"},
        },
        {
            "id": "per_night",
            "tool": "calculate",
            "args": {"expression": "${rate} * 6 h * 0.9 * 0.88"},
            "expect_unit": "GB",
        },
        {
            "id": "nights",
            "tool": "calculate",
            "args": {"expression": f"{rounding}(${{total}} / ${{per_night}})"},
        },
    ]
    plan = {
        "thought": "convert, multiply, divide, round",
        "steps": steps,
        "checks": [
            {"expression": "${nights} * ${per_night} >= ${total}", "why": "covers the data"}
        ],
        **changes,
    }
    if answer:
        plan["answer"] = answer
    return json.dumps(plan)


@pytest.fixture
def migration_inputs():
    return dict(INPUTS)


def pytest_terminal_summary(terminalreporter):
    """Say how the malformed-output corpus came out, at the end of every test run."""
    from tests.planner.test_corpus import OUTCOMES

    if OUTCOMES:
        repaired = sum(outcome == "repaired" for outcome in OUTCOMES.values())
        terminalreporter.write_line(
            f"planner corpus: {repaired} of {len(OUTCOMES)} malformed outputs repaired, "
            f"{len(OUTCOMES) - repaired} rejected with their problems fed back"
        )


def prepared(goal, inputs=None):
    """A goal with the built-in tools and the given input values, ready for a planner."""
    from stepgraph import PreparedTask, Task
    from stepgraph.tools import default_registry

    return PreparedTask(
        Task(goal=goal), default_registry(), dict(INPUTS if inputs is None else inputs)
    )

"""A tool result is data or a clear step error: never a repr string, never an internal error."""

import math
import socket

import pytest

from stepgraph import RunStatus, tool
from tests.conftest import make_task


def _loop() -> dict:
    value: dict = {"a": 1}
    value["self"] = value
    return value


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: socket.socket(), "socket is not plain data"),
        (lambda: lambda: 1, "function is not plain data"),
        (_loop, "refers to itself"),
    ],
)
def test_a_result_that_is_not_data_fails_its_step_clearly(run_task, make, message):
    made = []

    @tool
    def odd() -> object:
        """Return something that is not data."""
        made.append(make())
        return made[-1]

    task = make_task(
        [
            {"id": "x", "tool": "odd"},
            {"id": "y", "tool": "calculate", "args": {"expression": "${x} * 2"}},
        ]
    )
    try:
        result, journal = run_task(task, tools=[odd])
    finally:
        for item in made:
            if isinstance(item, socket.socket):
                item.close()
    assert result.status is RunStatus.STEP_FAILED
    assert message in result.failed["x"] and "tool 'odd' returned" in result.failed["x"]
    assert "y" in result.skipped
    assert journal.events[-1].event == "run.end"


def test_nan_and_infinity_results_are_kept_and_replay_identically(run_task, tmp_path):
    from stepgraph.engine import replay

    @tool
    def odd_numbers() -> list:
        """Return values that JSON has no plain spelling for."""
        return [math.nan, math.inf, -math.inf, 2**70]

    task = make_task([{"id": "x", "tool": "odd_numbers"}], answer="${x}")
    result, journal = run_task(task, tools=[odd_numbers])
    values = result.unverified_values["x"]
    assert math.isnan(values[0]) and values[1:] == [math.inf, -math.inf, 2**70]
    report = replay(journal.path, tools=[odd_numbers], out=tmp_path / "again.jsonl")
    assert report.identical, report.divergences

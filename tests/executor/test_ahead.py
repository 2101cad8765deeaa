"""Which steps go ahead of their inputs, and which values a step waits for in this process.

The backend here records calls: `Ahead` only decides, the Dask tests run the real thing.
"""

from concurrent.futures import Future
from typing import Any

from stepgraph import StepGraph, tool
from stepgraph.executor import build_graph
from stepgraph.executor._ahead import Ahead
from stepgraph.tools import ToolRegistry


@tool
def double(x: float = 1.0) -> float:
    """Twice x."""
    return 2 * x


@tool(side_effects=True)
def record(x: float = 1.0) -> float:
    """Write x somewhere: a side effect."""
    return x


class Recorder:
    """Hands out a future for every step sent ahead; notes flushes and awaited futures."""

    def __init__(self) -> None:
        self.ahead: dict[str, Future[Any]] = {}
        self.waited: list[Future[Any]] = []
        self.flushes: list[list[str]] = []
        self._queued: list[str] = []

    def submit_ahead(self, step, tool, known, upstream):
        self.ahead[step.id] = self.ahead.get(step.id) or Future()
        self._queued.append(step.id)
        return self.ahead[step.id]

    def flush(self) -> None:
        self.flushes.append(sorted(self._queued))
        self._queued.clear()

    def awaited(self, future: Future[Any]) -> None:
        self.waited.append(future)

    def cancel(self, future: Future[Any]) -> None:
        raise AssertionError("nothing is called back here")


def ahead_of(steps: list[dict[str, Any]]) -> tuple[Ahead, Recorder, dict[str, int]]:
    graph = build_graph(StepGraph.model_validate({"steps": steps}).steps)
    recorder = Recorder()
    ahead = Ahead(recorder, graph, ToolRegistry([double, record]), {"inputs": {}})
    waiting = {node: graph.in_degree(node) for node in graph}
    return ahead, recorder, waiting


def never(_: str) -> bool:
    return False


def test_a_step_goes_ahead_once_every_upstream_step_has_a_future_and_all_leave_in_one_flush():
    ahead, recorder, waiting = ahead_of(
        [
            {"id": "x", "tool": "double"},
            {"id": "y", "tool": "double"},
            {"id": "s", "tool": "double", "args": {"x": "${x}"}, "depends_on": ["y"]},
            {"id": "t", "tool": "double", "args": {"x": "${s}"}},
        ]
    )
    x, y = Future(), Future()
    ahead.assigned("x", x)
    ahead.assigned("y", y)
    ahead.submit_more(waiting, never)
    assert recorder.flushes == [["s", "t"]]
    assert "s" in ahead and "t" in ahead
    assert recorder.waited == []  # every successor is on the backend: nothing waits here


def test_a_value_is_awaited_only_when_a_successor_cannot_go_ahead():
    """w has side effects: it waits here for b's value. s waits for x and y, which go
    ahead one after the other in the same cascade: y is not awaited for s's sake."""
    ahead, recorder, waiting = ahead_of(
        [
            {"id": "a", "tool": "double"},
            {"id": "b", "tool": "double"},
            {"id": "x", "tool": "double", "args": {"x": "${a}"}},
            {"id": "y", "tool": "double", "args": {"x": "${b}"}},
            {"id": "s", "tool": "double", "args": {"x": "${x}"}, "depends_on": ["y"]},
            {"id": "w", "tool": "record", "args": {"x": "${b}"}},
        ]
    )
    a, b = Future(), Future()
    ahead.assigned("a", a)
    ahead.assigned("b", b)
    ahead.submit_more(waiting, never)
    assert recorder.flushes == [["s", "x", "y"]]
    assert "w" not in ahead
    assert recorder.waited == [b]


def test_a_step_after_one_with_expect_unit_waits_for_its_converted_value():
    ahead, recorder, waiting = ahead_of(
        [
            {"id": "x", "tool": "double", "expect_unit": "m"},
            {"id": "s", "tool": "double", "args": {"x": "${x}"}},
        ]
    )
    x = Future()
    ahead.assigned("x", x)
    ahead.submit_more(waiting, never)
    assert "s" not in ahead
    assert recorder.waited == [x]

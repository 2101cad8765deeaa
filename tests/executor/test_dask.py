"""The Dask backend: the same answers and journal shape as threads, on a real LocalCluster."""

import threading
from collections import Counter

import pytest

from stepgraph import Engine, RunStatus, Task, tool
from stepgraph.executor import dask_backend
from stepgraph.journal import read_journal
from tests.conftest import EXAMPLES

pytestmark = pytest.mark.filterwarnings(
    # distributed warns about its own sockets and threads at cluster shutdown
    "ignore::ResourceWarning",
    "ignore::pytest.PytestUnraisableExceptionWarning",
)


@pytest.fixture(scope="module")
def dask():
    with dask_backend(workers=2, threads_per_worker=2) as factory:
        yield factory


def shape(journal):
    """Which events each step got, ignoring times and order across steps."""
    return Counter((event.event, event.step) for event in journal.events)


@pytest.mark.parametrize(
    "task",
    [EXAMPLES / "migration.yaml", EXAMPLES / "links" / "links.yaml"],
    ids=["migration", "links"],
)
def test_dask_gives_the_same_answer_and_journal_shape_as_threads(task, dask, tmp_path):
    threads = Engine().run(task, journal=tmp_path / "threads.jsonl")
    distributed = Engine(backend=dask).run(task, journal=tmp_path / "dask.jsonl")
    assert distributed.status is RunStatus.VERIFIED
    assert distributed.answer == threads.answer
    assert distributed.values == threads.values
    assert shape(read_journal(tmp_path / "dask.jsonl")) == shape(
        read_journal(tmp_path / "threads.jsonl")
    )


def test_a_tool_that_cannot_be_pickled_gets_an_error_naming_it(dask, tmp_path):
    lock = threading.Lock()

    @tool
    def guarded(x: int) -> int:
        """Use a lock, which cannot travel to another process."""
        with lock:
            return x

    task = Task(goal="g", plan={"steps": [{"id": "g", "tool": "guarded", "args": {"x": 1}}]})
    result = Engine(tools=[guarded], backend=dask).run(task, journal=tmp_path / "j.jsonl")
    assert result.status is RunStatus.STEP_FAILED
    error = result.observations[0].error
    assert "tool 'guarded' cannot be sent to Dask workers" in error and "lock" in error


def test_a_failing_tool_on_a_worker_is_an_error_observation(dask, tmp_path):
    task = Task(
        goal="g",
        plan={
            "steps": [
                {"id": "c", "tool": "calculate", "args": {"expression": "1 / (2 - 2)"}},
            ]
        },
    )
    result = Engine(backend=dask).run(task, journal=tmp_path / "j.jsonl")
    assert result.status is RunStatus.STEP_FAILED
    assert result.observations[0].error == "ZeroDivisionError: division by zero"

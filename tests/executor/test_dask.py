"""The Dask backend: the same answers and journal shape as threads, on a real LocalCluster."""

import sys
import threading
import time
from collections import Counter
from pathlib import Path

import cloudpickle
import pytest

from stepgraph import ApprovalPolicy, Engine, RunStatus, Task, tool
from stepgraph.executor import DaskBackend, dask_backend
from stepgraph.journal import read_journal
from tests.conftest import EXAMPLES, make_task

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


# Tools the workers run: module-level, sent by value (the workers need not import tests).
@tool
def flaky(marker: str) -> float:
    """Fail the first time (no marker file yet), return 5 after."""
    path = Path(marker)
    if not path.exists():
        path.write_text("tried", encoding="utf-8")
        raise ConnectionError("the first attempt fails")
    return 5.0


@tool
def nap(seconds: float, value: float = 0.0) -> float:
    """Sleep, then return the value."""
    time.sleep(seconds)
    return value


@tool(side_effects=True)
def write_down(value: float, marker: str) -> float:
    """Append the value to a file: a side effect."""
    with Path(marker).open("a", encoding="utf-8") as file:
        file.write(f"{value}\n")
    return value


@tool
def wait_for(path: str, value: float) -> float:
    """Return the value once the file exists (another step writes it)."""
    for _ in range(3000):  # bounded: 30 s at most
        if Path(path).exists():
            return value
        time.sleep(0.01)
    raise TimeoutError(f"{path} never appeared")


@tool
def look_up(account: str) -> float:
    """Fail as ordinary tools do: a ValueError for an account that does not exist."""
    raise ValueError(f"no such account: {account}")


cloudpickle.register_pickle_by_value(sys.modules[__name__])


class CountingBackend(DaskBackend):
    """Records which steps went to the cluster ahead of their inputs."""

    def __init__(self, client, ahead: list[str], **options) -> None:
        super().__init__(client, **options)
        self.ahead = ahead

    def submit_ahead(self, step, tool, known, upstream):
        future = super().submit_ahead(step, tool, known, upstream)
        if future is not None:
            self.ahead.append(step.id)
        return future


@pytest.fixture(scope="module")
def client():
    from distributed import Client, LocalCluster

    with (
        LocalCluster(n_workers=2, threads_per_worker=2, dashboard_address=":0") as cluster,
        Client(cluster) as connected,
    ):
        yield connected


def run_counted(client, task, tmp_path, tools=(), **options):
    ahead: list[str] = []
    engine = Engine(tools=list(tools), backend=lambda: CountingBackend(client, ahead, **options))
    result = engine.run(task, journal=tmp_path / "j.jsonl", approval=ApprovalPolicy.AUTO)
    return result, read_journal(tmp_path / "j.jsonl"), ahead


def kinds(journal, step):
    """The execution events of one step, in journal order (verification's `check`s left out)."""
    return [e.event for e in journal.events if e.step == step and e.event != "check"]


def test_steps_after_a_running_step_go_to_the_cluster_ahead_and_journal_in_order(client, tmp_path):
    """The cluster gets b and c before a's value is back; each still journals thought,
    action (with the resolved value) and observation, after its upstream's observation."""
    task = make_task(
        [
            {"id": "a", "tool": "calculate", "args": {"expression": "2 * 3"}},
            {"id": "b", "tool": "calculate", "args": {"expression": "${a} + 1"}},
            {"id": "c", "tool": "calculate", "args": {"expression": "${b} * 2"}},
        ]
    )
    result, journal, ahead = run_counted(client, task, tmp_path)
    assert result.status is RunStatus.VERIFIED
    assert result.values["c"] == 14
    assert ahead == ["b", "c"]
    for step in "abc":
        assert kinds(journal, step) == ["thought", "action", "observation"]
    seqs = {(e.event, e.step): e.seq for e in journal.events}
    assert seqs[("observation", "a")] < seqs[("action", "b")]
    assert seqs[("observation", "b")] < seqs[("action", "c")]
    action_b = next(e for e in journal.events if e.event == "action" and e.step == "b")
    assert action_b.args["expression"]["bindings"] == {"${a}": 6}


def test_a_retried_upstream_step_sends_what_follows_again(client, tmp_path):
    """b went ahead on a's failed attempt; it is called back and runs on the retry's value."""
    task = make_task(
        [
            {"id": "a", "tool": "flaky", "args": {"marker": str(tmp_path / "m")}, "retries": 1},
            {"id": "b", "tool": "calculate", "args": {"expression": "${a} + 1"}},
        ]
    )
    result, journal, ahead = run_counted(client, task, tmp_path, tools=[flaky])
    assert result.status is RunStatus.VERIFIED
    assert result.values["b"] == 6
    assert [o.attempt for o in result.observations if o.step == "a"] == [1, 2]
    assert kinds(journal, "b") == ["thought", "action", "observation"]
    assert ahead == ["b", "b"]


def test_a_failed_upstream_step_skips_what_went_ahead_on_it(client, tmp_path):
    task = make_task(
        [
            {"id": "a", "tool": "calculate", "args": {"expression": "1 / (2 - 2)"}},
            {"id": "b", "tool": "calculate", "args": {"expression": "${a} + 1"}},
        ]
    )
    result, journal, ahead = run_counted(client, task, tmp_path)
    assert result.status is RunStatus.STEP_FAILED
    assert result.failed == {"a": "ZeroDivisionError: division by zero"}
    assert "b" in result.skipped
    assert ahead == ["b"]
    assert kinds(journal, "b") == ["step.skipped"]


def test_a_step_sent_ahead_still_times_out(client, tmp_path):
    task = make_task(
        [
            {"id": "a", "tool": "calculate", "args": {"expression": "1 + 1"}},
            {"id": "b", "tool": "nap", "args": {"seconds": 2, "value": "${a}"}, "timeout": 0.3},
        ]
    )
    result, _, ahead = run_counted(client, task, tmp_path, tools=[nap])
    assert ahead == ["b"]
    assert result.failed == {"b": "TimeoutError: no result after 0.3 s (attempt 1)"}


def test_a_side_effecting_step_waits_for_its_inputs_and_its_action_on_disk(client, tmp_path):
    """Write-ahead holds on the cluster: a tool with side effects never goes ahead."""
    marker = tmp_path / "written"
    task = make_task(
        [
            {"id": "a", "tool": "calculate", "args": {"expression": "2 + 2"}},
            {"id": "w", "tool": "write_down", "args": {"value": "${a}", "marker": str(marker)}},
        ]
    )
    result, journal, ahead = run_counted(client, task, tmp_path, tools=[write_down])
    assert result.status is RunStatus.UNCHECKED
    assert ahead == []
    assert marker.read_text(encoding="utf-8") == "4.0\n"
    assert kinds(journal, "w") == ["thought", "action", "observation"]


# Results come back in batches: a finished task waits up to `result_window` for others.
# With a window far longer than a step's timeout, a result held back for it would time
# the step out; these runs verify only if nothing that matters waits for the window.
HOUR = 3600.0


def test_a_value_a_step_waits_for_here_is_not_held_for_a_batch(client, tmp_path):
    """w has side effects, so it waits here for a's value; b, sent ahead, runs until w
    has written its file, keeping the batch open: a's value must come back at once."""
    marker = tmp_path / "written"
    task = make_task(
        [
            {"id": "a", "tool": "calculate", "args": {"expression": "2 + 2"}, "timeout": 5},
            {"id": "b", "tool": "wait_for", "args": {"path": str(marker), "value": "${a}"}},
            {"id": "w", "tool": "write_down", "args": {"value": "${a}", "marker": str(marker)}},
        ]
    )
    result, _, ahead = run_counted(
        client, task, tmp_path, tools=[wait_for, write_down], result_window=HOUR
    )
    assert ahead == ["b"]
    assert result.status is RunStatus.UNCHECKED
    assert result.unverified_values == {"a": 4, "b": 4.0, "w": 4.0}
    assert marker.read_text(encoding="utf-8") == "4.0\n"


def test_the_last_results_of_a_run_are_not_held_for_a_batch(client, tmp_path):
    task = make_task(
        [
            {"id": "a", "tool": "calculate", "args": {"expression": "2 * 3"}, "timeout": 5},
            {"id": "b", "tool": "calculate", "args": {"expression": "${a} + 1"}, "timeout": 5},
            {"id": "c", "tool": "calculate", "args": {"expression": "${a} * 2"}, "timeout": 5},
        ]
    )
    result, _, ahead = run_counted(client, task, tmp_path, result_window=HOUR)
    assert sorted(ahead) == ["b", "c"]
    assert result.status is RunStatus.VERIFIED
    assert result.values == {"a": 6, "b": 7, "c": 12}


def _worker_log(client) -> str:
    return "\n".join(text for lines in client.get_worker_logs().values() for _, text in lines)


def test_a_tool_error_is_the_steps_observation_not_a_worker_traceback(client, tmp_path):
    """distributed logs a task that raises as "Compute Failed", traceback and all, on the
    console; a tool's ValueError is an observation in the journal, and nothing else."""
    task = make_task(
        [
            {"id": "a", "tool": "look_up", "args": {"account": "acct-17"}},
            {"id": "b", "tool": "calculate", "args": {"expression": "${a} + 1"}},
            {"id": "c", "tool": "look_up", "args": {"account": "${a}"}},
        ]
    )
    result, journal, ahead = run_counted(client, task, tmp_path, tools=[look_up])
    assert result.status is RunStatus.STEP_FAILED
    assert result.failed == {"a": "ValueError: no such account: acct-17"}
    assert set(result.skipped) == {"b", "c"} and ahead == ["b", "c"]  # went ahead on the cluster
    [observation] = journal.of_kind("observation")
    assert observation.error == "ValueError: no such account: acct-17"
    log = _worker_log(client)
    assert "no such account" not in log and "look_up" not in log
    assert "Compute Failed" not in log and "Traceback" not in log


def test_the_cli_says_it_is_starting_a_local_cluster_and_where_its_dashboard_is(tmp_path):
    """`--backend dask` was silent for seconds and gave no dashboard link; --json stays clean."""
    import json

    from tests.conftest import invoke

    result = invoke("run", EXAMPLES / "migration.yaml", "--backend", "dask", "--json",
                    "--journal", tmp_path / "j.jsonl")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["status"] == "verified"  # nothing else on stdout
    notes = result.stderr.splitlines()
    assert notes[0] == "starting a local Dask cluster (2 worker processes) ..."
    [link] = [line for line in notes if line.startswith("Dask dashboard: ")]
    assert link.removeprefix("Dask dashboard: ").startswith("http://127.0.0.1:")


def test_the_cluster_object_makes_backends_and_knows_its_dashboard(dask):
    assert isinstance(dask(), DaskBackend)
    assert dask.dashboard_link is not None and dask.dashboard_link.startswith("http://")

import asyncio
import threading
import time

import pytest

from stepgraph import RunStatus, tool
from tests.conftest import make_task


def step(step_id, tool_name, **args):
    extra = args.pop("_extra", {})
    return {"id": step_id, "tool": tool_name, "args": args, **extra}


def test_independent_steps_run_at_the_same_time(run_task):
    """Two steps that each wait for the other at a barrier can only finish if they overlap."""
    barrier = threading.Barrier(2, timeout=5)

    @tool
    def meet(name: str) -> str:
        """Wait at the barrier."""
        barrier.wait()
        return name

    result, _ = run_task(
        make_task([step("a", "meet", name="a"), step("b", "meet", name="b")]), tools=[meet]
    )
    assert result.unverified_values == {"a": "a", "b": "b"}


def test_a_step_starts_as_soon_as_its_own_inputs_exist(run_task):
    """No level barrier: 'after_fast' runs while the unrelated 'slow' step is still running."""
    release = threading.Event()

    @tool
    def slow() -> str:
        """Wait until released by another step."""
        if not release.wait(timeout=5):
            raise TimeoutError("never released")
        return "slow done"

    @tool
    def fast(x: int) -> int:
        """Return x."""
        return x

    @tool
    def release_slow(x: int) -> int:
        """Release the slow step."""
        release.set()
        return x

    task = make_task(
        [
            step("slow", "slow"),
            step("quick", "fast", x=1),
            step("after_fast", "release_slow", x="${quick}"),
        ]
    )
    result, _ = run_task(task, tools=[slow, fast, release_slow])
    assert result.status is RunStatus.UNCHECKED
    assert result.unverified_values["slow"] == "slow done"


def test_a_failing_step_skips_its_dependents_and_the_rest_still_runs(run_task):
    @tool
    def explode(x: int) -> int:
        """Raise."""
        raise ValueError(f"bad input {x}")

    task = make_task(
        [
            step("boom", "explode", x=1),
            step("after", "calculate", expression="${boom} + 1"),
            step("later", "calculate", expression="${after} + 1"),
            step("other", "calculate", expression="2 * 21"),
        ]
    )
    result, journal = run_task(task, tools=[explode])
    assert result.status is RunStatus.STEP_FAILED
    assert result.values == {} and result.unverified_values == {"other": 42}
    assert result.skipped == {
        "after": "depends on 'boom', which failed: ValueError: bad input 1",
        "later": "depends on 'boom', which failed: ValueError: bad input 1",
    }
    errors = [e for e in journal.of_kind("observation") if not e.ok]
    assert [(e.step, e.error) for e in errors] == [("boom", "ValueError: bad input 1")]
    assert {e.step for e in journal.of_kind("step.skipped")} == {"after", "later"}


def test_a_hanging_tool_times_out_and_is_abandoned(run_task):
    release = threading.Event()

    @tool
    def hang() -> str:
        """Never answer (until the test ends)."""
        release.wait(timeout=30)
        return "late"

    task = make_task(
        [
            step("stuck", "hang", _extra={"timeout": 0.05}),
            step("fine", "calculate", expression="1 + 1"),
        ]
    )
    started = time.monotonic()
    try:
        result, journal = run_task(task, tools=[hang])
    finally:
        release.set()
    assert time.monotonic() - started < 5
    assert result.status is RunStatus.STEP_FAILED
    observation = journal.for_step("stuck")[-1]
    assert observation.event == "observation" and not observation.ok
    assert observation.error == "TimeoutError: no result after 0.05 s (attempt 1)"
    assert result.values == {} and result.unverified_values == {"fine": 2}


def test_an_async_tool_that_hangs_is_cancelled_at_its_timeout(run_task):
    cancelled = threading.Event()

    @tool
    async def wait_forever() -> str:
        """Sleep far too long."""
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    # Half a second, not 50 ms: on a loaded machine a shorter timeout can fire before the
    # coroutine first runs, and a task cancelled before it starts never sees the cancel.
    result, _ = run_task(
        make_task([step("w", "wait_forever", _extra={"timeout": 0.5})]), tools=[wait_forever]
    )
    assert result.status is RunStatus.STEP_FAILED
    assert cancelled.wait(timeout=5)


def test_a_flaky_step_is_retried_and_each_attempt_is_journaled(run_task):
    attempts = []

    @tool
    def flaky() -> int:
        """Fail once, then succeed."""
        attempts.append(1)
        if len(attempts) == 1:
            raise ConnectionError("reset by peer")
        return 7

    result, journal = run_task(
        make_task([step("f", "flaky", _extra={"retries": 2})]), tools=[flaky]
    )
    assert result.unverified_values == {"f": 7}
    observed = [(e.attempt, e.ok, e.final) for e in journal.of_kind("observation")]
    assert observed == [(1, False, False), (2, True, True)]
    assert [e.attempt for e in journal.of_kind("action")] == [1, 2]


def test_a_wrong_argument_type_at_run_time_is_an_error_observation(run_task):
    """A reference resolves to a dict where an int is needed: no retry, a clear error."""

    @tool
    def lookup() -> dict:
        """Return a record."""
        return {"id": "not-a-number"}

    @tool
    def fetch(company_id: int) -> int:
        """Fetch by id."""
        return company_id

    task = make_task([step("rec", "lookup"), step("get", "fetch", company_id="${rec}")])
    result, journal = run_task(task, tools=[lookup, fetch])
    [observation] = [e for e in journal.of_kind("observation") if e.step == "get"]
    assert "tool 'fetch': 'company_id': Input should be a valid integer" in observation.error
    assert result.status is RunStatus.STEP_FAILED


def test_a_missing_field_in_a_reference_is_an_error_observation(run_task):
    @tool
    def lookup() -> dict:
        """Return a record."""
        return {"id": 3}

    task = make_task([step("rec", "lookup"), step("n", "calculate", expression="${rec.size} + 1")])
    _, journal = run_task(task, tools=[lookup])
    [observation] = [e for e in journal.for_step("n") if e.event == "observation"]
    assert observation.error == "${rec.size}: no field 'size' (have: id)"


def test_concurrency_never_exceeds_max_workers(run_task):
    lock = threading.Lock()
    running, peak = [0], [0]

    @tool
    def busy(i: int) -> int:
        """Be busy briefly."""
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.01)
        with lock:
            running[0] -= 1
        return i

    task = make_task([step(f"s{i}", "busy", i=i) for i in range(12)], max_workers=3)
    result, _ = run_task(task, tools=[busy])
    assert len(result.unverified_values) == 12
    assert 1 <= peak[0] <= 3


def test_expect_unit_converts_the_output_and_rejects_a_wrong_one_at_run_time(run_task):
    @tool
    def rate() -> object:
        """Return a rate, whatever the plan expects."""
        from stepgraph.units import quantity

        return quantity(450, "Mbps")

    task = make_task(
        [
            step("r", "rate", _extra={"expect_unit": "MB/s"}),
            step("v", "rate", _extra={"expect_unit": "GB"}),
        ]
    )
    result, journal = run_task(task, tools=[rate])
    assert result.unverified_values["r"].magnitude == pytest.approx(56.25)
    [bad] = [e for e in journal.of_kind("observation") if e.step == "v"]
    assert bad.error.startswith("expect_unit 'GB': cannot convert 450 Mbps")


def test_results_come_back_in_plan_order_whatever_finished_first(run_task):
    """Prompts and results built from them must not depend on which parallel step won."""
    release = threading.Event()

    @tool
    def first_slow() -> int:
        """Finish after the other one."""
        release.wait(timeout=5)
        return 1

    @tool
    def second_fast() -> int:
        """Finish first."""
        return 2

    def release_after_b(event):
        if event.event == "observation" and event.step == "b":
            release.set()

    result, journal = run_task(
        make_task([step("a", "first_slow"), step("b", "second_fast")]),
        tools=[first_slow, second_fast],
        listeners=[release_after_b],
    )
    assert [e.step for e in journal.of_kind("observation")] == ["b", "a"]
    assert list(result.unverified_values) == ["a", "b"]

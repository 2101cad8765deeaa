"""Calls queued behind busy threads: the thread limit holds, clocks start when calls do."""

import threading

from stepgraph import ApprovalPolicy, RunStatus, tool
from stepgraph.executor import _scheduler
from stepgraph.executor._pool import WorkerPool
from tests.conftest import make_task


def step(step_id, tool_name, **args):
    extra = args.pop("_extra", {})
    return {"id": step_id, "tool": tool_name, "args": args, **extra}


def test_a_queued_call_is_timed_from_when_it_starts_not_from_when_it_was_queued(
    run_task, monkeypatch
):
    """One thread: 'quick' waits behind 'slow' for longer than its own timeout, and passes."""
    monkeypatch.setattr(_scheduler, "QUICK_CALL_MS", 60_000.0)  # 'warm' counts as quick

    @tool
    def slow() -> str:
        """Hold the only thread for 0.3 s."""
        threading.Event().wait(0.3)
        return "slow"

    @tool
    def quick() -> str:
        """Answer at once."""
        return "quick"

    steps = [
        step("warm", "quick"),  # once it is back, the next two go out together
        step("slow", "slow", _extra={"depends_on": ["warm"]}),
        step("quick", "quick", _extra={"timeout": 0.15, "depends_on": ["warm"]}),
    ]
    result, journal = run_task(make_task(steps, max_workers=1), tools=[slow, quick])
    order = [(e.event, e.step) for e in journal.events]
    assert order.index(("action", "slow")) < order.index(("action", "quick"))
    assert order.index(("action", "quick")) < order.index(("observation", "slow"))  # queued
    assert result.status is RunStatus.UNCHECKED
    assert result.unverified_values == {"warm": "quick", "slow": "slow", "quick": "quick"}
    [observed] = [e for e in journal.of_kind("observation") if e.step == "quick"]
    assert observed.duration_ms < 150  # the wait for the thread is not the call's time


def test_slow_calls_are_not_queued_so_an_action_means_the_call_started(run_task):
    @tool
    def slow(i: int) -> int:
        """Take 20 ms: far longer than the scheduler's round trip."""
        threading.Event().wait(0.02)
        return i

    task = make_task([step(f"s{i}", "slow", i=i) for i in range(4)], max_workers=1)
    _, journal = run_task(task, tools=[slow])
    order = [(e.event, e.step) for e in journal.events if e.event in ("action", "observation")]
    assert order == [(kind, f"s{i}") for i in range(4) for kind in ("action", "observation")]


def test_a_call_with_side_effects_is_journaled_as_started_only_when_a_thread_is_free(
    run_task, monkeypatch
):
    monkeypatch.setattr(_scheduler, "QUICK_CALL_MS", 60_000.0)  # every other call may queue

    @tool
    def slow() -> str:
        """Hold the only thread briefly."""
        threading.Event().wait(0.05)
        return "slow"

    @tool(side_effects=True)
    def send() -> str:
        """Pretend to change the world."""
        return "sent"

    after_warm = {"depends_on": ["warm"]}
    steps = [step("warm", "slow"), step("slow", "slow", _extra=after_warm)]
    steps.append(step("send", "send", _extra=after_warm))
    task = make_task(steps, max_workers=1)
    result, journal = run_task(task, tools=[slow, send], approval=ApprovalPolicy.AUTO)
    assert result.unverified_values == {"warm": "slow", "slow": "slow", "send": "sent"}
    kinds = [(e.event, e.step) for e in journal.events if e.event in ("action", "observation")]
    assert kinds.index(("action", "send")) > kinds.index(("observation", "slow"))


def test_a_call_abandoned_on_its_thread_does_not_block_the_calls_queued_behind_it(
    run_task, monkeypatch
):
    """One thread, taken by a call that hangs: the queued calls still run, on a new thread."""
    monkeypatch.setattr(_scheduler, "QUICK_CALL_MS", 60_000.0)
    release = threading.Event()

    @tool
    def hang() -> str:
        """Never answer (until the test ends)."""
        release.wait(timeout=30)
        return "late"

    @tool
    def fine(i: int) -> int:
        """Answer at once."""
        return i

    after_warm = {"depends_on": ["warm"]}
    steps = [step("warm", "fine", i=-1)]
    steps += [step("stuck", "hang", _extra={"timeout": 0.05, "retries": 0, **after_warm})]
    steps.append(step("f0", "fine", i=0, _extra=after_warm))  # the last call: no later submit
    try:
        result, journal = run_task(make_task(steps, max_workers=1), tools=[hang, fine])
    finally:
        release.set()
    assert result.status is RunStatus.STEP_FAILED
    assert result.unverified_values == {"warm": -1, "f0": 0}
    order = [(e.event, e.step) for e in journal.events]
    assert order.index(("action", "f0")) < order.index(("observation", "stuck"))  # queued
    assert result.failed == {"stuck": "TimeoutError: no result after 0.05 s (attempt 1)"}


def test_the_pool_never_runs_more_calls_than_its_limit_and_runs_every_queued_one():
    pool = WorkerPool(max_threads=2)
    lock = threading.Lock()
    running, peak = [0], [0]

    def call(i: int) -> int:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        threading.Event().wait(0.002)
        with lock:
            running[0] -= 1
        return i

    futures = [pool.submit(lambda i=i: call(i)) for i in range(40)]
    try:
        assert [future.result(timeout=10) for future in futures] == list(range(40))
    finally:
        pool.shutdown()
    assert peak[0] == 2


def test_a_pool_shut_down_as_its_last_call_ends_runs_the_next_call():
    """A held-out GSM8K run hung on its second cross-check plan: the run's pool was shut down
    while the first plan's last worker was still counting itself free, so the next call
    waited for a worker that had stopped. The call here shuts the pool down itself, so the
    worker counts itself after the shutdown every time."""
    pool = WorkerPool()

    def last_call() -> int:
        pool.shutdown()  # as the scheduler does once this call's result is in
        return 1

    assert pool.submit(last_call).result(timeout=5) == 1
    threading.Event().wait(0.05)  # the worker has counted itself free by now
    assert pool.submit(lambda: 2).result(timeout=5) == 2


def test_a_call_abandoned_before_a_shutdown_leaves_the_pool_after_it_whole():
    pool = WorkerPool(max_threads=1)
    release = threading.Event()
    stuck = pool.submit(release.wait)
    while stuck.started is None:
        threading.Event().wait(0.01)
    pool.shutdown()
    pool.abandon(stuck)  # its thread belongs to the pool before the shutdown
    assert pool.submit(lambda: "next").result(timeout=5) == "next"
    release.set()
    assert pool.submit(lambda: "again").result(timeout=5) == "again"

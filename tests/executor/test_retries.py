"""Retries: they back off, and a side-effecting tool never runs twice at once or unasked."""

import threading
import time

import pytest

from stepgraph import ApprovalPolicy, RunStatus, tool
from stepgraph.executor import _scheduler
from tests.conftest import make_task

AUTO = ApprovalPolicy.AUTO


@pytest.fixture(autouse=True)
def short_backoff(monkeypatch):
    monkeypatch.setattr(_scheduler, "RETRY_BACKOFF_SECONDS", 0.05)


def _step(tool_name, **extra):
    return {"id": "s", "tool": tool_name, **extra}


def test_retries_back_off_doubling(run_task):
    """Three failures, three retries: the gaps between attempts grow."""
    starts = []

    @tool
    def flaky() -> int:
        """Fail until the fourth call."""
        starts.append(time.monotonic())
        if len(starts) < 4:
            raise ConnectionError("try again")
        return 1

    result, _ = run_task(make_task([_step("flaky", retries=3)]), tools=[flaky])
    assert result.status is RunStatus.UNCHECKED
    gaps = [later - earlier for earlier, later in zip(starts, starts[1:], strict=False)]
    assert gaps[0] >= 0.05 and gaps[1] >= 0.1 and gaps[2] >= 0.2


def test_a_side_effecting_tool_is_not_retried_unless_idempotent(run_task):
    calls = []

    @tool(side_effects=True)
    def send() -> str:
        """Send a message (fails)."""
        calls.append(1)
        raise ConnectionError("network down")

    result, journal = run_task(make_task([_step("send", retries=3)]), tools=[send], approval=AUTO)
    assert result.status is RunStatus.STEP_FAILED
    assert len(calls) == 1
    finals = [e for e in journal.of_kind("observation") if e.final]
    assert len(finals) == 1 and "network down" in finals[0].error


def test_an_idempotent_side_effecting_tool_is_retried(run_task):
    calls = []

    @tool(side_effects=True, idempotent=True)
    def put() -> str:
        """Store a value under a key (fails once)."""
        calls.append(1)
        if len(calls) == 1:
            raise ConnectionError("blip")
        return "stored"

    result, _ = run_task(make_task([_step("put", retries=2)]), tools=[put], approval=AUTO)
    assert result.status is RunStatus.UNCHECKED
    assert len(calls) == 2


def test_a_timed_out_side_effecting_call_is_not_started_again_while_it_runs(run_task):
    """The retry of an idempotent side effect waits until the abandoned attempt has ended."""
    running = threading.Lock()
    overlaps = []
    calls = []

    @tool(side_effects=True, idempotent=True)
    def upload() -> str:
        """Upload a file (the first attempt hangs past its timeout)."""
        if not running.acquire(blocking=False):
            overlaps.append(1)
            return "overlap"
        try:
            calls.append(time.monotonic())
            if len(calls) == 1:
                time.sleep(0.15)  # past its timeout, within the grace of one more timeout
            return "uploaded"
        finally:
            running.release()

    result, _ = run_task(
        make_task([_step("upload", retries=1, timeout=0.1)]), tools=[upload], approval=AUTO
    )
    assert overlaps == []
    assert result.unverified_values == {"s": "uploaded"}
    assert calls[1] - calls[0] >= 0.15


def test_a_side_effecting_call_that_never_ends_is_given_up(run_task):
    release = threading.Event()

    @tool(side_effects=True, idempotent=True)
    def hang() -> str:
        """Never answers in time."""
        release.wait(5)
        return "late"

    try:
        result, journal = run_task(
            make_task([_step("hang", retries=1, timeout=0.1)]), tools=[hang], approval=AUTO
        )
    finally:
        release.set()
    assert result.status is RunStatus.STEP_FAILED
    [final] = [e for e in journal.of_kind("observation") if e.final]
    assert "may still be running" in final.error

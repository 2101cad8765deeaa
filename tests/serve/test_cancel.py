"""Cancelling a running run from the API: it stops before its next call, journaled, clearly."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from stepgraph import tool
from stepgraph.journal import read_journal
from tests.serve.conftest import Server, start_server

HELD = threading.Event()  # the test opens it: a slow step that runs as long as the test wants
TASK = (
    "goal: a slow step, then two more\nplan:\n  steps:\n"
    "    - {id: slow, tool: held_step, args: {value: 20}}\n"
    "    - {id: double, tool: calculate, args: {expression: '${slow} * 2'}}\n"
    "    - {id: plus, tool: calculate, args: {expression: '${double} + 2'}}\n"
    "answer: '${plus}'\n"
)


@tool
def held_step(value: float) -> float:
    """Return the value once the test lets it (a step visibly running)."""
    if not HELD.wait(30):
        raise TimeoutError("the test never let the step finish")
    return value


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Server]:
    HELD.clear()
    for server in start_server(tmp_path, tools=[held_step]):
        (server.workspace / "slow.yaml").write_text(TASK)
        yield server
    HELD.set()


def _running(site: Server, step: str) -> str:
    """Start the slow task; return its run id once `step` has started."""
    run_id = site.post("/api/runs", task="slow.yaml").json()["run_id"]
    path = Path(site.manager.row(run_id).path)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if any(e.event == "action" and e.step == step for e in read_journal(path).events):
            return run_id
        time.sleep(0.01)
    raise AssertionError(f"step {step} never started")


def test_a_cancelled_run_stops_before_its_next_step_and_says_who_cancelled(site):
    run_id = _running(site, "slow")
    answer = site.post(f"/api/runs/{run_id}/cancel", by="erin")
    assert answer.status_code == 202, answer.text
    HELD.set()  # the step that was running finishes; nothing after it starts
    result = site.wait_status(run_id, "cancelled")
    assert result["answer"] in (None, "")
    journal = read_journal(Path(site.manager.row(run_id).path))
    [cancelled] = journal.of_kind("run.cancelled")
    assert (cancelled.who, cancelled.how, cancelled.before) == ("erin", "web", "tool")
    assert [e.step for e in journal.of_kind("action")] == ["slow"]
    assert [e.step for e in journal.of_kind("observation")] == ["slow"]  # it was not lost
    [end] = journal.of_kind("run.end")
    assert end.status == "cancelled" and "erin" in (end.reason or "")
    again = site.post(f"/api/runs/{run_id}/cancel", by="erin")
    assert again.status_code == 409 and "not running" in again.json()["detail"]


def test_a_cancel_without_the_csrf_token_is_refused_and_the_run_goes_on(site):
    run_id = _running(site, "slow")
    refused = site.client.post(f"/api/runs/{run_id}/cancel", json={"by": "mallory"})
    assert refused.status_code == 403
    foreign = site.client.post(
        f"/api/runs/{run_id}/cancel",
        json={"by": "mallory"},
        headers={"X-CSRF-Token": site.csrf, "Origin": "http://evil.example"},
    )
    assert foreign.status_code == 403
    HELD.set()
    result = site.wait_status(run_id, "verified", "unchecked", "cancelled")
    assert result["status"] != "cancelled" and result["answer"] == "42"


def test_a_cancel_needs_the_servers_token_when_it_has_one(tmp_path):
    for server in start_server(tmp_path, tools=[held_step], token="s3cret"):
        bare = server.client.post(
            "/api/runs/abc/cancel",
            json={"by": "mallory"},
            headers={"Authorization": "", "X-CSRF-Token": server.csrf},
        )
        assert bare.status_code == 401


def test_a_parked_run_is_not_cancelled_but_rejected(site):
    run_id = site.post("/api/runs", task="migration.yaml", approval="ask").json()["run_id"]
    site.wait_status(run_id, "awaiting_approval")
    refused = site.post(f"/api/runs/{run_id}/cancel", by="erin")
    assert refused.status_code == 409 and "reject" in refused.json()["detail"]
    assert site.post(f"/api/runs/{run_id}/cancel", by="").status_code == 422  # nobody


def test_a_run_approved_here_can_be_cancelled_while_it_runs(site):
    (site.workspace / "slow-ask.yaml").write_text(TASK + "approval: ask\n")
    run_id = site.post("/api/runs", task="slow-ask.yaml").json()["run_id"]
    site.wait_status(run_id, "awaiting_approval")
    assert site.post(f"/api/runs/{run_id}/approve", by="alice").status_code == 202
    path = Path(site.manager.row(run_id).path)
    deadline = time.monotonic() + 10
    while not any(e.event == "action" for e in read_journal(path).events):
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert site.post(f"/api/runs/{run_id}/cancel", by="bob").status_code == 202
    HELD.set()
    site.wait_status(run_id, "cancelled")
    assert read_journal(path).of_kind("run.cancelled")[0].who == "bob"

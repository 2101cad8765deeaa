"""Two deciders on one runs folder: the one answered first is the one carried out."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from stepgraph import ApprovalError, ApprovalPolicy, JournalError, RunStatus, tool
from stepgraph.engine import Decision, decide, parked, record_decision, resume
from stepgraph.journal import RunIndex, read_journal
from stepgraph.serve._runs import RunManager
from tests.serve.conftest import start_server

SENT: list[str] = []
HOLD = threading.Event()  # set: send_report returns at once; cleared: it waits for it

REPORT_TASK = """
goal: report the nights
plan:
  steps:
    - {id: n, tool: calculate, args: {expression: "ceil(2500 GB / (962.28 GB))"}}
    - {id: mail, tool: send_report, args: {text: "nights: ${n}"}}
  answer: "${n}"
"""


@tool(side_effects=True)
def send_report(text: str) -> str:
    """Send a report to the team (changes the world).

    Args:
        text: What the report says.
    """
    HOLD.wait(30)
    SENT.append(text)
    return "sent"


@pytest.fixture(autouse=True)
def _fresh_log() -> None:
    SENT.clear()
    HOLD.set()


def decisions_in(journal: Path) -> list[tuple[str, str, str]]:
    events = read_journal(journal).events
    return [
        (e.event, e.who, e.how) for e in events if e.event in ("plan.approved", "plan.rejected")
    ]


def two_servers(tmp_path: Path) -> tuple[Any, Any, Any, Any]:
    first, second = start_server(tmp_path, tools=[send_report]), None
    one = next(first)
    (one.workspace / "report.yaml").write_text(REPORT_TASK, encoding="utf-8")
    second = start_server(tmp_path, tools=[send_report])  # the same runs folder and workspace
    return first, one, second, next(second)


def race(*calls: Any) -> list[Any]:
    """Run the calls at the same moment, each in its own thread; their results, in order."""
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)

    def go(i: int) -> None:
        barrier.wait()
        try:
            results[i] = calls[i]()
        except Exception as e:  # the loser's refusal is a result here
            results[i] = e

    threads = [threading.Thread(target=go, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return results


def test_two_servers_racing_approve_and_reject_one_gets_202_the_other_409_naming_it(tmp_path):
    """Each round: one 202, one 409 naming the winner; the side effect ran only if approve won."""
    first, one, second, two = two_servers(tmp_path)
    try:
        winners = set()
        for _ in range(6):
            SENT.clear()
            started = one.post("/api/runs", task="report.yaml", approval="ask")
            run_id = started.json()["run_id"]
            one.wait_status(run_id, "awaiting_approval")
            approve, reject = race(
                lambda run_id=run_id: one.post(f"/api/runs/{run_id}/approve", by="alice"),
                lambda run_id=run_id: two.post(f"/api/runs/{run_id}/reject", by="bob"),
            )
            assert sorted([approve.status_code, reject.status_code]) == [202, 409]
            winner, loser = (approve, reject) if approve.status_code == 202 else (reject, approve)
            said = winner.json()["decision"]
            named = "approved by alice (web)" if said == "approve" else "rejected by bob (web)"
            assert named in loser.json()["detail"]
            final = one.wait_status(run_id, "verified", "not_run")
            one.manager.join()
            two.manager.join()
            journal = Path(one.manager.row(run_id).path)
            if said == "approve":
                assert final["status"] == "verified" and SENT == ["nights: 3"]
                assert decisions_in(journal) == [("plan.approved", "alice", "web")]
            else:
                assert final["status"] == "not_run" and SENT == []
                assert decisions_in(journal) == [("plan.rejected", "bob", "web")]
            winners.add(said)
        assert winners <= {"approve", "reject"}  # either may win; each round is consistent
    finally:
        first.close()
        second.close()


def test_the_cli_and_a_server_racing_exactly_one_decision_is_carried_out(tmp_path):
    """`stepgraph approve`'s `decide` against the server's `RunManager.decide`: one wins."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "report.yaml").write_text(REPORT_TASK, encoding="utf-8")
    manager = RunManager(tmp_path / "runs", workspace=workspace, tools=[send_report])
    run_id = manager.start(task="report.yaml", goal=None, overrides={}, approval=ApprovalPolicy.ASK)
    manager.join()
    journal = Path(manager.row(run_id).path)
    assert parked(journal) is not None
    web, cli = race(
        lambda: manager.decide(run_id, Decision("reject", who="web-bob", how="web")),
        lambda: decide(journal, Decision("approve", who="cli-ann", how="cli"), tools=[send_report]),
    )
    manager.join()
    refused = [r for r in (web, cli) if isinstance(r, ApprovalError)]
    assert len(refused) == 1
    if isinstance(web, ApprovalError):  # the command line won: it ran the report
        assert cli.status is RunStatus.VERIFIED and SENT == ["nights: 3"]
        assert "approved by cli-ann (cli)" in str(web)
        assert decisions_in(journal) == [("plan.approved", "cli-ann", "cli")]
    else:
        assert SENT == [] and "rejected by web-bob (web)" in str(cli)
        assert decisions_in(journal) == [("plan.rejected", "web-bob", "web")]
        assert read_journal(journal).of_kind("run.end")[0].status == "not_run"


def test_the_decision_is_in_the_journal_before_the_reply_and_a_late_decider_is_told_whose(
    tmp_path,
):
    """202 means recorded: while the approved run still works, a reject gets 409 naming alice."""
    first, one, second, two = two_servers(tmp_path)
    try:
        run_id = one.post("/api/runs", task="report.yaml", approval="ask").json()["run_id"]
        one.wait_status(run_id, "awaiting_approval")
        journal = Path(one.manager.row(run_id).path)
        HOLD.clear()  # the approved run stops inside send_report until the end of the test
        assert one.post(f"/api/runs/{run_id}/approve", by="alice").status_code == 202
        assert decisions_in(journal) == [("plan.approved", "alice", "web")]
        late = two.post(f"/api/runs/{run_id}/reject", by="bob")
        assert late.status_code == 409
        assert "not awaiting approval: approved by alice (web)" in late.json()["detail"]
        assert SENT == []  # still inside the tool: the reply did not wait for the run
        HOLD.set()
        assert one.wait_status(run_id, "verified")["status"] == "verified"
        assert SENT == ["nights: 3"] and decisions_in(journal) == [
            ("plan.approved", "alice", "web")
        ]
    finally:
        HOLD.set()
        first.close()
        second.close()


@pytest.mark.parametrize(("action", "status", "log"), [
    ("approve", RunStatus.VERIFIED, ["nights: 3"]),
    ("reject", RunStatus.NOT_RUN, []),
])  # fmt: skip
def test_a_decision_recorded_by_a_process_that_stopped_is_carried_out_by_resume(
    tmp_path, action, status, log
):
    """Recorded, never carried out: it is not parked, another decider is refused, resume ends it."""
    runs = tmp_path / "runs"
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "report.yaml").write_text(REPORT_TASK, encoding="utf-8")
    manager = RunManager(runs, workspace=workspace, tools=[send_report])
    run_id = manager.start(task="report.yaml", goal=None, overrides={}, approval=ApprovalPolicy.ASK)
    manager.join()
    journal = Path(manager.row(run_id).path)
    record_decision(journal, Decision(action, who="gone", how="web"), tools=[send_report]).close()
    assert parked(journal) is None and RunIndex(runs).get(run_id).status == "interrupted"
    with pytest.raises(ApprovalError, match=r"by gone \(web\)"):
        decide(journal, Decision("approve", who="other"), tools=[send_report])
    result = resume(journal, tools=[send_report])
    assert result.status is status and log == SENT
    kind = {"approve": "plan.approved", "reject": "plan.rejected"}[action]
    assert decisions_in(journal) == [(kind, "gone", "web")]
    with pytest.raises(JournalError, match="already ended"):
        resume(journal, tools=[send_report])


def test_a_decision_through_a_foreign_host_never_reaches_the_journal(tmp_path):
    """The Host check stands before the decision: a rebinding page records nothing."""
    first, one, second, two = two_servers(tmp_path)
    try:
        run_id = one.post("/api/runs", task="report.yaml", approval="ask").json()["run_id"]
        one.wait_status(run_id, "awaiting_approval")
        evil = httpx.post(
            f"{one.url}/api/runs/{run_id}/approve",
            json={"by": "mallory"},
            headers={"Host": "evil.example", "X-CSRF-Token": one.csrf},
        )
        assert evil.status_code == 421
        assert decisions_in(Path(one.manager.row(run_id).path)) == [] and SENT == []
    finally:
        first.close()
        second.close()

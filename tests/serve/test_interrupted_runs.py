"""A run whose process died (`kill -9` of a server) says so, and says how it goes on."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from stepgraph import ApprovalPolicy
from stepgraph.engine import Decision, record_decision
from stepgraph.journal import read_journal
from stepgraph.serve._runs import RunManager
from tests.journal.test_index_liveness import cut_run
from tests.serve.conftest import start_server
from tests.serve.test_decision_race import HOLD, REPORT_TASK, SENT, send_report


def decided_but_not_carried_out(tmp_path: Path, action: str = "approve") -> str:
    """A parked run whose decision a server recorded just before it was killed."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "report.yaml").write_text(REPORT_TASK, encoding="utf-8")
    manager = RunManager(tmp_path / "runs", workspace=workspace, tools=[send_report])
    run_id = manager.start(task="report.yaml", goal=None, overrides={}, approval=ApprovalPolicy.ASK)
    manager.join()
    journal = Path(manager.row(run_id).path)
    # Recorded under the lock, then the lock let go as a killed process lets go of it.
    record_decision(journal, Decision(action, who="alice", how="web"), tools=[send_report]).close()
    return run_id


def test_a_decision_recorded_by_a_server_that_died_is_continued_by_a_new_one(tmp_path):
    """Not "running" forever: interrupted, approving again says how, and continue carries it out."""
    SENT.clear()
    HOLD.set()  # the report goes out at once
    run_id = decided_but_not_carried_out(tmp_path)
    for server in start_server(tmp_path, tools=[send_report]):
        result = server.client.get(f"/api/runs/{run_id}").json()
        assert result["status"] == "interrupted"
        assert "the approval by alice (web) was recorded but not carried out" in result["way_on"]
        again = server.post(f"/api/runs/{run_id}/approve", by="bob")
        assert again.status_code == 409
        assert f"POST /api/runs/{run_id}/continue" in again.json()["detail"]
        page = server.client.get(f"/runs/{run_id}").text
        assert 'id="way-on"' in page and 'id="continue-button"' in page
        continued = server.post(f"/api/runs/{run_id}/continue")
        assert continued.status_code == 202, continued.text
        assert continued.json()["continued"] == "the approval by alice (web)"
        assert server.wait_status(run_id, "verified")["way_on"] is None
        assert SENT == ["nights: 3"]  # the tool ran once, on alice's approval
        again = server.post(f"/api/runs/{run_id}/continue")
        assert again.status_code == 409 and "no recorded decision" in again.json()["detail"]
        journal = read_journal(Path(server.manager.row(run_id).path))
        assert [(e.event, e.who) for e in journal.of_kind("plan.approved")] == [
            ("plan.approved", "alice")
        ]


def test_a_run_killed_while_its_steps_ran_is_interrupted_and_points_to_resume(tmp_path):
    """No way on from the API but the truth: the page and the API name `stepgraph resume`."""
    cut = cut_run(tmp_path, tmp_path / "runs")
    for server in start_server(tmp_path):
        [listed] = server.client.get("/api/runs", params={"status": "interrupted"}).json()
        run_id = listed["run_id"]
        result = server.client.get(f"/api/runs/{run_id}").json()
        assert result["status"] == "interrupted"
        assert f"`stepgraph resume RUNS/{cut.name}`" in result["way_on"]
        refused = server.post(f"/api/runs/{run_id}/continue")
        assert refused.status_code == 409 and "stepgraph resume" in refused.json()["detail"]
        page = server.client.get(f"/runs/{run_id}").text
        assert 'id="way-on"' in page and "stepgraph resume" in page
        assert 'id="continue-button"' not in page
        # Its stream does not wait forever for events nobody will write.
        with (
            httpx.Client(base_url=server.url, timeout=10) as client,
            client.stream("GET", f"/api/runs/{run_id}/events") as stream,
        ):
            lines = list(stream.iter_lines())
        end = json.loads(lines[lines.index("event: end") + 1][6:])
        assert end["reason"] == "interrupted" and "no process writes the run" in end["message"]

"""The HTTP API over a real server: start, follow, decide, fork; safe by default."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx

from stepgraph import Planner
from stepgraph.journal import read_journal
from tests.conftest import ROOT
from tests.planner.conftest import migration_plan
from tests.planner.test_http import SECRET, ChatServer, client, completion
from tests.serve.conftest import start_server


def parked_run(server) -> str:
    response = server.post("/api/runs", task="migration.yaml", approval="ask")
    assert response.status_code == 201, response.text
    run_id = response.json()["run_id"]
    server.wait_status(run_id, "awaiting_approval")
    return run_id


def test_a_decision_about_another_approval_hash_is_refused_and_runs_nothing(server):
    """The page sends the approval hash it showed: a stale or forged one gets 409."""
    run_id = parked_run(server)
    review = server.client.get(f"/api/runs/{run_id}/plan").json()
    assert review["inputs"]["link"] == "450 Mbps" and len(review["approval_hash"]) == 64
    stale = server.post(f"/api/runs/{run_id}/approve", by="eve", approval_hash="0" * 64)
    assert stale.status_code == 409 and "another plan" in stale.json()["detail"]
    assert server.client.get(f"/api/runs/{run_id}").json()["status"] == "awaiting_approval"
    bound = server.post(
        f"/api/runs/{run_id}/approve", by="eve", approval_hash=review["approval_hash"]
    )
    assert bound.status_code == 202, bound.text
    server.wait_status(run_id, "verified")
    approved = read_journal(Path(server.manager.index.get(run_id).path)).of_kind("plan.approved")
    assert [event.approval_hash for event in approved] == [review["approval_hash"]]


def test_a_parked_run_is_reviewed_and_approved_through_the_api(server):
    run_id = parked_run(server)
    [listed] = server.client.get("/api/runs", params={"status": "awaiting_approval"}).json()
    assert listed["run_id"] == run_id and listed["awaiting"] is True
    review = server.client.get(f"/api/runs/{run_id}/plan").json()
    assert review["critical_path"] == ["rate", "per_night", "nights"]
    assert review["side_effects"] == [] and review["diff"] is None
    decided = server.post(f"/api/runs/{run_id}/approve", by="alice")
    assert decided.status_code == 202
    result = server.wait_status(run_id, "verified")
    assert result["answer"] == "3 nights (962.28 GB per night; 2,500 GB in all)"
    linked = {part["text"]: part["step"] for part in result["answer_parts"] if part["step"]}
    assert linked == {"3": "nights", "962.28": "per_night", "2,500": "total"}
    again = server.post(f"/api/runs/{run_id}/approve", by="alice")
    assert again.status_code == 409 and "not awaiting approval" in again.json()["detail"]


def test_an_edit_through_the_api_parks_again_with_its_diff(server):
    run_id = parked_run(server)
    plan = server.client.get(f"/api/runs/{run_id}/plan").json()["plan"]
    plan["steps"][3]["args"]["expression"] = "floor(${total} / ${per_night})"
    bad = json.loads(json.dumps(plan))
    bad["steps"][3]["args"]["expression"] = "${nowhere} + 1"
    refused = server.post(f"/api/runs/{run_id}/edit", by="eve", plan=bad)
    assert refused.status_code == 400 and "nowhere" in refused.json()["detail"]
    assert server.client.get(f"/api/runs/{run_id}").json()["status"] == "awaiting_approval"
    assert server.post(f"/api/runs/{run_id}/edit", by="eve", plan=plan).status_code == 202
    server.manager.join()
    review = server.client.get(f"/api/runs/{run_id}/plan").json()
    assert review["diff"]["changed"]["nights"]["args"][1]["expression"].startswith("floor")
    page = server.client.get(f"/runs/{run_id}/approve").text
    assert "Changes against the plan reviewed before" in page and "floor" in page


def test_the_event_stream_replays_the_journal_then_ends_and_resumes_after_an_id(server):
    run_id = server.post("/api/runs", task="migration.yaml").json()["run_id"]
    server.wait_status(run_id, "verified")
    with server.client.stream("GET", f"/api/runs/{run_id}/events") as stream:
        assert stream.headers["content-type"].startswith("text/event-stream")
        events = [
            json.loads(line[6:]) for line in stream.iter_lines() if line.startswith('data: {"')
        ]
    journal = read_journal(Path(server.manager.row(run_id).path))
    assert [(e["seq"], e["event"]) for e in events] == [(e.seq, e.event) for e in journal.events]
    with server.client.stream(
        "GET", f"/api/runs/{run_id}/events", headers={"Last-Event-ID": "20"}
    ) as stream:
        rest = [json.loads(line[6:]) for line in stream.iter_lines() if line.startswith('data: {"')]
    assert rest[0]["seq"] == 21 and rest[-1]["event"] == "run.end"


def test_fork_and_replay_through_the_api(server):
    run_id = server.post("/api/runs", task="migration.yaml").json()["run_id"]
    server.wait_status(run_id, "verified")
    fork = server.post(f"/api/runs/{run_id}/fork", step="nights").json()
    assert server.wait_status(fork["run_id"], "verified")["parent"] == run_id
    assert server.post(f"/api/runs/{run_id}/fork", step="nope").status_code == 400
    assert server.post(f"/api/runs/{run_id}/replay").json()["identical"] is True


def test_a_replay_is_a_run_of_its_own_linked_to_the_one_it_replays(server):
    """The replay's row has its own id and page, which links back; the run's page is the run's."""
    run_id = server.post("/api/runs", task="migration.yaml").json()["run_id"]
    server.wait_status(run_id, "verified")
    assert server.post(f"/api/runs/{run_id}/replay").json()["identical"] is True
    rows = server.client.get("/api/runs").json()
    [replayed] = [row for row in rows if row["replay_of"] == run_id]
    assert replayed["run_id"] != run_id
    page = server.client.get(f"/runs/{replayed['run_id']}")
    assert page.status_code == 200
    assert 'id="replay-of-link"' in page.text and f'href="/runs/{run_id}"' in page.text
    original = server.client.get(f"/runs/{run_id}")
    assert original.status_code == 200 and 'id="replay-of-link"' not in original.text
    assert server.client.get(f"/api/runs/{run_id}").json()["replay_of"] is None


def test_bad_requests_get_clear_errors_and_change_nothing(server):
    outside = server.post("/api/runs", task="../secret.yaml")
    assert (
        outside.status_code == 400 and "inside the server's workspace" in outside.json()["detail"]
    )
    assert server.post("/api/runs").status_code == 400
    no_planner = server.post("/api/runs", goal="how many nights?")
    assert no_planner.status_code == 400 and "no planner" in no_planner.json()["detail"]
    assert server.client.get("/api/runs/nosuchrun").status_code == 404
    assert server.post("/api/runs/nosuchrun/approve", by="x").status_code == 404
    run_id = parked_run(server)
    assert server.post(f"/api/runs/{run_id}/approve", by="").status_code == 422
    revise = server.post(f"/api/runs/{run_id}/revise", by="x", comment="shorter")
    assert revise.status_code == 409 and "planner" in revise.json()["detail"]
    assert server.client.get(f"/api/runs/{run_id}").json()["status"] == "awaiting_approval"
    assert server.client.get("/openapi.json").json()["paths"]["/api/runs/{run_id}/approve"]


def test_changes_need_the_csrf_token_and_a_same_site_origin(server):
    run_id = parked_run(server)
    plain = server.client.post(f"/api/runs/{run_id}/reject", json={"by": "mallory"})
    assert plain.status_code == 403 and "CSRF" in plain.text
    forged = server.client.post(
        f"/api/runs/{run_id}/reject",
        json={"by": "mallory"},
        headers={"X-CSRF-Token": server.csrf, "Origin": "https://evil.example"},
    )
    assert forged.status_code == 403 and "cross-site" in forged.text
    assert server.client.get(f"/api/runs/{run_id}").json()["status"] == "awaiting_approval"
    page = server.client.get(f"/runs/{run_id}/approve").text
    assert f'data-csrf="{server.csrf}"' in page


def test_a_token_guards_every_request_when_one_is_set(tmp_path):
    for server in start_server(tmp_path, token="t0ken"):
        bare = httpx.get(f"{server.url}/api/runs")
        assert bare.status_code == 401
        assert server.client.get("/api/runs").status_code == 200  # Authorization: Bearer
        with httpx.Client(base_url=server.url) as browser:
            signed_in = browser.get("/?token=t0ken", follow_redirects=False)
            assert signed_in.status_code == 303 and signed_in.headers["location"] == "/"
            assert browser.get("/").status_code == 200  # the cookie carries it now
            assert httpx.get(f"{server.url}/?token=wrong").status_code == 401


def test_binding_beyond_this_machine_needs_a_token(tmp_path):
    refused = subprocess.run(
        [sys.executable, "-m", "stepgraph", "serve", "--host", "0.0.0.0", "--runs", str(tmp_path)],
        capture_output=True, text=True, cwd=ROOT, stdin=subprocess.DEVNULL, check=False,
        env={"PATH": "/usr/bin:/bin", "COLUMNS": "200"},
    )  # fmt: skip
    assert refused.returncode == 2 and "give --token" in refused.stderr


def test_no_api_key_reaches_a_page_an_event_or_the_index(tmp_path, httpserver):
    plan = completion(migration_plan("ceil", answer="${nights}"))
    model = ChatServer(httpserver, [(200, plan)])
    planner = Planner(client(model.url))
    for server in start_server(tmp_path, planner=planner):
        (server.workspace / "planned.yaml").write_text(
            "goal: nights to move the data\n"
            "inputs: {data: 2.5 TB, link: 450 Mbps}\nanswer: '${nights} nights'\n"
        )
        run_id = server.post("/api/runs", task="planned.yaml").json()["run_id"]
        result = server.wait_status(run_id, "verified")
        assert model.requests[0]["auth"] == f"Bearer {SECRET}"  # the key was used ...
        seen = [
            json.dumps(result),
            server.client.get("/").text,
            server.client.get(f"/runs/{run_id}").text,
            server.client.get("/api/runs").text,
        ]
        with server.client.stream("GET", f"/api/runs/{run_id}/events") as stream:
            seen.append("".join(stream.iter_lines()))
        seen.append((server.runs / ".index.sqlite3").read_bytes().decode("latin-1"))
        assert "llm.request" in seen[4]  # ... and the model exchange is in the stream
        assert not [text for text in seen if SECRET in text]  # ... but the key is nowhere


def test_a_parked_run_survives_a_restart_of_the_server(tmp_path):
    before = start_server(tmp_path)
    server = next(before)
    run_id = parked_run(server)
    before.close()  # the server that started the run is gone
    for server in start_server(tmp_path):
        assert server.client.get(f"/api/runs/{run_id}").json()["status"] == "awaiting_approval"
        assert server.post(f"/api/runs/{run_id}/approve", by="after-restart").status_code == 202
        assert server.wait_status(run_id, "verified")["answer"].startswith("3 nights")

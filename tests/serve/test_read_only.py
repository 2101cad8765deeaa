"""`stepgraph serve` over a read-only runs folder: browsing works, writing says why it cannot."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

from stepgraph import ApprovalPolicy, Engine
from tests.conftest import EXAMPLES
from tests.journal.test_index_readonly import SOURCE, read_only
from tests.serve.conftest import start_server

MIGRATION = EXAMPLES / "migration.yaml"

# The app in the process that cannot write the folder; what it answered, as JSON.
BROWSE = """
import json
import sys
from pathlib import Path

from starlette.testclient import TestClient

from stepgraph.serve import create_app

runs, workspace, done, parked = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4]
app = create_app(runs, workspace=workspace, allow_hosts=["testserver"])
with TestClient(app) as client:
    csrf = {"X-CSRF-Token": client.get("/api/session").json()["csrf_token"]}
    started = client.post("/api/runs", json={"task": "migration.yaml"}, headers=csrf)
    approved = client.post(f"/api/runs/{parked}/approve", json={"by": "ann"}, headers=csrf)
    print(json.dumps({
        "listed": sorted(row["run_id"] for row in client.get("/api/runs").json()),
        "status": client.get(f"/api/runs/{done}").json()["status"],
        "page": client.get(f"/runs/{done}").status_code,
        "home": client.get("/").text,
        "started": [started.status_code, started.json()["detail"]],
        "approved": [approved.status_code, approved.json()["detail"]],
    }))
"""


def test_a_read_only_runs_folder_is_browsed_and_a_start_or_a_decision_says_why_not(tmp_path):
    runs, workspace = tmp_path / "runs", tmp_path / "workspace"
    workspace.mkdir()
    shutil.copy(MIGRATION, workspace / "migration.yaml")
    done = Engine().run(MIGRATION, journal=runs / "a.jsonl")
    parked = Engine().run(MIGRATION, journal=runs / "b.jsonl", approval=ApprovalPolicy.ASK)
    prefix = read_only(runs)
    try:
        answered = subprocess.run(
            [*prefix, sys.executable, "-c", BROWSE, str(runs), str(workspace),
             done.run_id, parked.run_id],
            capture_output=True, text=True, check=False,
            env={**os.environ, "PYTHONPATH": SOURCE},
        )  # fmt: skip
    finally:
        runs.chmod(0o755)
    assert answered.returncode == 0, answered.stderr
    seen = json.loads(answered.stdout)
    print(seen["started"], seen["approved"])
    assert seen["listed"] == sorted([done.run_id, parked.run_id])
    assert seen["status"] == "verified" and seen["page"] == 200
    assert 'id="index-note"' in seen["home"] and "kept in memory" in seen["home"]
    status, detail = seen["started"]
    assert status == 503 and detail.startswith("cannot start the run: cannot write the journal")
    assert str(runs) not in detail  # the server's own paths stay on the server
    status, detail = seen["approved"]
    assert status == 503 and "cannot record the decision: cannot write the journal" in detail
    assert sorted(runs.glob("*.jsonl")) == [runs / "a.jsonl", runs / "b.jsonl"]


def test_an_index_that_cannot_be_written_is_noted_on_the_run_list(tmp_path):
    """In process (no mount needed): the index's name taken by a folder."""
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / ".index.sqlite3").mkdir()
    for server in start_server(tmp_path):
        run_id = server.post("/api/runs", task="migration.yaml").json()["run_id"]
        assert server.wait_status(run_id, "verified")["answer"].startswith("3 nights")
        assert "kept in memory" in server.client.get("/").text

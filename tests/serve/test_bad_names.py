"""Names and numbers a client sends that the system cannot use get a clear 4xx, never a 500."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.serve.conftest import Server

BEYOND_64_BITS = str(2**64 + 1)
ONE_STEP = """
name: {name}
goal: add one and one
plan:
  steps:
    - {{id: a, tool: calculate, args: {{expression: "1 + 1"}}}}
  answer: "${{a}}"
"""


def post_raw(server: Server, path: str, body: str):  # type: ignore[no-untyped-def]
    """A body as written: JSON escapes such as a lone surrogate reach the server as they are."""
    headers = {"X-CSRF-Token": server.csrf, "Content-Type": "application/json"}
    return server.client.post(path, content=body, headers=headers)


@pytest.mark.parametrize(
    ("body", "status", "said"),
    [
        ('{"task": "migration.yaml\\u0000"}', 400, "contains a NUL character"),
        ('{"task": "a/\\u0000/b.yaml"}', 400, "contains a NUL character"),
        ('{"task": "\\ud800.yaml"}', 422, "valid string"),
    ],
)
def test_a_task_path_no_file_can_have_is_a_clear_4xx(server, body, status, said):
    """A NUL or an unpaired surrogate in the task's path: refused, and the server goes on."""
    response = post_raw(server, "/api/runs", body)
    assert response.status_code == status, response.text
    assert said in json.dumps(response.json())
    assert server.client.get("/api/runs").status_code == 200
    assert list(server.runs.glob("*.jsonl")) == []


@pytest.mark.parametrize("name", ['"a\\0b"', '"../../../escaped"', '"a/b"'])
def test_a_task_name_is_kept_inside_the_runs_folder_as_a_plain_file_name(server, name):
    """The task's own name becomes part of its journal's file name, harmlessly."""
    (server.workspace / "named.yaml").write_text(ONE_STEP.format(name=name), encoding="utf-8")
    started = server.post("/api/runs", task="named.yaml")
    assert started.status_code == 201, started.text
    run_id = started.json()["run_id"]
    assert server.wait_status(run_id, "verified", "unchecked")["answer"] == "2"
    journal = Path(server.manager.row(run_id).path)
    assert journal.parent == server.runs and "\0" not in journal.name
    assert [p.parent for p in server.runs.parent.rglob("*.jsonl")] == [server.runs]


def test_a_fork_step_that_is_a_path_stays_inside_the_runs_folder(server):
    """A step id from the client is data: `../x` neither names a file elsewhere nor a 500."""
    run_id = server.post("/api/runs", task="migration.yaml").json()["run_id"]
    server.wait_status(run_id, "verified")
    refused = server.post(f"/api/runs/{run_id}/fork", step="../../../outside")
    assert refused.status_code == 400 and "outside" in refused.json()["detail"]
    assert not list(server.runs.parent.rglob("outside*"))
    nul = server.post(f"/api/runs/{run_id}/fork", step="a\0b")
    assert nul.status_code == 400


@pytest.mark.parametrize("limit", [BEYOND_64_BITS, "-1", "0", "ten", "1e3"])
def test_a_list_limit_beyond_64_bits_negative_or_not_a_number_is_a_422(server, limit):
    for path in ("/api/runs", "/api/runs/any/events/page"):
        response = server.client.get(path, params={"limit": limit})
        assert response.status_code == 422, (path, response.text)
        assert response.json()["detail"][0]["loc"] == ["query", "limit"]


def test_a_journal_offset_beyond_64_bits_is_a_400_for_a_page_and_for_the_stream(server):
    run_id = server.post("/api/runs", task="migration.yaml").json()["run_id"]
    server.wait_status(run_id, "verified")
    page = server.client.get(f"/api/runs/{run_id}/events/page", params={"offset": BEYOND_64_BITS})
    assert page.status_code == 400 and "not the start of a line" in page.json()["detail"]
    stream = server.client.get(f"/api/runs/{run_id}/events", params={"offset": BEYOND_64_BITS})
    assert stream.status_code == 400 and "not the start of a line" in stream.json()["detail"]
    far = server.client.get(f"/api/runs/{run_id}/events/page", params={"after": BEYOND_64_BITS})
    assert far.status_code == 200 and far.json()["events"] == []

"""The network face of `stepgraph serve`: only its own names, bounded bodies and fields."""

from __future__ import annotations

import subprocess
import sys

import pytest

from stepgraph.guards import MAX_BODY, AllowedHosts, is_loopback, split_host
from tests.conftest import ROOT
from tests.serve.conftest import start_server
from tests.serve.test_api import parked_run


def test_a_foreign_host_name_gets_421_and_neither_the_csrf_token_nor_a_decision(server):
    """DNS rebinding: a page on evil.example (resolving to 127.0.0.1) learns and changes nothing."""
    run_id = parked_run(server)
    evil = {"Host": "evil.example"}
    session = server.client.get("/api/session", headers=evil)
    assert session.status_code == 421 and "evil.example" in session.text
    assert server.csrf not in session.text and "--allow-host" in session.text
    decided = server.client.post(
        f"/api/runs/{run_id}/approve",
        json={"by": "mallory"},
        headers={**evil, "X-CSRF-Token": server.csrf},
    )
    assert decided.status_code == 421
    assert server.client.get(f"/api/runs/{run_id}").json()["status"] == "awaiting_approval"


def test_loopback_names_are_answered_at_the_server_s_port(server):
    """127.0.0.1, localhost and [::1] (with or without the port) reach the server."""
    for host in ("127.0.0.1", "localhost:8750", "LOCALHOST", "[::1]:1234"):
        response = server.client.get("/api/session", headers={"Host": host})
        assert response.status_code == 200, host


def test_an_allowed_host_name_is_answered_and_the_port_must_match(tmp_path):
    """A name given with allow_hosts (--allow-host) is served; at a port given, only at it."""
    for server in start_server(tmp_path, allow_hosts=["runs.lan"]):
        port = int(server.url.rsplit(":", 1)[1])
        assert server.client.get("/", headers={"Host": f"runs.lan:{port}"}).status_code == 200
        assert server.client.get("/", headers={"Host": "other.lan"}).status_code == 421
    hosts = AllowedHosts.of("0.0.0.0", port=8750, extra=["Runs.LAN", "::2"])
    assert hosts.allows("runs.lan:8750") and hosts.allows("[::2]:8750") and hosts.allows("runs.lan")
    assert hosts.allows("0.0.0.0:8750") and hosts.allows("localhost:8750")
    assert not hosts.allows("runs.lan:8751") and not hosts.allows("") and not hosts.allows(None)
    assert not hosts.allows("runs.lan:x") and not hosts.allows("runs.lan.evil.example:8750")


def test_host_headers_and_loopback_addresses_are_read_as_written():
    """Names, ports and IPv6 brackets split apart; loopback is told from the rest."""
    assert split_host("[::1]:8750") == ("[::1]", 8750)
    assert split_host("Example.com") == ("example.com", None)
    assert split_host("a:b") == ("a", -1)
    assert [is_loopback(h) for h in ("127.0.0.1", "127.9.9.9", "::1", "localhost")] == [True] * 4
    assert not any(is_loopback(h) for h in ("0.0.0.0", "10.0.0.1", "example.com", "::"))


def test_a_body_over_the_limit_gets_413_by_its_length_or_by_the_bytes_streamed(server):
    """Content-Length over the limit, or a chunked body that grows over it: 413, nothing done."""
    run_id = parked_run(server)
    headers = {"X-CSRF-Token": server.csrf, "Content-Type": "application/json"}
    big = b'{"by": "' + b"a" * (MAX_BODY + 10) + b'"}'
    declared = server.client.post(f"/api/runs/{run_id}/approve", content=big, headers=headers)
    assert declared.status_code == 413 and str(MAX_BODY) in declared.text

    def chunks():
        yield b'{"by": "'
        for _ in range(MAX_BODY // 65536 + 2):
            yield b"a" * 65536
        yield b'"}'

    streamed = server.client.post(f"/api/runs/{run_id}/approve", content=chunks(), headers=headers)
    assert "content-length" not in {k.lower() for k in streamed.request.headers}
    assert streamed.status_code == 413
    assert server.client.get(f"/api/runs/{run_id}").json()["status"] == "awaiting_approval"


def test_a_small_chunked_body_still_reaches_the_api(server):
    """The limit reads the body once and hands it on whole: a chunked approval works."""
    run_id = parked_run(server)
    headers = {"X-CSRF-Token": server.csrf, "Content-Type": "application/json"}
    body = iter([b'{"by": ', b'"alice"}'])
    decided = server.client.post(f"/api/runs/{run_id}/approve", content=body, headers=headers)
    assert decided.status_code == 202, decided.text
    assert server.wait_status(run_id, "verified")["status"] == "verified"


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("approve", {"by": "a" * 201}),
        ("revise", {"by": "ann", "comment": "c" * 10_001}),
        ("fork", {"step": "s" * 101}),
    ],
)
def test_fields_over_their_bounds_are_refused_with_422(server, path, body):
    """A name of 201 characters, a long comment, a long step id: 422 before anything runs."""
    run_id = parked_run(server)
    response = server.post(f"/api/runs/{run_id}/{path}", **body)
    assert response.status_code == 422, response.text
    assert server.client.get(f"/api/runs/{run_id}").json()["status"] == "awaiting_approval"


def test_input_overrides_are_bounded_in_number_and_length(server):
    """`set` takes at most 100 inputs of at most 10,000 characters each."""
    long_value = server.post("/api/runs", task="migration.yaml", set={"data": "9" * 10_001})
    many = server.post("/api/runs", task="migration.yaml", set={f"i{n}": "1" for n in range(101)})
    assert long_value.status_code == 422 and many.status_code == 422
    assert server.client.get("/api/runs").json() == []


def test_serve_takes_allow_host_and_still_refuses_a_network_bind_without_a_token(tmp_path):
    """`--allow-host` is an option of `stepgraph serve`; 0.0.0.0 without --token exits 2."""
    refused = subprocess.run(
        [sys.executable, "-m", "stepgraph", "serve", "--host", "0.0.0.0", "--allow-host",
         "runs.lan", "--runs", str(tmp_path)],
        capture_output=True, text=True, cwd=ROOT, stdin=subprocess.DEVNULL, check=False,
        env={"PATH": "/usr/bin:/bin", "COLUMNS": "200", "PYTHONPATH": str(ROOT / "src")},
    )  # fmt: skip
    assert refused.returncode == 2 and "give --token" in refused.stderr, refused.stderr


def test_a_workspace_task_loading_a_plugin_from_outside_the_workspace_is_refused(tmp_path):
    """The server trusts its workspace: a task file there cannot pull in code from elsewhere."""
    from stepgraph.exceptions import TaskFileError
    from stepgraph.serve._runs import RunManager

    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (tmp_path / "evil.py").write_text(
        "from pathlib import Path\nPath(__file__).with_name('imported.marker').touch()\n"
    )
    task = "name: t\ngoal: g\nplugins: [../evil.py]\nplan:\n  steps:\n"
    task += "    - {id: a, tool: calculate, args: {expression: '1 + 1'}}\n"
    (workspace / "t.yaml").write_text(task)
    manager = RunManager(tmp_path / "runs", workspace=workspace)
    with pytest.raises(TaskFileError, match="outside the workspace"):
        manager.start(task="t.yaml", goal=None, overrides={}, approval=None)
    assert not (tmp_path / "imported.marker").exists()

"""`stepgraph mcp --transport http`: a token beyond loopback, a bearer check, a Host check."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import ROOT
from tests.tools.conftest import free_port, wait_for_port

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def environment(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "STEPGRAPH"))}
    return {**env, "PYTHONPATH": str(ROOT / "src"), "COLUMNS": "200", **extra}


def mcp(*options: str) -> list[str]:
    return [sys.executable, "-m", "stepgraph", "mcp", "--transport", "http", *options]


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    """A server with a token (from the environment) that also answers to mcp.lan."""
    root = tmp_path_factory.mktemp("root")
    port = free_port()
    process = subprocess.Popen(
        mcp("--root", str(root), "--port", str(port), "--allow-host", "mcp.lan"),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env=environment(STEPGRAPH_MCP_TOKEN="s3cret"),
    )  # fmt: skip
    try:
        wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}/mcp", port
    finally:
        process.terminate()
        process.communicate(timeout=10)


def test_binding_beyond_loopback_without_a_token_is_refused(tmp_path: Path):
    """0.0.0.0 with no --token: exit 2 and a message that says to give one."""
    refused = subprocess.run(
        mcp("--host", "0.0.0.0", "--root", str(tmp_path)),
        capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False, env=environment(),
    )  # fmt: skip
    assert refused.returncode == 2, refused.stderr
    assert "give --token" in refused.stderr and "STEPGRAPH_MCP_TOKEN" in refused.stderr


def test_every_request_needs_the_bearer_token(guarded):
    """No token or a wrong one: 401; the right one: the MCP handshake answers."""
    url, _ = guarded
    assert httpx.post(url, json=INITIALIZE, headers=ACCEPT).status_code == 401
    wrong = httpx.post(url, json=INITIALIZE, headers={**ACCEPT, "Authorization": "Bearer no"})
    assert wrong.status_code == 401 and "token" in wrong.text
    right = httpx.post(url, json=INITIALIZE, headers={**ACCEPT, "Authorization": "Bearer s3cret"})
    assert right.status_code == 200, right.text


def test_a_foreign_host_gets_421_even_with_the_token_and_an_allowed_name_is_answered(guarded):
    """DNS rebinding: evil.example is refused; --allow-host mcp.lan at the port is served."""
    url, port = guarded
    auth = {**ACCEPT, "Authorization": "Bearer s3cret"}
    evil = httpx.post(url, json=INITIALIZE, headers={**auth, "Host": f"evil.example:{port}"})
    assert evil.status_code == 421
    lan = httpx.post(url, json=INITIALIZE, headers={**auth, "Host": f"mcp.lan:{port}"})
    assert lan.status_code == 200, lan.text


def test_where_it_listens_is_printed_on_stderr():
    """The first line on stderr is `stepgraph mcp: http://HOST:PORT/mcp`."""
    port = free_port()
    process = subprocess.Popen(
        mcp("--port", str(port), "--root", "."), stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True, env=environment(), cwd=ROOT,
    )  # fmt: skip
    try:
        # The line itself, not the port: the socket listens a moment before it is printed.
        assert process.stderr is not None
        first = process.stderr.readline().strip()
        wait_for_port(port, process)
    finally:
        process.terminate()
        process.communicate(timeout=10)
    assert first == f"stepgraph mcp: http://127.0.0.1:{port}/mcp"

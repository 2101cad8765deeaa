"""Real MCP servers written with the SDK, started as subprocesses over stdio and HTTP."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from stepgraph.model import McpServerSpec

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_SERVER = ROOT / "examples" / "mcp_server.py"
FAULTY_SERVER = Path(__file__).with_name("faulty_mcp_server.py")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for_port(port: int, process: subprocess.Popen[bytes], limit: float = 30.0) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on port {port} after {limit:g} s")


@pytest.fixture(scope="session")
def http_url() -> Iterator[str]:
    """The example server over streamable HTTP on 127.0.0.1 and a free port."""
    port = free_port()
    command = [sys.executable, str(EXAMPLE_SERVER), "--transport", "http", "--port", str(port)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture(params=["stdio", "http"])
def example_server(request: pytest.FixtureRequest) -> McpServerSpec:
    """The example server, trusted, over each transport in turn."""
    if request.param == "stdio":
        return McpServerSpec(
            name="units", command=sys.executable, args=[str(EXAMPLE_SERVER)], trusted=True
        )
    url = request.getfixturevalue("http_url")
    return McpServerSpec(name="units", url=url, trusted=True)


def faulty(*args: str, **fields: object) -> McpServerSpec:
    """The faulty server over stdio."""
    return McpServerSpec.model_validate(
        {
            "name": "faulty",
            "command": sys.executable,
            "args": [str(FAULTY_SERVER), *args],
            "trusted": True,
            **fields,
        }
    )


@contextmanager
def faulty_over(transport: str, **fields: object) -> Iterator[McpServerSpec]:
    """The faulty server over stdio, or started over HTTP for one test (it may crash)."""
    if transport == "stdio":
        yield faulty(**fields)
        return
    port = free_port()
    command = [sys.executable, str(FAULTY_SERVER), "--port", str(port)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, process)
        url = f"http://127.0.0.1:{port}/mcp"
        yield McpServerSpec.model_validate(
            {"name": "faulty", "url": url, "trusted": True, **fields}
        )
    finally:
        process.kill()
        process.wait(timeout=10)

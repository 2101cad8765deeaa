"""Benchmark 5: what a tool call costs when the tool lives in an MCP server, against a local one.

The same plan of independent lookups runs with `link_speed` as a local `@tool` and as
the example server's tool (examples/mcp_server.py) over stdio and over streamable HTTP
on 127.0.0.1; a bare loop of the SDK's own `call_tool` shows what the transport costs
before stepgraph adds anything.
"""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from benchmarks._common import table
from stepgraph import McpServerSpec, StepGraph, tool
from stepgraph.executor import execute, validate_plan
from stepgraph.journal import NullJournal
from stepgraph.tools import ToolRegistry, start_servers

SERVER = Path(__file__).resolve().parent.parent / "examples" / "mcp_server.py"


@tool
def link_speed(link: str) -> str:
    """The nominal speed of a named network link, with its unit (local twin of the MCP tool)."""
    return {"office-uplink": "450 Mbit/s"}[link]


def _plan(steps: int) -> StepGraph:
    lookups = [
        {"id": f"s{i}", "tool": "link_speed", "args": {"link": "office-uplink"}}
        for i in range(steps)
    ]
    return StepGraph.model_validate({"steps": lookups})


@contextmanager
def _http_server() -> Iterator[str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, str(SERVER), "--transport", "http", "--port", str(port)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)


def _bare_sdk(server: object, calls: int) -> float:
    """Seconds for `calls` sequential SDK calls on one open session (connect not counted)."""
    from mcp import Client, StdioServerParameters

    if server == "stdio":
        server = StdioServerParameters(command=sys.executable, args=[str(SERVER)])

    async def go() -> float:
        async with Client(server) as client:  # type: ignore[arg-type]
            started = time.perf_counter()
            for _ in range(calls):
                await client.call_tool("link_speed", {"link": "office-uplink"})
            return time.perf_counter() - started

    return asyncio.run(go())


def _timed(function: Callable[[], object]) -> float:
    started = time.perf_counter()
    function()
    return time.perf_counter() - started


def run(steps: int = 500, workers: int = 4, repeats: int = 3) -> str:
    """Microseconds per step for each source of the tool (best of `repeats`), and start times."""
    local = ToolRegistry([link_speed])
    rows: list[list[object]] = []
    with _http_server() as url:
        specs = {
            "MCP over stdio": McpServerSpec(command=sys.executable, args=[str(SERVER)]),
            "MCP over streamable HTTP": McpServerSpec(url=url),
        }
        registries: dict[str, ToolRegistry] = {"local @tool": local}
        stacks = []
        start_ms: dict[str, object] = {"local @tool": ""}
        for name, spec in specs.items():
            registry = ToolRegistry()
            started = time.perf_counter()
            stacks.append(start_servers([spec], registry, SERVER.parent))
            start_ms[name] = (time.perf_counter() - started) * 1000
            registries[name] = registry
        try:
            graphs = {
                name: validate_plan(_plan(steps), tools) for name, tools in registries.items()
            }
            best = dict.fromkeys(registries, float("inf"))
            for _ in range(repeats):
                for name, tools in registries.items():
                    seconds = _timed(
                        lambda n=name, t=tools: execute(
                            graphs[n], t, {}, NullJournal(), max_workers=workers
                        )
                    )
                    best[name] = min(best[name], seconds)
            bare = {
                transport: min(_bare_sdk(server, steps) for _ in range(repeats))
                for transport, server in (("stdio", "stdio"), ("HTTP", url))
            }
        finally:
            for stack in stacks:
                stack.close()
    local_us = best["local @tool"] * 1e6 / steps
    for name, seconds in best.items():
        us = seconds * 1e6 / steps
        rows.append([name, us, us / local_us, start_ms[name]])
    for transport, seconds in bare.items():
        us = seconds * 1e6 / steps
        rows.append([f"bare SDK call_tool, {transport}, one at a time", us, us / local_us, ""])
    title = f"6. MCP tool calls ({steps} independent lookups, {workers} workers, best of {repeats})"
    header = ["tool source", "us / step", "x local", "start ms"]
    note = (
        "Start: launching the server and listing its tools, once per run. "
        "The stdio server is a Python subprocess; HTTP talks to a server already running.\n"
    )
    return table(title, header, rows) + "\n" + note

"""`stepgraph mcp` as clients meet it: the SDK's own client, over stdio and streamable HTTP.

One server per transport serves the whole folder's tests (package scope): starting one
costs a second or two.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import get_default_environment
from mcp.types import CallToolResult

import stepgraph
from tests.conftest import EXAMPLES
from tests.tools.conftest import free_port, wait_for_port

Server = StdioServerParameters | str

ONE_STEP = {"steps": [{"id": "a", "tool": "calculate", "args": {"expression": "1 + 1"}}]}

BOOKING_PLUGIN = '''
from pathlib import Path

from stepgraph import tool

CALLS = Path(__file__).parent / "calls.log"


@tool(side_effects=True)
def book_window(hours: float) -> str:
    """Book a maintenance window (changes the calendar).

    Args:
        hours: Length of the window.
    """
    with CALLS.open("a") as log:
        log.write(f"{hours:g}\\n")
    return f"booked {hours:g} h"
'''

BOOKING_TASK = """
goal: book a window as long as one night's transfer takes
tools: [calculate, book_window]
plugins: [booking.py]
plan:
  steps:
    - {id: hours, tool: calculate, args: {expression: "6 * 1"}}
    - {id: booking, tool: book_window, args: {hours: "${hours}"}}
  answer: "${booking}"
"""


@pytest.fixture(scope="package")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A server root holding the examples and a task with a side-effecting tool."""
    folder = tmp_path_factory.mktemp("root")
    shutil.copytree(EXAMPLES, folder / "examples")
    (folder / "booking.py").write_text(BOOKING_PLUGIN, encoding="utf-8")
    (folder / "booking.yaml").write_text(BOOKING_TASK, encoding="utf-8")
    auto = BOOKING_TASK.replace("plugins:", "approval: auto\nplugins:")
    (folder / "booking-auto.yaml").write_text(auto, encoding="utf-8")
    (folder / "broken.yaml").write_text("goal: [unclosed", encoding="utf-8")
    return folder


def stdio(root: Path, *options: str) -> StdioServerParameters:
    args = ["-m", "stepgraph", "mcp", "--root", str(root), *options]
    # The SDK hands a server only HOME, PATH, SHELL and TERM: without PYTHONPATH it would
    # import whichever stepgraph the interpreter has installed, not the one under test.
    env = {**get_default_environment(), "PYTHONPATH": str(Path(stepgraph.__file__).parents[1])}
    return StdioServerParameters(command=sys.executable, args=args, env=env)


@pytest.fixture(scope="package")
def http_url(root: Path) -> Iterator[str]:
    port = free_port()
    command = [sys.executable, "-m", "stepgraph", "mcp", "--root", str(root)]
    command += ["--transport", "http", "--port", str(port)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)


class LiveClient:
    """The SDK's client, connected once for many tests: its loop runs on a thread."""

    def __init__(self, server: Server) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.ready: Future[Client] = Future()
        self.stop = threading.Event()
        self.task = asyncio.run_coroutine_threadsafe(self._hold(server), self.loop)
        self.client = self.ready.result(timeout=60)

    async def _hold(self, server: Server) -> None:
        try:
            async with Client(server) as client:
                self.ready.set_result(client)
                while not self.stop.is_set():
                    await asyncio.sleep(0.05)
        except BaseException as e:
            if not self.ready.done():
                self.ready.set_exception(e)
            raise

    def __call__(self, scenario: Callable[[Client], Awaitable[Any]]) -> Any:
        future = asyncio.run_coroutine_threadsafe(scenario(self.client), self.loop)
        return future.result(timeout=120)

    def close(self) -> None:
        self.stop.set()
        self.task.result(timeout=30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        self.loop.close()


@pytest.fixture(scope="package", params=["stdio", "http"])
def server(request: pytest.FixtureRequest, root: Path) -> Iterator[LiveClient]:
    """One connected client per transport, shared by the folder's tests."""
    if request.param == "stdio":
        live = LiveClient(stdio(root))
    else:
        live = LiveClient(str(request.getfixturevalue("http_url")))
    yield live
    live.close()


def session(server: Server | LiveClient, scenario: Callable[[Client], Awaitable[Any]]) -> Any:
    """Play the scenario on a connected client, or connect the SDK's client for it."""
    if isinstance(server, LiveClient):
        return server(scenario)

    async def go() -> Any:
        async with Client(server) as client:
            return await scenario(client)

    return asyncio.run(go())


def call(server: Server | LiveClient, tool: str, args: dict[str, Any]) -> CallToolResult:
    return session(server, lambda client: client.call_tool(tool, args))

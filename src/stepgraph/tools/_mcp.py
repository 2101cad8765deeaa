"""MCP servers as tool sources: started with a run, their tools in the registry, stopped after.

Each server gets one `McpConnection`: an event loop on its own thread holding one
`mcp.Client` session, so the engine's worker threads call tools synchronously and
every wait is bounded (start, call and stop), whatever the server does.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Iterable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import ExitStack
from pathlib import Path
from typing import IO, Any

from mcp import Client, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT, TextContent

from stepgraph.exceptions import McpServerError, NonRetryableError
from stepgraph.model import McpServerSpec
from stepgraph.tools._mcp_tool import McpTool, McpToolDefinition, result_value

STOP_TIMEOUT = 10.0  # the SDK stops a stdio server in at most ~6 s (close stdin, TERM, KILL)
MAX_TOOL_PAGES = 100  # a server whose tool list never ends cannot hang the start
_STDERR_TAIL = 600


class McpConnection:
    """One running MCP server and its client session."""

    def __init__(self, spec: McpServerSpec, base_dir: Path) -> None:
        self.spec = spec
        self.base_dir = base_dir
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name=f"mcp-{spec.label}", daemon=True
        )
        self._client: Client | None = None
        self._ready: Future[list[McpToolDefinition]] = Future()
        self._stop: asyncio.Event | None = None
        self._task: Future[None] | None = None
        self._serving: asyncio.Task[None] | None = None
        self._finished = threading.Event()
        self._gone: BaseException | None = None  # why the session ended before we stopped it
        self._stderr: IO[str] | None = None
        self._last_words = ""

    def _transport(self) -> Any:
        spec = self.spec
        if spec.url is not None:
            return spec.url
        command = spec.command or ""
        if command in ("python", "python3"):  # the interpreter stepgraph runs in, with its packages
            command = sys.executable
        elif shutil.which(command, path=None) is None and not (self.base_dir / command).exists():
            raise McpServerError(
                f"failed to start: command not found: {command}", server=spec.label
            )
        # Outlives this call (the server writes to it until it stops); `close` closes it.
        self._stderr = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115
        # `${VAR}` in a value is read from our environment, so a secret stays out of the journal.
        env = {key: os.path.expandvars(value) for key, value in spec.env.items()}
        params = StdioServerParameters(
            command=command, args=spec.args, env=env or None, cwd=self.base_dir
        )
        return stdio_client(params, errlog=self._stderr)

    def open(self) -> list[McpTool]:
        """Start the server and list its tools; raise `McpServerError` if it cannot, in time."""
        try:
            transport = self._transport()
        except BaseException:
            self._loop.close()
            raise
        self._thread.start()
        self._task = asyncio.run_coroutine_threadsafe(self._serve(transport), self._loop)
        try:
            definitions = self._ready.result(timeout=self.spec.startup_timeout)
        except FutureTimeout:
            self.close()  # its output is read first: the tail says what the server was doing
            raise McpServerError(
                f"did not start and list its tools within {self.spec.startup_timeout:g} s "
                "(raise 'startup_timeout' for a slow server)" + self._stderr_tail(),
                server=self.spec.label,
            ) from None
        except Exception as e:
            self.close()
            raise McpServerError(
                f"failed to start: {_reason(e)}{self._stderr_tail()}", server=self.spec.label
            ) from e
        return [McpTool(definition, self.call) for definition in definitions]

    async def _serve(self, transport: Any) -> None:
        """Hold the session open until `close`; the SDK's contexts enter and exit in this task."""
        self._stop = asyncio.Event()
        self._serving = asyncio.current_task()
        try:
            async with Client(transport, read_timeout_seconds=self.spec.timeout) as client:
                self._client = client
                self._ready.set_result(await self._definitions(client))
                await self._stop.wait()
        except BaseException as e:  # noqa: BLE001 - the caller is told, in `open` or in `call`
            self._gone = e
            if not self._ready.done():
                self._ready.set_exception(e)
        finally:
            self._finished.set()

    async def _definitions(self, client: Client) -> list[McpToolDefinition]:
        found, cursor = [], None
        for _ in range(MAX_TOOL_PAGES):
            page = await client.list_tools(cursor=cursor)
            found += page.tools
            cursor = page.next_cursor
            if cursor is None:
                break
        return [
            McpToolDefinition(
                name=item.name,
                description=item.description or "",
                input_schema=item.input_schema,
                server=self.spec,
                read_only=item.annotations.read_only_hint if item.annotations else None,
                destructive=item.annotations.destructive_hint if item.annotations else None,
                idempotent=item.annotations.idempotent_hint if item.annotations else None,
            )
            for item in found
        ]

    def call(self, tool: str, args: dict[str, Any]) -> Any:
        """Call a tool and wait at most the server's timeout; a dead server is a final error."""
        client = self._client
        if client is None or self._gone is not None or not self._loop.is_running():
            raise NonRetryableError(self._gone_message(tool))
        timeout = self.spec.timeout
        future = asyncio.run_coroutine_threadsafe(
            client.call_tool(tool, args, read_timeout_seconds=timeout), self._loop
        )
        try:
            # The SDK times the request out itself; the margin only guards against a stuck loop.
            result = future.result(timeout=timeout + 5)
        except (FutureTimeout, TimeoutError) as e:
            future.cancel()
            raise self._timed_out(tool) from e
        except MCPError as e:
            if e.code == REQUEST_TIMEOUT:
                raise self._timed_out(tool) from e
            if e.code == CONNECTION_CLOSED or self._gone is not None:
                raise NonRetryableError(self._gone_message(tool)) from e
            raise McpServerError(f"tool '{tool}' was refused: {e}", server=self.spec.label) from e
        except Exception as e:  # transport failures (HTTP, pipes) arrive as many types
            if self._gone is not None:
                raise NonRetryableError(self._gone_message(tool)) from e
            raise McpServerError(
                f"tool '{tool}' failed: {_reason(e)}", server=self.spec.label
            ) from e
        texts = [block.text for block in result.content if isinstance(block, TextContent)]
        return result_value(tool, result.structured_content, texts, result.is_error)

    def _timed_out(self, tool: str) -> McpServerError:
        return McpServerError(
            f"no answer from tool '{tool}' within {self.spec.timeout:g} s (the server's 'timeout')",
            server=self.spec.label,
        )

    def _gone_message(self, tool: str) -> str:
        why = f" ({_reason(self._gone)})" if self._gone is not None else ""
        return (
            f"MCP server '{self.spec.label}' is no longer running{why}; "
            f"tool '{tool}' cannot be called{self._stderr_tail()}"
        )

    def _stderr_tail(self) -> str:
        """What the server last wrote to stderr (kept in a file, read back after it stopped)."""
        if self._stderr is not None:
            with contextlib.suppress(OSError, ValueError):
                self._stderr.flush()
                self._stderr.seek(0)
                self._last_words = self._stderr.read().strip()[-_STDERR_TAIL:]
        return f"; its last output: {self._last_words}" if self._last_words else ""

    def close(self) -> None:
        """Stop the server (bounded) and the loop thread."""
        if self._thread.is_alive():
            if self._ready.done() and self._stop is not None:
                self._loop.call_soon_threadsafe(self._stop.set)  # leave the session in order
            elif self._serving is not None:
                self._loop.call_soon_threadsafe(self._serving.cancel)  # still starting: give up
            elif self._task is not None and self._task.cancel():  # not even begun
                self._finished.set()
            if not self._finished.wait(STOP_TIMEOUT) and self._serving is not None:
                self._loop.call_soon_threadsafe(self._serving.cancel)
                self._finished.wait(STOP_TIMEOUT)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=STOP_TIMEOUT)
        if not self._thread.is_alive():
            self._loop.close()
        if self._stderr is not None:
            self._stderr_tail()
            self._stderr.close()
            self._stderr = None


def _reason(error: BaseException | None) -> str:
    """The innermost readable message of an error the SDK may wrap in exception groups."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    text = str(error) or type(error).__name__
    return f"{type(error).__name__}: {text}" if text != type(error).__name__ else text


def connect_servers(
    servers: Iterable[McpServerSpec], base_dir: Path, stack: ExitStack
) -> list[McpTool]:
    """Start every server (each is stopped when `stack` closes) and return their tools."""
    tools: list[McpTool] = []
    for spec in servers:
        connection = McpConnection(spec, base_dir)
        tools += connection.open()
        stack.callback(connection.close)
    return tools

"""An MCP server that misbehaves on request, for the failure tests (written with the `mcp` SDK)."""

from __future__ import annotations

import os
import sys
import time

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("faulty", log_level="WARNING")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def crash(code: int = 3) -> str:
    """Exit the server process at once, as a crash would."""
    print("about to crash", file=sys.stderr, flush=True)
    os._exit(code)


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def stall(seconds: float) -> str:
    """Answer only after `seconds`."""
    time.sleep(seconds)
    return "done"


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def echo(text: str) -> str:
    """Answer with the text."""
    return text


@server.tool(
    annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=True)
)
def remember(text: str) -> str:
    """Store the text (storing it twice stores it once)."""
    return f"stored {text}"


if __name__ == "__main__":
    if "--exit-at-start" in sys.argv:
        print("refusing to start", file=sys.stderr, flush=True)
        sys.exit(2)
    if "--port" in sys.argv:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[-1]))
    else:
        server.run("stdio")

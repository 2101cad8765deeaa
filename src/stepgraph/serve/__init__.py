"""Faces of stepgraph for people and other programs: `stepgraph serve` and `stepgraph mcp`.

`stepgraph serve` is the run list, run pages, approval pages and the HTTP API (ASGI);
`stepgraph mcp` serves plan, validate, run and replay as MCP tools. A face like `cli/`:
it may import anything; only `cli/` imports it.
"""

from stepgraph.serve._app import create_app
from stepgraph.serve._mcp_server import StepgraphMcp, build_server

__all__ = ["StepgraphMcp", "build_server", "create_app"]

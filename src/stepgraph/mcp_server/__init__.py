"""stepgraph as an MCP server, `stepgraph mcp`: `plan`, `validate`, `run` and `replay` as tools.

Over stdio, or streamable HTTP behind the same Host names as the web face and a bearer
token; installed with the `mcp` extra. A face like `cli/`: it may import any stage; only
`cli/` imports it, and it imports no other face (`stepgraph serve` is `stepgraph.serve`,
with its own extra). What both network faces check lives in `stepgraph.guards`.
"""

from stepgraph.mcp_server._face import StepgraphMcp
from stepgraph.mcp_server._http import mcp_http_app
from stepgraph.mcp_server._results import (
    Planned,
    Replayed,
    RunReport,
    Validation,
    Value,
    as_value,
)
from stepgraph.mcp_server._server import StrictServer, build_server

__all__ = [
    "Planned",
    "Replayed",
    "RunReport",
    "StepgraphMcp",
    "StrictServer",
    "Validation",
    "Value",
    "as_value",
    "build_server",
    "mcp_http_app",
]

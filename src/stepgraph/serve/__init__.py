"""The web face of stepgraph, `stepgraph serve`: the run list, run pages, approvals, HTTP API.

An ASGI app (FastAPI) over a runs folder; installed with the `serve` extra. A face like
`cli/`: it may import any stage; only `cli/` imports it, and it imports no other face
(`stepgraph mcp` lives in `stepgraph.mcp_server`, with its own extra).
"""

from stepgraph.serve._app import create_app

__all__ = ["create_app"]

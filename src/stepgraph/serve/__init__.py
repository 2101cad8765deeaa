"""Faces of stepgraph for other programs: the MCP server (`stepgraph mcp`)."""

from stepgraph.serve._mcp_server import StepgraphMcp, build_server

__all__ = ["StepgraphMcp", "build_server"]

"""`stepgraph serve`: the run list, run pages, approval pages and the HTTP API (ASGI).

A face like `cli/`: it may import anything; nothing outside imports it.
"""

from stepgraph.serve._app import create_app

__all__ = ["create_app"]

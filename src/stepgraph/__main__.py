"""``python -m stepgraph``: the same as the ``stepgraph`` command."""

from stepgraph.cli import app

app(prog_name="stepgraph")

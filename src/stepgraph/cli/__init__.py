"""The `stepgraph` command line (typer + rich); `cli.render` turns events into lines and pictures.

Nothing outside this folder imports from it.
"""

from stepgraph.cli._commands import app
from stepgraph.cli._errors import ExitCode

__all__ = ["ExitCode", "app"]

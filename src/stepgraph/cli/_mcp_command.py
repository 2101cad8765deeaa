"""`stepgraph mcp`: serve plan, validate, run and replay to MCP clients (stdio or HTTP)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated, Literal

import typer
from rich.console import Console

from stepgraph.cli._errors import ExitCode, fail, handle_errors
from stepgraph.cli._hosts import AllowHostOpt, listen, shown_host
from stepgraph.cli._model_options import MODEL_DEFAULTS, ModelOptions, with_model_options
from stepgraph.exceptions import ToolDefinitionError
from stepgraph.guards import is_loopback


@handle_errors
@with_model_options
def mcp_command(
    transport: Annotated[
        Literal["stdio", "http"],
        typer.Option(help="stdio for a client that starts the server; http: streamable HTTP."),
    ] = "stdio",
    host: Annotated[
        str, typer.Option(help="Address to listen on (http); beyond loopback needs --token.")
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(min=0, max=65535, help="Port (http); 0: one the system picks.")
    ] = 8000,
    token: Annotated[
        str | None,
        typer.Option(
            envvar="STEPGRAPH_MCP_TOKEN",
            show_envvar=True,
            help="Required of every request (Authorization: Bearer, http); needed to bind "
            "beyond loopback.",
        ),
    ] = None,
    allow_host: AllowHostOpt = None,
    root: Annotated[
        Path, typer.Option(help="Task files and journals a client may name live under it.")
    ] = Path("."),
    journal_dir: Annotated[
        Path, typer.Option(help="Where runs write their journals (relative to the root).")
    ] = Path("runs"),
    model_options: ModelOptions = MODEL_DEFAULTS,
) -> None:
    """Serve plan, validate, run and replay as MCP tools, for any MCP client.

    The path /mcp of http://HOST:PORT is the streamable HTTP endpoint.
    """
    if transport == "http" and not is_loopback(host) and not token:
        fail(
            f"binding {host} exposes the tools to the network: give --token "
            "(or STEPGRAPH_MCP_TOKEN)",
            ExitCode.USAGE,
        )
    try:  # an extra: the rest of the command line works without it
        from stepgraph.mcp_server import StepgraphMcp, build_server, mcp_http_app
    except ImportError as e:
        raise ToolDefinitionError(
            f"`stepgraph mcp` needs the 'mcp' package ({e}): pip install 'stepgraph[mcp]'"
        ) from e

    planner = model_options.planner  # a fresh one per call: a scripted model starts over

    planner()  # a bad --scripted file or setting fails now, not at the first call
    # The SDK sends warnings to stderr; pint's note that 'Mbps' parses two ways (stepgraph
    # resolves it) would be noise in every client's server log.
    logging.getLogger("pint").setLevel(logging.ERROR)
    server = build_server(StepgraphMcp(root, journal_dir, planner))
    if transport == "stdio":
        server.run("stdio")
        return
    import uvicorn  # the mcp SDK's own dependency: no other extra needed

    shown = shown_host(host)
    listening = listen(host, port)
    port = int(listening.getsockname()[1])
    app = mcp_http_app(server, host=host, port=port, token=token, allow_hosts=allow_host or ())
    Console(stderr=True).print(f"stepgraph mcp: http://{shown}:{port}/mcp", highlight=False)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[listening])


def register(app: typer.Typer) -> None:
    """Add `stepgraph mcp` to the command line."""
    app.command("mcp")(mcp_command)

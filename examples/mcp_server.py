"""An MCP server with unit-aware lookups, written with the `mcp` SDK.

stepgraph uses it as a tool source (examples/mcp_task.yaml) and its tests start it
over both transports:

    python examples/mcp_server.py                          # stdio
    python examples/mcp_server.py --transport http --port 8765   # http://127.0.0.1:8765/mcp

Its answers carry units ("450 Mbit/s"), so stepgraph turns them into quantities and
every later step converts and checks them like any other value.
"""

from __future__ import annotations

import argparse

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

LINKS = {"office-uplink": "450 Mbit/s", "dc-backbone": "10 Gbit/s", "branch-vpn": "40 Mbit/s"}
DATASETS = {"photos": "2.5 TB", "mail": "380 GB", "logs": "1.2 TiB"}

server = MCPServer("stepgraph-units-lookup", log_level="WARNING")

READ_ONLY = ToolAnnotations(readOnlyHint=True, idempotentHint=True)


@server.tool(annotations=READ_ONLY)
def link_speed(link: str) -> str:
    """The nominal speed of a named network link, with its unit (e.g. '450 Mbit/s').

    Args:
        link: The link's name: office-uplink, dc-backbone or branch-vpn.
    """
    if link not in LINKS:
        raise ToolError(f"unknown link {link!r} (known: {', '.join(sorted(LINKS))})")
    return LINKS[link]


@server.tool(annotations=READ_ONLY)
def dataset_size(name: str) -> str:
    """The size of a named data set, with its unit (e.g. '2.5 TB').

    Args:
        name: The data set's name: photos, mail or logs.
    """
    if name not in DATASETS:
        raise ToolError(f"unknown data set {name!r} (known: {', '.join(sorted(DATASETS))})")
    return DATASETS[name]


@server.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=True))
def reserve_window(link: str, hours: float) -> str:
    """Reserve a maintenance window on a link (changes the booking calendar).

    Args:
        link: The link's name.
        hours: Length of the window in hours.
    """
    if link not in LINKS:
        raise ToolError(f"unknown link {link!r}")
    return f"reserved {hours:g} h on {link}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    options = parser.parse_args()
    if options.transport == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host=options.host, port=options.port)


if __name__ == "__main__":
    main()

"""What `stepgraph serve` and `stepgraph mcp --transport http` share: names, the socket."""

from __future__ import annotations

import socket
from typing import Annotated

import typer

from stepgraph.cli._errors import ExitCode, fail

AllowHostOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--allow-host",
        help="Another name clients use for this server (the Host header); repeatable. "
        "Loopback names and the bound address are always allowed.",
        show_default=False,
    ),
]


def shown_host(host: str) -> str:
    """The host as a URL writes it (an IPv6 address in brackets)."""
    return f"[{host.strip('[]')}]" if ":" in host else host


def listen(host: str, port: int) -> socket.socket:
    """A socket bound and listening, before any address is printed.

    The printed line then names a port that listens (the one the system chose, for
    `--port 0`), and a taken port is one clear error with exit 2, not a server's traceback.
    """
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        return socket.create_server((host.strip("[]"), port), family=family)
    except OSError as e:
        fail(f"cannot listen on {shown_host(host)}:{port}: {e.strerror or e}", ExitCode.USAGE)

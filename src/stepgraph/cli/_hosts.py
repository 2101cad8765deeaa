"""What `stepgraph serve` and `stepgraph mcp --transport http` share about where they listen."""

from __future__ import annotations

import ipaddress
from typing import Annotated

import typer

AllowHostOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--allow-host",
        help="Another name clients use for this server (the Host header); repeatable. "
        "Loopback names and the bound address are always allowed.",
        show_default=False,
    ),
]


def is_loopback(host: str) -> bool:
    """Whether binding `host` keeps a server on this machine (else it needs a token)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False

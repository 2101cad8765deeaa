"""The option `stepgraph serve` and `stepgraph mcp --transport http` share: names they answer to."""

from __future__ import annotations

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

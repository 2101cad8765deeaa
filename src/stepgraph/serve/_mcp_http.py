"""`stepgraph mcp --transport http` as an ASGI app: the SDK's streamable HTTP, guarded.

The SDK checks `Host` and `Origin` itself (its transport security settings, given here
the names `stepgraph serve` answers to); a bearer token, when set, is checked before
the SDK sees the request.
"""

from __future__ import annotations

from collections.abc import Iterable

from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp

from stepgraph.serve._hosts import AllowedHosts
from stepgraph.serve._security import MAX_BODY, BearerGate


def mcp_http_app(
    server: MCPServer,
    *,
    host: str,
    port: int,
    token: str | None,
    allow_hosts: Iterable[str] = (),
) -> ASGIApp:
    """The server's streamable HTTP endpoint (/mcp) behind the Host check and the token."""
    hosts = AllowedHosts.of(host, port=port, extra=allow_hosts).patterns()
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=hosts,
        allowed_origins=[f"{scheme}://{name}" for name in hosts for scheme in ("http", "https")],
    )
    app = server.streamable_http_app(
        transport_security=security, host=host, max_request_body_size=MAX_BODY
    )
    return BearerGate(app, token=token)

"""`stepgraph mcp --transport http` as an ASGI app: the SDK's streamable HTTP, guarded.

The SDK checks `Host` and `Origin` itself (its transport security settings, given here
the names the server answers to, as `stepgraph serve` computes them); a bearer token,
when set, is checked before the SDK sees the request.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from stepgraph.guards import MAX_BODY, AllowedHosts, bearer_of, same_secret


class BearerGate:
    """Refuses every HTTP request without `Authorization: Bearer TOKEN` (401), when set."""

    def __init__(self, app: ASGIApp, *, token: str | None) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.token is not None:
            given = bearer_of(Headers(scope=scope).get("authorization"))
            if not same_secret(given, self.token):
                response = PlainTextResponse(
                    "a token is required: Authorization: Bearer TOKEN",
                    status_code=401,
                    headers={"WWW-Authenticate": "Bearer"},
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def mcp_http_app(
    server: MCPServer[Any],
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

"""Safe defaults: a token when the server is reachable beyond this machine, CSRF on every change.

A pure ASGI middleware (not `BaseHTTPMiddleware`), so server-sent event streams pass
through untouched.
"""

from __future__ import annotations

import hmac
from urllib.parse import parse_qs, urlparse

from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse, RedirectResponse
from starlette.types import ASGIApp, Receive, Scope, Send

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
TOKEN_COOKIE = "stepgraph_token"
CSRF_HEADER = "x-csrf-token"


def _same(given: str | None, wanted: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), wanted.encode())


class Guard:
    """Refuses requests without the token (when one is set) and changes without the CSRF token."""

    def __init__(self, app: ASGIApp, *, token: str | None, csrf_token: str) -> None:
        self.app = app
        self.token = token
        self.csrf_token = csrf_token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        method = scope["method"]
        if self.token is not None:
            query = parse_qs(scope.get("query_string", b"").decode())
            if method == "GET" and _same(query.get("token", [None])[0], self.token):
                # A link with ?token= signs a browser in: the cookie carries it from now on,
                # and the token leaves the address bar (and the history) at once.
                response = RedirectResponse(scope["path"], status_code=303)
                response.set_cookie(
                    TOKEN_COOKIE, self.token, httponly=True, samesite="strict", path="/"
                )
                await response(scope, receive, send)
                return
            bearer = headers.get("authorization", "").removeprefix("Bearer ").strip()
            cookies = _cookies(headers.get("cookie", ""))
            if not (_same(bearer, self.token) or _same(cookies.get(TOKEN_COOKIE), self.token)):
                await PlainTextResponse("a token is required", status_code=401)(
                    scope, receive, send
                )
                return
        if method not in SAFE_METHODS:
            origin = headers.get("origin")
            if origin and urlparse(origin).netloc != headers.get("host"):
                await PlainTextResponse("cross-site request refused", status_code=403)(
                    scope, receive, send
                )
                return
            if not _same(headers.get(CSRF_HEADER), self.csrf_token):
                await PlainTextResponse(
                    "missing or wrong X-CSRF-Token (GET /api/session gives it)", status_code=403
                )(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _cookies(header: str) -> dict[str, str]:
    pairs = (part.strip().partition("=") for part in header.split(";") if "=" in part)
    return {name: value for name, _, value in pairs}

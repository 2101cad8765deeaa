"""Safe defaults: only this server's names, a token beyond this machine, CSRF, bounded bodies.

A pure ASGI middleware (not `BaseHTTPMiddleware`), so server-sent event streams pass
through untouched. The names, the token comparison and the body limit are the ones
`stepgraph mcp --transport http` uses too (`stepgraph.guards`).
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse, RedirectResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from stepgraph.guards import MAX_BODY, AllowedHosts, bearer_of, same_secret

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
TOKEN_COOKIE = "stepgraph_token"
CSRF_HEADER = "x-csrf-token"


class Guard:
    """Refuses requests for other names, without the token, changes without CSRF, big bodies."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        token: str | None,
        csrf_token: str,
        hosts: AllowedHosts | None = None,
        max_body: int = MAX_BODY,
    ) -> None:
        self.app = app
        self.token = token
        self.csrf_token = csrf_token
        self.hosts = hosts or AllowedHosts.of("127.0.0.1")
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        method = scope["method"]
        refusal = self._refusal(headers, method)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        if self.token is not None:
            query = parse_qs(scope.get("query_string", b"").decode())
            if method == "GET" and same_secret(query.get("token", [None])[0], self.token):
                # A link with ?token= signs a browser in: the cookie carries it from now on,
                # and the token leaves the address bar (and the history) at once.
                response = RedirectResponse(scope["path"], status_code=303)
                response.set_cookie(
                    TOKEN_COOKIE, self.token, httponly=True, samesite="strict", path="/"
                )
                await response(scope, receive, send)
                return
            cookies = _cookies(headers.get("cookie", ""))
            if not (
                same_secret(bearer_of(headers.get("authorization")), self.token)
                or same_secret(cookies.get(TOKEN_COOKIE), self.token)
            ):
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
            if not same_secret(headers.get(CSRF_HEADER), self.csrf_token):
                await PlainTextResponse(
                    "missing or wrong X-CSRF-Token (GET /api/session gives it)", status_code=403
                )(scope, receive, send)
                return
            # Read before the app sees it: a body is refused whole, never half-parsed.
            body = await _body_within(receive, self.max_body)
            if body is None:
                await _too_large(self.max_body)(scope, receive, send)
                return
            receive = _replaying(body, receive)
        await self.app(scope, receive, send)

    def _refusal(self, headers: Headers, method: str) -> PlainTextResponse | None:
        """A reply for a request that must not reach the app whatever its token, or None."""
        host = headers.get("host")
        if not self.hosts.allows(host):
            # 421, as the mcp SDK answers: a name this server is not (DNS rebinding).
            return PlainTextResponse(
                f"this server does not answer to the name {host!r}; open it as "
                "http://127.0.0.1:PORT/, or start it with --allow-host NAME",
                status_code=421,
            )
        length = headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_body):
            return _too_large(self.max_body)
        return None


def _too_large(limit: int) -> PlainTextResponse:
    return PlainTextResponse(f"the request body is over the limit of {limit} bytes", 413)


async def _body_within(receive: Receive, limit: int) -> bytes | None:
    """The whole request body, or None once more than `limit` bytes arrived.

    Content-Length may be absent (a chunked body) or lie: the bytes streamed are what count.
    """
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":  # the client went away
            return b"".join(chunks)
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replaying(body: bytes, receive: Receive) -> Receive:
    """A `receive` that gives the body read already, then what the client sends next."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def _cookies(header: str) -> dict[str, str]:
    pairs = (part.strip().partition("=") for part in header.split(";") if "=" in part)
    return {name: value for name, _, value in pairs}

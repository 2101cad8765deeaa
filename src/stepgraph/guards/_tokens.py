"""Secrets a request must carry, compared in constant time, and how big a body may be.

Plain text in, plain answers out (no web framework): the web face's guard and the MCP
face's bearer gate each read their headers with their own framework and ask here.
"""

from __future__ import annotations

import hmac

MAX_BODY = 1 << 20  # bytes of a request body; a plan of thousands of steps fits


def same_secret(given: str | None, wanted: str) -> bool:
    """Whether `given` is the secret, compared in constant time (None never is)."""
    return given is not None and hmac.compare_digest(given.encode(), wanted.encode())


def bearer_of(authorization: str | None) -> str:
    """The token of an `Authorization: Bearer` header's value ('' when there is none)."""
    scheme, _, value = (authorization or "").partition(" ")
    return value.strip() if scheme.lower() == "bearer" else ""

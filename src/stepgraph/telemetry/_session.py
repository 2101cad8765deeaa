"""The OTLP exporter's HTTP session: a collector that is not there is said at once, not retried.

The SDK retries a connection error with backoff until its timeout runs out, for every
export: against a closed port, exporting a journal span by span took 85 s and printed
50 warnings. Here a connection that cannot be made (refused, no such host, no answer to
connect) reaches the SDK as an error it does not retry. A pooled connection that broke
is still retried (the SDK reconnects once), and so are 429 and 5xx answers within the
timeout. The session keeps the last problem, for the one line a person reads.
"""

from __future__ import annotations

import re
from typing import Any

import requests
from urllib3.exceptions import NewConnectionError

_OS_ERROR = re.compile(r"\[Errno -?\d+\] ([^'\")\]]+)")


class CollectorUnreachableError(Exception):
    """No connection to the collector could be made; the SDK does not retry this one."""


class FailFastSession(requests.Session):
    """A requests session that turns a failed connect into `CollectorUnreachableError`."""

    def __init__(self) -> None:
        super().__init__()
        self.problem: str | None = None  # the last failure, in a few words

    def request(self, *args: Any, **kwargs: Any) -> requests.Response:
        """Send as `requests.Session.request` does; remember a refusal or an HTTP error."""
        try:
            response = super().request(*args, **kwargs)
        except requests.ConnectionError as e:
            self.problem = _describe(e)
            if isinstance(e, requests.ConnectTimeout) or _not_connected(e):
                raise CollectorUnreachableError(self.problem) from e
            raise
        if response.status_code >= 400:
            self.problem = f"HTTP {response.status_code} {response.reason}".strip()
        return response


def _not_connected(error: requests.ConnectionError) -> bool:
    """True when no connection was made: not a pooled one that broke while in use."""
    reason = getattr(error.args[0], "reason", None) if error.args else None  # MaxRetryError's
    return isinstance(reason, NewConnectionError)


def _describe(error: requests.RequestException) -> str:
    if isinstance(error, requests.ConnectTimeout):
        return "no answer to connect"
    found = _OS_ERROR.search(str(error))
    return found.group(1).strip().lower() if found else type(error).__name__

"""Which names a server answers to: loopback, the address it is bound to, and names given.

A page on another site whose name resolves to 127.0.0.1 (DNS rebinding) reaches a
loopback server from the browser with its own name in `Host`; answering only the names
the server is known by keeps such a page out. Shared by `stepgraph serve` and
`stepgraph mcp --transport http`; whether an address keeps a server on this machine
(`is_loopback`) decides whether it needs a token.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def is_loopback(host: str) -> bool:
    """Whether binding `host` keeps a server on this machine (else it needs a token)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _name(host: str) -> str:
    """A host as it appears in a `Host` header: lower case, an IPv6 address in brackets."""
    host = host.strip().lower()
    try:
        if ipaddress.ip_address(host.strip("[]")).version == 6:
            return f"[{host.strip('[]')}]"
    except ValueError:
        pass
    return host


def split_host(header: str) -> tuple[str, int | None]:
    """A `Host` header's name and port (None when it names none; -1 when it is not a number)."""
    header = header.strip().lower()
    if header.startswith("["):  # [::1]:8750
        name, _, rest = header.partition("]")
        name, port = name + "]", rest.removeprefix(":")
    elif header.count(":") == 1:
        name, _, port = header.partition(":")
    else:
        name, port = header, ""
    if not port:
        return name, None
    return name, int(port) if port.isdigit() else -1


@dataclass(frozen=True)
class AllowedHosts:
    """The names a server answers to, and its port (None: any port, e.g. not known yet)."""

    names: frozenset[str]
    port: int | None = None

    @classmethod
    def of(cls, bound: str, *, port: int | None = None, extra: Iterable[str] = ()) -> AllowedHosts:
        """Loopback names, the bound address itself and `extra` names (`--allow-host`)."""
        names = {*LOOPBACK_NAMES, _name(bound), *(_name(name) for name in extra if name.strip())}
        return cls(frozenset(names), port)

    def allows(self, header: str | None) -> bool:
        """Whether a request with this `Host` header is meant for this server."""
        if not header:
            return False
        name, port = split_host(header)
        if name not in self.names:
            return False
        return port is None or self.port is None or port == self.port

    def patterns(self) -> list[str]:
        """The names as `host:port` patterns (the mcp SDK's `allowed_hosts` form)."""
        port = "*" if self.port is None else str(self.port)
        return sorted(name for host in self.names for name in (host, f"{host}:{port}"))

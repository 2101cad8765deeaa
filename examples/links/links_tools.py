"""A simulated link probe: an async tool, so the three probes share one event loop."""

import asyncio
from typing import Any

from stepgraph import tool
from stepgraph.units import parse_quantity

# Usable throughput a probe would measure (nominal speed x utilisation).
_MEASURED = {
    "office-fiber": "405 Mbit/s",
    "dc-cross-connect": "9 Gbit/s",
    "backup-vpn": "80 Mbit/s",
}
PROBE_SECONDS = 0.25


@tool
async def probe_link(link: str) -> Any:
    """Measure the usable throughput of a named link (takes a quarter of a second).

    Args:
        link: One of office-fiber, dc-cross-connect, backup-vpn.
    """
    if link not in _MEASURED:
        raise LookupError(f"no link named {link!r}; known: {', '.join(_MEASURED)}")
    await asyncio.sleep(PROBE_SECONDS)
    return parse_quantity(_MEASURED[link])

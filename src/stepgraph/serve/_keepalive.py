"""Keep-alive for server-sent events: a comment line whenever the stream has been quiet.

A parked run writes nothing for hours; a proxy or a load balancer between the page and
the server drops a connection idle for a minute or so, and the page stops hearing the run.
A comment (a line starting with ":") is read and ignored by every EventSource.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import suppress
from typing import TypeVar

T = TypeVar("T")

KEEPALIVE_SECONDS = 15.0  # well under the 60 s idle timeout common to proxies (nginx's default)
PING = b": ping\n\n"


async def with_keepalive(items: AsyncIterator[T], every: float) -> AsyncIterator[T | None]:
    """The items of `items` as they come, and None after each `every` seconds without one.

    The next item is awaited in a task of its own, kept across the pings: cancelling it at
    each timeout (as `asyncio.wait_for` does) would end the source generator.
    """
    source = aiter(items)
    pending: asyncio.Future[T] | None = None
    try:
        while True:
            if pending is None:
                pending = asyncio.ensure_future(anext(source))
            done, _ = await asyncio.wait({pending}, timeout=every)
            if not done:
                yield None
                continue
            try:
                item = pending.result()
            except StopAsyncIteration:
                return
            pending = None
            yield item
    finally:
        if pending is not None and not pending.done():
            pending.cancel()  # the client left: stop reading its journal
            with suppress(asyncio.CancelledError, StopAsyncIteration):
                await pending

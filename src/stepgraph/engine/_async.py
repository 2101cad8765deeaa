"""The engine for asyncio: `await engine.arun(...)` and `async for e in engine.events(...)`.

A run is synchronous inside (the scheduler has its own threads or Dask); here it runs in
a worker thread, and its journal events cross to the event loop through a queue as they
are written: the same typed events as the journal, in the same order.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

from stepgraph.journal import JournalEvent
from stepgraph.model import RunResult

# What both functions are handed: `Engine.run` (taken as a callable, so this module and the
# engine's never import each other).
RunCall = Callable[..., RunResult]
_DONE = object()  # the end of the stream, put on the queue after the last event


async def arun(run: RunCall, task: Any, **options: Any) -> RunResult:
    """`Engine.run` without blocking the event loop."""
    return await asyncio.to_thread(run, task, **options)


async def events(run: RunCall, task: Any, **options: Any) -> AsyncIterator[JournalEvent]:
    """Run a task and yield each journal event as it is written; the run's error is raised last.

    Closing the iterator early does not stop the run (a step in flight is not
    interrupted); it finishes in its thread, journaled as usual.
    """
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[object] = asyncio.Queue()

    def listener(event: JournalEvent) -> None:
        loop.call_soon_threadsafe(queue.put_nowait, event)

    listeners: list[Callable[[JournalEvent], None]] = [*options.pop("listeners", ()), listener]

    def work() -> RunResult:
        try:
            return run(task, listeners=listeners, **options)
        finally:
            loop.call_soon_threadsafe(queue.put_nowait, _DONE)

    running = asyncio.ensure_future(asyncio.to_thread(work))
    while (item := await queue.get()) is not _DONE:
        assert isinstance(item, JournalEvent)
        yield item
    await running  # raises what the run raised

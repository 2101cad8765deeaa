"""Where step calls run: daemon worker threads for sync tools, one event loop for async ones.

Why not `concurrent.futures.ThreadPoolExecutor`: its workers are joined when the
interpreter exits, so one tool that hangs past its timeout would keep the whole
process from exiting. A timed-out call cannot be killed in Python; here it is
abandoned on a daemon thread and a fresh worker takes over the queue.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import Future
from typing import Any

_Job = tuple[Future[Any], Callable[[], Any]] | None


class WorkerPool:
    """Runs sync callables on daemon threads and coroutines on one shared event loop."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        self._workers = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: threading.Thread | None = None

    def submit(self, call: Callable[[], Any]) -> Future[Any]:
        """Run `call` on a worker thread; the caller bounds how many run at once."""
        future: Future[Any] = Future()
        with self._lock:
            if self._idle == 0:
                self._workers += 1
                threading.Thread(target=self._work, name="stepgraph-worker", daemon=True).start()
            else:
                self._idle -= 1
        self._jobs.put((future, call))
        return future

    def submit_async(self, make: Callable[[], Coroutine[Any, Any, Any]]) -> Future[Any]:
        """Run a coroutine on the pool's event loop (started on first use)."""
        with self._lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                self._loop_thread = threading.Thread(
                    target=_run_loop, args=(self._loop,), name="stepgraph-loop", daemon=True
                )
                self._loop_thread.start()
        return asyncio.run_coroutine_threadsafe(make(), self._loop)

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            future, call = job
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(call())
                except BaseException as e:  # noqa: BLE001  # the step's error, reported as data
                    future.set_exception(e)
            with self._lock:
                self._idle += 1

    def shutdown(self) -> None:
        """Stop idle workers and the event loop; abandoned calls finish on their own."""
        with self._lock:
            for _ in range(self._workers):
                self._jobs.put(None)
            self._workers = self._idle = 0
            if self._loop is not None:
                self._loop.call_soon_threadsafe(self._loop.stop)
                self._loop = None


def _run_loop(loop: asyncio.AbstractEventLoop) -> None:
    asyncio.set_event_loop(loop)
    try:
        loop.run_forever()
    finally:
        for task in asyncio.all_tasks(loop):
            task.cancel()
        loop.run_until_complete(asyncio.sleep(0))
        loop.close()

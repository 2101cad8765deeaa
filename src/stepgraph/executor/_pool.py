"""Where step calls run: daemon worker threads for sync tools, one event loop for async ones.

Why not `concurrent.futures.ThreadPoolExecutor`: its workers are joined when the
interpreter exits, so one tool that hangs past its timeout would keep the whole
process from exiting. A timed-out call cannot be killed in Python; here it is
abandoned on a daemon thread and a fresh worker takes over the queue.

With a thread limit, calls past it wait in the queue and the next free worker takes
one without waiting for the scheduler: on short calls the scheduler's round trip
between two calls was most of a step's cost.
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from collections.abc import Callable, Coroutine
from concurrent.futures import Future
from typing import Any


class PoolFuture(Future[Any]):
    """A sync call's future; `started` is when a worker took it (None while it waits)."""

    started: float | None = None
    generation = 0  # the pool's, when it was submitted


_Job = tuple[PoolFuture, Callable[[], Any]] | None


class WorkerPool:
    """Runs sync callables on daemon threads and coroutines on one shared event loop."""

    def __init__(self, max_threads: int | None = None) -> None:
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self.max_threads = max_threads  # None: a thread for every call not yet taken
        # Every queued job is owed to exactly one thread: a free one, a new one, or a
        # busy one once it is done (`_backlog`).
        self._free = 0
        self._backlog = 0
        self._workers = 0
        self._generation = 0  # a shutdown starts another: its workers, its queue
        self._abandoned: set[Future[Any]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: threading.Thread | None = None

    def submit(self, call: Callable[[], Any]) -> PoolFuture:
        """Run `call` on a worker thread, or queue it while every allowed thread is busy."""
        future = PoolFuture()
        with self._lock:
            future.generation = self._generation
            if self._free:
                self._free -= 1
            elif self.max_threads is None or self._workers < self.max_threads:
                self._start_worker()
            else:
                self._backlog += 1
            self._jobs.put((future, call))
        return future

    def _start_worker(self) -> None:
        self._workers += 1
        threading.Thread(
            target=self._work,
            args=(self._jobs, self._generation),
            name="stepgraph-worker",
            daemon=True,
        ).start()

    def abandon(self, future: Future[Any]) -> None:
        """Give up on a call: a waiting one never starts; a running one keeps its thread.

        The thread of a running call is lost until the call returns, so another worker
        takes its place in the queue; the old one ends when its call does.
        """
        if future.cancel() or not isinstance(future, PoolFuture):
            return
        with self._lock:
            if future.done() or future in self._abandoned:
                return
            self._abandoned.add(future)
            if future.generation != self._generation:
                return  # its worker counts in no pool of now
            self._workers -= 1
            if self._backlog:
                self._backlog -= 1
                self._start_worker()

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

    def _work(self, jobs: queue.SimpleQueue[_Job], generation: int) -> None:
        while True:
            job = jobs.get()
            if job is None:
                return
            future, call = job
            future.started = time.monotonic()
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(call())
                except BaseException as e:  # noqa: BLE001  # the step's error, reported as data
                    future.set_exception(e)
            with self._lock:
                if future in self._abandoned:  # another worker has taken this one's place
                    self._abandoned.discard(future)
                    return
                if generation != self._generation:
                    continue  # shut down meanwhile: its stop is in `jobs`, it counts no more
                if self._backlog:
                    self._backlog -= 1
                else:
                    self._free += 1

    def shutdown(self) -> None:
        """Stop idle workers and the event loop; abandoned calls finish on their own.

        The pool may be used again (the cross-check runs its plans on the run's pool): the
        workers of before keep the queue they were told to stop on, and count for nothing
        now, so one that finishes its call just after this does not count itself free in
        the pool of after (which left the next call waiting for a worker that had stopped:
        a held-out GSM8K run hung on its second cross-check plan).
        """
        with self._lock:
            for _ in range(self._workers):
                self._jobs.put(None)
            self._jobs = queue.SimpleQueue()
            self._generation += 1
            self._workers = self._free = self._backlog = 0
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

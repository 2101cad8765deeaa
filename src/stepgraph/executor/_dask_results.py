"""Bringing Dask results back: on the client's event loop, in batches, one gather per batch.

Each gather is a round trip through the Dask scheduler (who has the keys) and the
workers (the values), and on a LocalCluster that scheduler runs in this process,
on this same loop. Fetching every result the moment it finished took 40 to 90
gathers on the benchmark's 200-step sleep graph; batched, 12. So a batch waits a
little (`window`) for more results to join it, except when nothing else is running
(the last results end the run) or a step that could not go ahead waits in this
process for one of them (`urgent`).

Each task is watched by a coroutine of its own (distributed's `done_callback`, what
`Future.add_done_callback` uses, without its extra thread), not by `as_completed`:
its `update`, called on the loop, can block the loop on a lock that one of its own
suspended coroutines holds. Everything here runs on the client's loop, except
`watch`, `urgent` and `forget`, which only hand work to it.
"""

from __future__ import annotations

import asyncio
import pickle
import threading
from collections.abc import Callable
from concurrent.futures import Future, InvalidStateError
from contextlib import suppress
from typing import Any

from stepgraph.exceptions import StepgraphError
from stepgraph.values import decode_value

# Seconds a batch of finished tasks waits for more before it is fetched.
RESULT_WINDOW_SECONDS = 0.03


class RemoteFailure:
    """What a worker returns for a tool that raised: the exception, as the task's value.

    A task that raises is logged by distributed's worker as "Compute Failed", with its
    traceback, on the console of whoever started the cluster; a tool's error is the
    step's observation, journaled here, not a worker's problem. Only exceptions travel
    so: a worker that dies, or a `BaseException`, still fails its task as before.
    """

    __slots__ = ("error",)

    def __init__(self, error: Exception) -> None:
        self.error = error

    def __reduce__(self) -> tuple[Any, ...]:
        return (RemoteFailure, (self.error,))

    @classmethod
    def of(cls, error: Exception) -> RemoteFailure:
        """The failure, with an exception that unpickles wherever it goes."""
        import cloudpickle

        try:
            pickle.loads(cloudpickle.dumps(error))
        except Exception:  # an exception holding a lock, a socket, ...: its text travels
            error = RuntimeError(f"{type(error).__name__}: {error}")
        return cls(error)


class ResultCollector:
    """Settles each concurrent future from its Dask task, on the client's loop."""

    def __init__(
        self,
        client: Any,
        error: Callable[[Any, BaseException, str], BaseException],
        *,
        window: float = RESULT_WINDOW_SECONDS,
    ) -> None:
        self._client = client
        self._error = error  # (task, its exception, step) -> what the step's future raises
        self._window = window
        self._lock = threading.Lock()  # `_settles` is filled by the scheduler's thread
        self._settles: dict[Any, tuple[Future[Any], str]] = {}  # task key -> future, step
        self._urgent: set[Any] = set()  # task keys whose values a step here waits for
        # The rest is touched on the loop only.
        self._unfinished = 0
        self._finished: list[Any] = []
        self._arrival: asyncio.Event | None = None
        self._collecting = False
        self._tasks: set[asyncio.Task[Any]] = set()  # the loop keeps only weak references

    def watch(self, sent: list[tuple[Any, Future[Any], str]]) -> None:
        """From any thread: settle each (Dask future, concurrent future, step) when it finishes."""
        with self._lock:
            for remote, future, step in sent:
                self._settles[remote.key] = (future, step)
        # One wake-up of the loop for the lot.
        self._client.loop.add_callback(self._watch, [remote for remote, _, _ in sent])

    def urgent(self, key: Any) -> None:
        """From any thread: a step waits here for this task's value; fetch it without delay."""
        self._urgent.add(key)
        self._client.loop.add_callback(self._wake)  # it may be waiting in a batch already

    def _wake(self) -> None:
        if self._arrival is not None:
            self._arrival.set()

    def forget(self) -> None:
        """The run is over: no step waits for anything any more."""
        self._urgent.clear()

    def _watch(self, remotes: list[Any]) -> None:
        from distributed.client import done_callback  # what `Future.add_done_callback` uses

        self._unfinished += len(remotes)
        for remote in remotes:  # a coroutine each, calling back here on this loop
            self._keep(done_callback(remote, self._arrived))  # type: ignore[no-untyped-call]
        if not self._collecting:
            self._collecting = True
            self._keep(self._collect())

    def _keep(self, coroutine: Any) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _arrived(self, remote: Any) -> None:
        self._unfinished -= 1
        self._finished.append(remote)
        self._wake()

    async def _collect(self) -> None:
        """One collector at a time, until nothing is left to watch; `_watch` starts the next."""
        loop = asyncio.get_running_loop()
        self._arrival = asyncio.Event()
        try:
            while self._unfinished or self._finished:
                if not self._finished:
                    self._arrival.clear()
                    await self._arrival.wait()
                    continue  # a wake-up for an urgent key may bring nothing
                deadline = loop.time() + self._window
                while self._unfinished and not self._wanted() and loop.time() < deadline:
                    self._arrival.clear()
                    with suppress(TimeoutError):
                        await asyncio.wait_for(self._arrival.wait(), deadline - loop.time())
                batch, self._finished = self._finished, []
                await self._settle(batch)
        finally:
            self._collecting = False

    def _wanted(self) -> bool:
        urgent = self._urgent
        return bool(urgent) and any(remote.key in urgent for remote in self._finished)

    async def _settle(self, batch: list[Any]) -> None:
        finished = [remote for remote in batch if remote.status == "finished"]
        values: list[Any] = []
        if finished:
            try:
                values = await self._client.gather(finished, asynchronous=True)
            except Exception:  # one of them was lost meanwhile: settle them one by one
                finished = []
        settled = dict(zip((remote.key for remote in finished), values, strict=True))
        for remote in batch:
            self._urgent.discard(remote.key)
            with self._lock:
                future, step = self._settles.pop(remote.key, (None, ""))
            if future is None or future.done():
                continue
            if remote.key in settled:
                encoded = settled[remote.key]
            else:
                try:
                    encoded = await self._client.gather(remote, asynchronous=True)
                except BaseException as e:  # noqa: BLE001  # the step's error, reported as data
                    _settle_one(future, error=self._error(remote, e, step))
                    continue
            if isinstance(encoded, RemoteFailure):
                _settle_one(future, error=self._error(remote, encoded.error, step))
            else:
                _settle_one(future, value=encoded)


def _settle_one(
    future: Future[Any], *, value: Any = None, error: BaseException | None = None
) -> None:
    with suppress(InvalidStateError):  # cancelled here meanwhile
        if error is not None:
            future.set_exception(error)
            return
        try:
            future.set_result(decode_value(value))
        except StepgraphError as e:
            future.set_exception(e)

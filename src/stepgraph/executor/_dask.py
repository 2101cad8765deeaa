"""The Dask backend: step execution on a dask.distributed cluster.

Only the tool calls move. Scheduling, references, verifiers and the journal stay
stepgraph's own: Dask does not persist orchestration state, our journal does. Values
cross the wire in the journal's JSON form (`encode_value`), so workers need stepgraph
installed but no shared unit registry; tool functions travel with cloudpickle, and
tools loaded from a task's plugin files are pickled by value.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from typing import Any

from stepgraph.exceptions import NonRetryableError, StepgraphError
from stepgraph.executor._backend import Backend, ToolCall
from stepgraph.tools.expression import Expression
from stepgraph.units import decode_value, encode_value


def _run_remote(func: Callable[..., Any], encoded_args: Any, is_async: bool) -> Any:
    """What a Dask worker runs: decode the arguments, call the tool, encode the value."""
    args = decode_value(encoded_args)
    result = asyncio.run(func(**args)) if is_async else func(**args)
    return encode_value(result)


class DaskBackend:
    """Submits each tool call to a `distributed.Client`; hands back a concurrent future."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self._remote: dict[Future[Any], Any] = {}
        self._checked: dict[str, str | None] = {}

    def submit(self, call: ToolCall) -> Future[Any]:
        """Validate here, run there; the future resolves when the worker's result arrives."""
        future: Future[Any] = Future()
        future.set_running_or_notify_cancel()
        try:
            args = call.validated_args()
            self._check_picklable(call)
        except StepgraphError as e:
            future.set_exception(e)
            return future
        data = {k: v.to_data() if isinstance(v, Expression) else v for k, v in args.items()}
        remote = self._client.submit(
            _run_remote, call.tool.func, encode_value(data), call.tool.is_async, pure=False
        )
        self._remote[future] = remote
        remote.add_done_callback(lambda done: self._transfer(done, future))
        return future

    def _check_picklable(self, call: ToolCall) -> None:
        import cloudpickle

        name = call.tool.name
        if name not in self._checked:
            module = sys.modules.get(call.tool.func.__module__)
            if module is not None and module.__name__.startswith("stepgraph_plugin_"):
                cloudpickle.register_pickle_by_value(module)  # not importable on workers
            try:
                cloudpickle.dumps(call.tool.func)
                self._checked[name] = None
            except Exception as e:  # pickling fails in many ways; all mean "cannot ship"
                self._checked[name] = f"{type(e).__name__}: {e}"
        problem = self._checked[name]
        if problem is not None:
            raise NonRetryableError(
                f"tool '{name}' cannot be sent to Dask workers, it does not pickle ({problem}); "
                "define it at module level without locks, sockets or open files",
                step=call.step.id,
            )

    def _transfer(self, remote: Any, future: Future[Any]) -> None:
        self._remote.pop(future, None)
        if future.done():
            return
        if remote.cancelled():
            future.set_exception(TimeoutError("cancelled on the Dask cluster"))
            return
        error = remote.exception()
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(decode_value(remote.result()))

    def cancel(self, future: Future[Any]) -> None:
        """Cancel the task on the cluster (a timed-out step)."""
        remote = self._remote.pop(future, None)
        if remote is not None:
            remote.cancel()

    def shutdown(self) -> None:
        """The client belongs to `dask_backend`, which closes it."""


@contextmanager
def dask_backend(
    scheduler: str | None = None, *, workers: int = 2, threads_per_worker: int = 2
) -> Iterator[Callable[[], Backend]]:
    """A backend factory on a Dask cluster: `scheduler` ("tcp://host:8786") or a local one.

    Without an address a LocalCluster is started here and stopped on exit.
    """
    from distributed import Client, LocalCluster

    cluster = None
    if scheduler is None:
        cluster = LocalCluster(
            n_workers=workers,
            threads_per_worker=threads_per_worker,
            processes=True,
            dashboard_address=None,
        )
    client = Client(scheduler or cluster)
    try:
        yield lambda: DaskBackend(client)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()

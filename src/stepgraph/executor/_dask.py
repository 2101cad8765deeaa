"""The Dask backend: step execution on a dask.distributed cluster.

Only the tool calls move. Scheduling, references, verifiers and the journal stay
stepgraph's own: Dask does not persist orchestration state, our journal does. Values
cross the wire in the journal's JSON form (`encode_value`), so workers need stepgraph
installed but no shared unit registry; tool functions travel with cloudpickle, and
tools loaded from a task's plugin files are pickled by value.
"""

from __future__ import annotations

import asyncio
import hashlib
import pickle
import sys
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future
from contextlib import contextmanager, suppress
from typing import Any

from stepgraph.exceptions import NonRetryableError, StepgraphError
from stepgraph.executor._backend import Backend, ToolCall, resolve_args
from stepgraph.executor._dask_results import (
    RESULT_WINDOW_SECONDS,
    RemoteFailure,
    ResultCollector,
)
from stepgraph.model import Step
from stepgraph.references import ReferenceError_
from stepgraph.tools import Tool
from stepgraph.tools.expression import Expression
from stepgraph.values import decode_value, encode_value


def _run_remote(func: Callable[..., Any], encoded_args: Any, is_async: bool) -> Any:
    """What a Dask worker runs: decode the arguments, call the tool, encode the value.

    A tool's exception comes back as the value (`RemoteFailure`), not raised on the worker.
    """
    try:
        args = decode_value(encoded_args)
        result = asyncio.run(func(**args)) if is_async else func(**args)
        return encode_value(result)
    except Exception as e:
        return RemoteFailure.of(e)


class ArgumentProblem(Exception):
    """A step sent ahead whose arguments, once resolved on the worker, do not fit its tool.

    A plain exception with one message: it must unpickle in the client unchanged.
    """


# On a worker: each tool unpickled once per process, by the digest of its pickle.
_TOOLS: dict[str, Tool] = {}
_TOOLS_KEPT = 256


def _tool(packed: tuple[str, bytes]) -> Tool:
    digest, blob = packed
    tool = _TOOLS.get(digest)
    if tool is None:
        if len(_TOOLS) >= _TOOLS_KEPT:
            _TOOLS.clear()
        tool = _TOOLS[digest] = pickle.loads(blob)
    return tool


def _run_after(
    packed: tuple[str, bytes],
    args: dict[str, Any],
    known: Any,
    names: tuple[str, ...],
    *upstream: Any,
) -> Any:
    """What a worker runs for a step sent ahead: its inputs arrive as Dask dependencies.

    The arguments are resolved here exactly as the scheduler resolves them (it does
    so again, from the same values, for the journal).
    """
    failed = next((value for value in upstream if isinstance(value, RemoteFailure)), None)
    if failed is not None:  # as Dask fails what depends on a failed task: with its error
        return failed
    try:
        tool = _tool(packed)
        scope = decode_value(known)
        scope.update(zip(names, (decode_value(value) for value in upstream), strict=True))
        try:
            resolved = tool.validate_args(resolve_args(tool, args, scope))
        except (ReferenceError_, StepgraphError) as e:
            return RemoteFailure(ArgumentProblem(str(e)))
        result = asyncio.run(tool.func(**resolved)) if tool.is_async else tool.func(**resolved)
        return encode_value(result)
    except Exception as e:
        return RemoteFailure.of(e)


def _task_spec() -> tuple[Any, Any] | None:
    """Dask's `Task` and `TaskRef` (`dask.task_spec`; older releases: private), or None."""
    try:  # dask is an extra: imported when used
        from dask.task_spec import Task, TaskRef
    except ImportError:
        try:
            from dask._task_spec import Task, TaskRef
        except ImportError:
            return None
    return Task, TaskRef


class DaskBackend:
    """Submits tool calls to a `distributed.Client`; hands back concurrent futures.

    A step whose upstream steps are still running goes ahead with their Dask futures
    as dependencies (`submit_ahead`), so the cluster starts it the moment they finish.
    Steps sent ahead together leave as one graph (`flush`): one message, one graph
    update on the Dask scheduler, where one `Client.submit` each cost a wake-up of the
    client's loop and a graph update apiece. Results are collected by coroutines on
    the client's own event loop, as the cluster reports them, never by blocking calls
    from distributed's callback thread.
    """

    def __init__(self, client: Any, *, result_window: float = RESULT_WINDOW_SECONDS) -> None:
        self._client = client
        # Kept for the run: a step sent ahead depends on its upstream steps' futures.
        self._remote: dict[Future[Any], Any] = {}
        self._keys: dict[Future[Any], str] = {}  # each call's Dask key, sent or still batched
        self._batch: list[tuple[Any, Future[Any], str]] = []  # (task, future, step): to flush
        self._checked: dict[str, str | None] = {}
        self._packed: dict[str, tuple[str, bytes] | None] = {}  # tool name -> digest, pickle
        self._lock = threading.Lock()
        self._results = ResultCollector(client, self._error, window=result_window)

    def submit(self, call: ToolCall) -> Future[Any]:
        """Validate here, run there; the future resolves when the worker's result arrives."""
        future: Future[Any] = Future()
        future.set_running_or_notify_cancel()
        try:
            args = call.validated_args()
            self._check_picklable(call.tool, call.step.id)
        except StepgraphError as e:
            future.set_exception(e)
            return future
        data = {k: v.to_data() if isinstance(v, Expression) else v for k, v in args.items()}
        remote = self._client.submit(
            _run_remote, call.tool.func, encode_value(data), call.tool.is_async, pure=False
        )
        self._keys[future] = remote.key
        self._track([(remote, future, call.step.id)])
        return future

    def submit_ahead(
        self, step: Step, tool: Tool, known: dict[str, Any], upstream: Mapping[str, Future[Any]]
    ) -> Future[Any] | None:
        """Queue a step with its upstream steps' Dask keys as dependencies, for `flush`."""
        spec = _task_spec()
        if spec is None:
            return None  # a dask without task objects: the step waits for its inputs here
        Task, TaskRef = spec  # noqa: N806  # classes
        keys = [self._keys.get(future) for future in upstream.values()]
        refs = [TaskRef(key) for key in keys if key is not None]
        if len(refs) < len(keys):
            return None
        packed = self._pack(tool, step.id)
        if packed is None:
            return None
        try:
            encoded = encode_value(known)
        except StepgraphError:
            return None  # a value that cannot travel: the step waits and fails as usual
        future: Future[Any] = Future()
        future.set_running_or_notify_cancel()
        key = f"stepgraph-{step.id}-{uuid.uuid4().hex}"  # the step's name on the dashboard
        task = Task(key, _run_after, packed, step.args, encoded, tuple(upstream), *refs)
        self._keys[future] = key
        self._batch.append((task, future, step.id))
        return future

    def flush(self) -> None:
        """Send the steps queued by `submit_ahead` to the cluster, as one graph."""
        batch, self._batch = self._batch, []
        if not batch:
            return
        graph: Any = {task.key: task for task, _, _ in batch}
        with suppress(ImportError):  # dask >= 2025.1: a graph named once, not hashed in full
            from dask._expr import LLGExpr

            # What `Client.submit` does: a random name where `Client.get` would tokenize
            # every task (the tool's pickle in each): 0.2 ms a step on this thread.
            graph = LLGExpr(graph, _determ_token=uuid.uuid4().hex)
        remotes = self._client.get(graph, [task.key for task, _, _ in batch], sync=False)
        self._track(
            [
                (remote, future, step)
                for remote, (_, future, step) in zip(remotes, batch, strict=True)
            ]
        )

    def _track(self, sent: list[tuple[Any, Future[Any], str]]) -> None:
        with self._lock:
            for remote, future, _ in sent:
                self._remote[future] = remote
        self._results.watch(sent)

    def awaited(self, future: Future[Any]) -> None:
        """A step that could not go ahead waits here for this call's value: no batching it."""
        key = self._keys.get(future)
        if key is not None:
            self._results.urgent(key)

    @staticmethod
    def _error(remote: Any, error: BaseException, step: str) -> BaseException:
        if remote.cancelled():
            return TimeoutError("cancelled on the Dask cluster")
        if isinstance(error, ArgumentProblem):
            return NonRetryableError(str(error), step=step)
        return error

    def _pack(self, tool: Tool, step: str) -> tuple[str, bytes] | None:
        """The whole tool (schema and all), pickled once a run; None: it cannot travel.

        Pickled with every task it cost a millisecond a step here; the worker unpickles
        it once (`_tool`). Not scattered: that is a blocking round trip before the first
        step can go ahead, and a tool held by one worker pulls every step to it.
        """
        try:
            self._check_picklable(tool, step)
        except StepgraphError:
            return None  # submitted as usual later, where the error is reported
        if tool.name not in self._packed:
            import cloudpickle

            try:
                blob = cloudpickle.dumps(tool)
                self._packed[tool.name] = (hashlib.sha256(blob).hexdigest(), blob)
            except Exception:  # pickling fails in many ways; all mean "cannot ship"
                self._packed[tool.name] = None
        return self._packed[tool.name]

    def _check_picklable(self, tool: Tool, step: str) -> None:
        import cloudpickle

        name = tool.name
        if name not in self._checked:
            module = sys.modules.get(tool.func.__module__)
            if module is not None and module.__name__.startswith("stepgraph_plugin_"):
                cloudpickle.register_pickle_by_value(module)  # not importable on workers
            try:
                cloudpickle.dumps(tool.func)
                self._checked[name] = None
            except Exception as e:  # pickling fails in many ways; all mean "cannot ship"
                self._checked[name] = f"{type(e).__name__}: {e}"
        problem = self._checked[name]
        if problem is not None:
            raise NonRetryableError(
                f"tool '{name}' cannot be sent to Dask workers, it does not pickle ({problem}); "
                "define it at module level without locks, sockets or open files",
                step=step,
            )

    def cancel(self, future: Future[Any]) -> None:
        """Cancel the task on the cluster (a timed-out step, or one called back)."""
        self.flush()  # a queued step is cancelled where it can be: on the cluster
        with self._lock:
            remote = self._remote.pop(future, None)
        if remote is not None:
            remote.cancel()

    def shutdown(self) -> None:
        """Let go of this run's futures (the client belongs to `dask_backend`, which closes it)."""
        self._batch.clear()
        with self._lock:
            self._remote.clear()
        self._keys.clear()
        self._packed.clear()
        self._results.forget()


class DaskCluster:
    """The cluster `dask_backend` connected to: calling it makes a backend on it."""

    def __init__(self, client: Any) -> None:
        self.client = client  # a distributed.Client

    def __call__(self) -> Backend:
        """A backend that sends tool calls to this cluster (the Engine's `backend=`)."""
        return DaskBackend(self.client)

    @property
    def dashboard_link(self) -> str | None:
        """The scheduler's dashboard (where each step shows by name), or None if it has none."""
        try:
            link = self.client.dashboard_link
        except (KeyError, OSError):  # a scheduler started without the dashboard service
            return None
        return str(link) if link else None


@contextmanager
def dask_backend(
    scheduler: str | None = None, *, workers: int = 2, threads_per_worker: int = 2
) -> Iterator[DaskCluster]:
    """A backend factory on a Dask cluster: `scheduler` ("tcp://host:8786") or a local one.

    Without an address a LocalCluster is started here (it takes seconds: its workers are
    processes) and stopped on exit.
    """
    from distributed import Client, LocalCluster

    cluster = None
    if scheduler is None:
        cluster = LocalCluster(
            n_workers=workers,
            threads_per_worker=threads_per_worker,
            processes=True,
            dashboard_address=":0",  # a free port: a fixed one may be taken on this host
        )
    client = Client(scheduler or cluster)
    try:
        yield DaskCluster(client)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()

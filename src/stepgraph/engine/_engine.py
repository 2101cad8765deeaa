"""The engine: plan (or take the task's plan), approve, run, verify, repair, journal."""

from __future__ import annotations

import contextlib
import dataclasses
import stat
import uuid
import warnings
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from stepgraph.engine._given import check_given_plan
from stepgraph.exceptions import (
    ApprovalError,
    JournalError,
    StepgraphError,
    TaskFileError,
    UntrustedTaskError,
)
from stepgraph.model import ApprovalPolicy, Task
from stepgraph.task import PreparedTask, load_task, resolve_inputs
from stepgraph.tools import (
    ToolRegistry,
    as_spec,
    default_registry,
    load_plugin,
    start_servers,
)

# What only running needs (the session, the scheduler, the journal, the planner's client)
# is imported when a run starts: `stepgraph validate` starts in half the time without it.
if TYPE_CHECKING:
    import networkx as nx

    from stepgraph.engine._approval import Approver, PlanFile
    from stepgraph.engine._options import RunConfig, RunOptions
    from stepgraph.executor import Backend
    from stepgraph.journal import JournalEvent, Listener
    from stepgraph.model import McpServerSpec, RunResult, StepGraph
    from stepgraph.planner import Planner
    from stepgraph.tools import Tool


class Engine:
    """Runs tasks with the built-in tools plus any custom ones.

    Example:
        >>> engine = Engine(tools=[my_lookup_tool])
        >>> result = engine.run("examples/migration.yaml")
    """

    def __init__(
        self,
        tools: Iterable[Tool | Callable[..., Any]] = (),
        *,
        journal_dir: Path | str = "runs",
        max_workers: int | None = None,
        planner: Planner | None = None,
        repair_rounds: int = 2,
        backend: Callable[[], Backend] | None = None,
        cross_check: bool = False,
        mcp_servers: Iterable[McpServerSpec | str | dict[str, Any]] = (),
        stream: bool | None = None,
        memory: bool = False,
        freeze_heap: bool = True,
    ) -> None:
        """`memory`: recall verified plans of `journal_dir` for typed goals of the same shape.

        `freeze_heap`: each run calls `gc.freeze()` at its start and `gc.unfreeze()` at its
        end, so full collections skip the objects that existed before it; False leaves the
        collector to the host. A heap the host froze itself is left frozen either way.
        """
        self.tools = default_registry()
        # Started by each prepare, with the task's own; stopped when the run ends.
        self.mcp_servers = [as_spec(server) for server in mcp_servers]
        for item in tools:
            self.tools.register(item)
        self.journal_dir = Path(journal_dir)
        self._backend = backend
        self._settings: dict[str, Any] = {
            "planner": planner,
            "repair_rounds": repair_rounds,
            "max_workers": max_workers,
            "cross_check": cross_check,
            "stream": stream,
            "freeze_heap": freeze_heap,
        }
        self._memory = memory
        self._config: RunConfig | None = None

    @property
    def config(self) -> RunConfig:
        """What every run of this engine shares (made on first use: validating needs none)."""
        if self._config is None:
            from stepgraph.engine._options import RunConfig
            from stepgraph.executor import ThreadBackend

            memory = None
            if self._memory:
                from stepgraph.engine._memory import PlanMemory

                memory = PlanMemory(self.journal_dir)
            self._config = RunConfig(
                backend=self._backend or ThreadBackend, memory=memory, **self._settings
            )
        return self._config

    @property
    def planner(self) -> Planner | None:
        """The planner asked for plans, repairs and answers (None: plans must be given)."""
        return self.config.planner

    def prepare(
        self,
        task: Task | Path | str | PreparedTask,
        *,
        overrides: Mapping[str, str] | None = None,
        base_dir: Path | None = None,
        trust_code: bool = True,
    ) -> PreparedTask:
        """Load the task (a path or a `Task`), its plugins (relative to `base_dir`), its inputs.

        MCP servers (the engine's and the task's) are started here and stopped by
        `prepared.resources`, which `run`, `plan` and `validate` close when they end.
        With `trust_code=False`, a task that declares plugins or MCP servers raises
        `UntrustedTaskError` before anything is imported or started (what read-only
        commands pass for a task file that may come from someone else); the engine's
        own `mcp_servers` are its caller's and start either way.
        """
        if isinstance(task, PreparedTask):
            return task
        base_dir = (base_dir or Path.cwd()).resolve()
        if not isinstance(task, Task):
            if isinstance(task, str) and " " in task.strip() and not Path(task).exists():
                # The command line takes a goal here; Python callers say which it is.
                raise TaskFileError(
                    f"no task file {task!r}: to plan a goal, pass Task(name=..., goal=...)"
                )
            base_dir = Path(task).resolve().parent
            task = load_task(Path(task))
        if not trust_code:
            refuse_code(task)
        tools = ToolRegistry(self.tools)
        for plugin in task.plugins:
            for item in load_plugin(base_dir / plugin):
                tools.register(item)
        inputs = resolve_inputs(task, overrides)
        servers = start_servers([*self.mcp_servers, *task.mcp_servers], tools, base_dir)
        unknown = [name for name in task.tools if name not in tools]
        if unknown:
            servers.close()
            raise TaskFileError(
                f"task '{task.name}' allows unknown tools: {', '.join(unknown)} "
                f"(known: {', '.join(tools.names())})"
            )
        return PreparedTask(task, tools.restricted(task.tools), inputs, base_dir, resources=servers)

    def validate(
        self,
        task: Task | Path | str | PreparedTask,
        *,
        overrides: Mapping[str, str] | None = None,
        trust_code: bool = True,
    ) -> nx.DiGraph:
        """Run only the static checks; raise `PlanValidationError` listing every problem.

        `trust_code` is `prepare`'s: False refuses a task with plugins or MCP servers.
        """
        prepared = self.prepare(task, overrides=overrides, trust_code=trust_code)
        with prepared.resources:
            if prepared.plan is None:
                raise TaskFileError(f"task '{prepared.task.name}' has no plan to validate")
            return check_given_plan(prepared.plan, prepared)

    def plan(
        self,
        task: Task | Path | str | PreparedTask,
        *,
        overrides: Mapping[str, str] | None = None,
        journal: Path | str | None = None,
    ) -> StepGraph:
        """Ask the planner for a validated plan, journaling every model exchange."""
        from stepgraph.engine._options import require_planner
        from stepgraph.engine._planning import refuse_time_of_day
        from stepgraph.journal import JournalWriter

        prepared = self.prepare(task, overrides=overrides)
        with prepared.resources:
            planner = require_planner(self.planner, prepared)
            path = Path(journal) if journal else self._journal_path(prepared.task.name + "-plan")
            refuse_time_of_day(prepared)
            with JournalWriter(path, uuid.uuid4().hex[:12]) as writer:
                return planner.plan(prepared, writer)

    def run(
        self,
        task: Task | Path | str | PreparedTask,
        *,
        overrides: Mapping[str, str] | None = None,
        journal: Path | str | Literal[False] | None = None,
        listeners: Iterable[Listener] = (),
        approval: ApprovalPolicy | str | None = None,
        approver: Approver | None = None,
        plan_file: PlanFile | None = None,
        replace_journal: bool = False,
        options: RunOptions | None = None,
    ) -> RunResult:
        """Plan if needed, approve, execute, verify and repair, journaling every event.

        `approver` is asked when the policy is `ask` (or unset and the plan has side
        effects); without one, an `ask` run parks (`awaiting_approval`, nothing run) until
        `stepgraph.engine.decide` continues it from its journal. `plan_file` runs an
        approved, unchanged plan written by `stepgraph plan`.
        An existing, non-empty `journal` is refused unless `replace_journal` is set: a
        second run appended to it would make it unreadable as one run; `journal=False`
        keeps none (nothing to replay or resume from). `options` is how
        replay and resume enter this same pipeline: a run id to keep, settled steps, and
        for a resumed run the journal to continue.
        """
        from stepgraph.engine._budget import budget_keeper
        from stepgraph.engine._options import RunOptions, require_planner
        from stepgraph.engine._session import RunSession
        from stepgraph.journal import Guard, JournalWriter, NullJournal

        # The caller's options are not written to: this run's are a copy with the gate's own.
        options = dataclasses.replace(options) if options is not None else RunOptions()
        continuing = options.resumed is not None
        if journal is not None and journal is not False and not continuing:
            check_journal_free(Path(journal), replace=replace_journal)
        prepared = self.prepare(task, overrides=overrides)
        try:
            if plan_file is not None:
                plan_file.approved_plan()
            elif prepared.plan is None and options.prior is None and options.recalled is None:
                require_planner(self.planner, prepared)
        except StepgraphError:
            prepared.resources.close()  # nothing runs: the task's MCP servers stop now
            raise
        options.policy = _policy(approval) or options.policy or prepared.task.approval
        options.approver = approver or options.approver
        options.plan_file = plan_file
        run_id = options.run_id or uuid.uuid4().hex[:12]
        if journal is False:
            with prepared.resources, NullJournal(run_id, listeners=list(listeners)) as nowhere:
                return RunSession(self.config, prepared, nowhere, options).run()
        path = Path(journal) if journal else self._journal_path(prepared.task.name)
        if replace_journal:
            unlink_journal(path)  # the writer appends
        model = self.planner.client.model if self.planner else None
        keeper = budget_keeper(
            prepared.task.budget, options.budget, resumed=continuing, model=model, journal=path
        )
        guards: list[Guard] = [keeper.check]
        if options.cancel is not None:
            guards.append(options.cancel.check)
        writer = JournalWriter(
            path,
            run_id,
            listeners=list(listeners),
            guards=guards,
            start_seq=options.start_seq,
        )
        with prepared.resources, writer:  # the task's MCP servers stop with the run
            session = RunSession(self.config, prepared, writer, options, budget=keeper.recorded)
            result = session.run()
        result.budget = keeper.report()
        return result

    async def arun(self, task: Task | Path | str | PreparedTask, **options: Any) -> RunResult:
        """`run` for asyncio: the run goes on in a thread, the event loop stays free."""
        from stepgraph.engine import _async

        return await _async.arun(self.run, task, **options)

    def events(
        self, task: Task | Path | str | PreparedTask, **options: Any
    ) -> AsyncIterator[JournalEvent]:
        """Run, yielding each journal event as written: ``async for e in engine.events(t)``.

        (Not `stream=True`, which streams the plan from the model into the run.)
        """
        from stepgraph.engine import _async

        return _async.events(self.run, task, **options)

    def stream(
        self, task: Task | Path | str | PreparedTask, **options: Any
    ) -> AsyncIterator[JournalEvent]:
        """Deprecated: `events`. The old name read as `stream=True`, a different thing."""
        warnings.warn(
            "Engine.stream(task) is now Engine.events(task); Engine(stream=True) is what "
            "streams the plan from the model. The old name goes in the next release.",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.events(task, **options)

    def _journal_path(self, name: str) -> Path:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
        return self.journal_dir / f"{stamp}-{name}.jsonl"


def refuse_code(task: Task) -> None:
    """Raise `UntrustedTaskError` if preparing `task` would import plugins or start servers."""
    if not task.plugins and not task.mcp_servers:
        return
    # The command line, not the name: a server called "harmless" may run anything.
    commands = [
        " ".join([server.command, *server.args])
        for server in task.mcp_servers
        if server.command is not None
    ]
    urls = [server.url for server in task.mcp_servers if server.url is not None]
    raise UntrustedTaskError(task.name, plugins=list(task.plugins), servers=commands, urls=urls)


def check_journal_free(path: Path, *, replace: bool = False) -> None:
    """Refuse a journal path that already holds a run, unless it is to be replaced.

    A folder is refused whatever `replace` says. A device or a FIFO (`/dev/null` to keep
    nothing) is written to as it is: only a regular file is ever replaced (`unlink_journal`).
    """
    try:
        status = path.lstat()
    except OSError:
        return  # missing, or unreadable: the writer reports what it cannot do
    if stat.S_ISDIR(status.st_mode):
        raise JournalError("is a folder; give the journal a file name inside it", path=str(path))
    if not stat.S_ISREG(status.st_mode):
        return
    taken = status.st_size > 0
    if taken and not replace:
        raise JournalError(
            "the journal already holds a run; choose another path, or replace it "
            "(--replace-journal, or replace_journal=True)",
            path=str(path),
        )


def unlink_journal(path: Path) -> None:
    """Remove the regular file at `path` to replace it; a device (`/dev/null`) is never removed."""
    check_journal_free(path, replace=True)
    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISREG(path.lstat().st_mode):
            path.unlink()


def _policy(approval: ApprovalPolicy | str | None) -> ApprovalPolicy | None:
    """The policy asked for; its name ("ask") reads as the policy, anything else is refused."""
    if approval is None or isinstance(approval, ApprovalPolicy):
        return approval
    try:
        return ApprovalPolicy(approval)
    except ValueError:
        names = ", ".join(policy.value for policy in ApprovalPolicy)
        raise ApprovalError(
            f"approval={approval!r} is no approval policy; choose {names}"
        ) from None


def run(task: Task | Path | str | PreparedTask, **options: Any) -> RunResult:
    """Run a task: ``stepgraph.run("examples/migration.yaml", overrides={"data": "10TiB"})``."""
    names = (
        "tools",
        "journal_dir",
        "max_workers",
        "planner",
        "repair_rounds",
        "backend",
        "cross_check",
        "mcp_servers",
        "stream",
        "memory",
        "freeze_heap",
    )
    engine_options = {key: options.pop(key) for key in names if key in options}
    return Engine(**engine_options).run(task, **options)

"""The runs a server starts, decides and forks, each in its own thread, all through the journals.

The server keeps no state a restart would lose: a run is found through the index, a
parked run is continued from its journal (`stepgraph.engine.decide`), and the live view
is the journal file read as it grows.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from stepgraph.engine import (
    Cancellation,
    Decision,
    Engine,
    RunOptions,
    code_inside,
    continue_decided,
    record_decision,
    replay,
)
from stepgraph.exceptions import (
    ApprovalError,
    JournalError,
    PlannerNotConfiguredError,
    StepgraphError,
    TaskFileError,
)
from stepgraph.guards import file_part, path_problem
from stepgraph.journal import RunIndex, RunRow, read_page, writer_alive
from stepgraph.model import ApprovalPolicy, Task
from stepgraph.planner import Planner
from stepgraph.serve._views import recorded_decision, way_on
from stepgraph.task import load_task, plugins_outside
from stepgraph.tools import Tool

log = logging.getLogger("stepgraph.serve")
TAIL_INTERVAL = 0.02  # seconds between looks at a journal that has not grown
TAIL_PAGE = 200  # events read at a time by a follower
LIVENESS_POLLS = 25  # idle looks between asking whether a process still writes the journal


class RunNotFound(LookupError):
    """No run with this id in the runs folder."""


class RunNotCancellable(RuntimeError):
    """A cancellation refused: the run waits, ended, or another process runs it."""


class RunManager:
    """Starts runs, continues parked ones, forks; finds any run through the index."""

    def __init__(
        self,
        runs_dir: Path,
        *,
        workspace: Path,
        planner: Planner | None = None,
        tools: Iterable[Tool | Callable[..., Any]] = (),
    ) -> None:
        self.runs_dir = runs_dir
        self.workspace = workspace.resolve()
        self.planner = planner
        self.tools = list(tools)
        self.index = RunIndex(runs_dir)
        self._threads: list[threading.Thread] = []
        # The runs this server runs now, each with the request that stops it.
        self._cancels: dict[str, Cancellation] = {}

    def engine(self) -> Engine:
        """An engine with the server's tools and planner."""
        return Engine(tools=self.tools, journal_dir=self.runs_dir, planner=self.planner)

    def row(self, run_id: str) -> RunRow:
        """The index row of a run, or `RunNotFound`."""
        row = self.index.get(run_id)
        # The index reads only the folder's own files; this holds even for an index
        # database written by someone else.
        if row is None or not Path(row.path).resolve().is_relative_to(self.runs_dir.resolve()):
            raise RunNotFound(run_id)
        return row

    def task_path(self, name: str) -> Path:
        """A task file inside the workspace; anything outside it is refused."""
        problem = path_problem(name)
        if problem:
            raise TaskFileError(f"the task file's name {problem}", path=repr(name))
        path = (self.workspace / name).resolve()
        if not path.is_relative_to(self.workspace):
            raise TaskFileError("task files must be inside the server's workspace", path=name)
        if not path.is_file():
            raise TaskFileError("no such task file in the workspace", path=name)
        return path

    def start(
        self,
        *,
        task: str | None,
        goal: str | None,
        overrides: dict[str, str],
        approval: ApprovalPolicy | None,
    ) -> str:
        """Start a run (a task file of the workspace, or a goal); returns its run id at once."""
        engine = self.engine()
        if task:
            path = self.task_path(task)
            loaded = load_task(path)
            outside = plugins_outside(loaded, path.parent, self.workspace)
            if outside:  # the workspace is what the server's owner trusts, nothing beyond
                raise TaskFileError(
                    f"the task loads plugins from outside the workspace ({', '.join(outside)})",
                    path=task,
                )
            prepared = engine.prepare(loaded, overrides=overrides, base_dir=path.parent)
        elif goal:
            prepared = engine.prepare(Task(name="goal", goal=goal), overrides=overrides)
        else:
            raise TaskFileError("give a task file (of the workspace) or a goal")
        if prepared.plan is None and self.planner is None:  # say so now, not in a thread
            raise PlannerNotConfiguredError(
                f"task '{prepared.task.name}' has no plan and the server has no planner: "
                "start `stepgraph serve` with a model (--base-url/--model) or --scripted"
            )
        run_id = uuid.uuid4().hex[:12]
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
        journal = self.runs_dir / f"{stamp}-{file_part(prepared.task.name, 'task')}.jsonl"
        cancel = self._cancels[run_id] = Cancellation()
        options = RunOptions(run_id=run_id, cancel=cancel)
        errors: list[StepgraphError] = []

        def work() -> None:
            try:
                engine.run(prepared, journal=journal, approval=approval, options=options)
            except StepgraphError as e:
                errors.append(e)
                raise
            finally:
                self._cancels.pop(run_id, None)

        thread = self._spawn(run_id, work)
        self._wait_for_journal(journal, thread)
        if errors and self.index.at(journal) is None:  # it stopped before its first event
            raise _unpathed(errors[0], "cannot start the run")
        return run_id

    def decide(self, run_id: str, decision: Decision) -> None:
        """Continue a parked run with a decision; refused (at once) if it cannot be carried out.

        An approval or a rejection is in the journal, under the run's lock, before this
        returns: a decider told it was accepted is the one whose decision is carried out,
        and any other (here, another server, `stepgraph approve`) gets an `ApprovalError`
        naming it. The rest of the run goes on in the background. An edit or a revision
        parks again with the new plan, so it is carried out before this returns: the
        approval page that follows shows the new plan and its diff.
        """
        row = self.row(run_id)
        path = Path(row.path)
        try:
            pending = record_decision(path, decision, tools=self.tools, planner=self.planner)
        except ApprovalError as e:
            way = way_on(row)
            raise ApprovalError(f"{e}; {way}" if way else str(e)) from e
        except JournalError as e:
            raise _unpathed(e, "cannot record the decision") from e

        cancel = Cancellation()

        def work() -> None:
            with pending:
                try:
                    pending.carry_out(cancel=cancel)
                finally:
                    self._cancels.pop(run_id, None)

        if decision.action == "approve":  # it runs now: it can be cancelled while it does
            self._cancels[run_id] = cancel
        if decision.action in ("edit", "revise"):
            work()
        else:
            self._spawn(run_id, work)

    def continue_run(self, run_id: str) -> str:
        """Carry out a decision recorded but never carried out (its process stopped).

        Returns who decided what; refused (`ApprovalError`) when the run has no such
        decision: it is parked (decide it), ended, running, or was interrupted while its
        steps ran (`stepgraph resume` finishes that).
        """
        row = self.row(run_id)
        path = Path(row.path)
        recorded = recorded_decision(path)
        if recorded is None or row.status != "interrupted":
            raise ApprovalError(
                "the run has no recorded decision waiting to be carried out: "
                + (way_on(row) or f"it is {row.status.replace('_', ' ')}")
            )
        size = path.stat().st_size
        outcome: list[object] = []

        def work() -> None:
            try:
                outcome.append(continue_decided(path, tools=self.tools, planner=self.planner))
            except StepgraphError as e:
                outcome.append(e)
                raise

        thread = self._spawn(run_id, work)
        deadline = time.monotonic() + 10
        while thread.is_alive() and time.monotonic() < deadline:  # until it writes, or stops
            with contextlib.suppress(OSError):
                if path.stat().st_size > size:
                    break
            time.sleep(0.005)
        if outcome and isinstance(outcome[0], StepgraphError):
            raise outcome[0]
        if outcome and outcome[0] is None:
            raise ApprovalError("the run has no recorded decision waiting to be carried out")
        return recorded

    def cancel(self, run_id: str, who: str) -> None:
        """Ask a run this server is running to stop before its next model or tool call.

        Refused (`RunNotCancellable`, saying why) for a run that waits for a decision
        (reject it instead), one that ended, or one another process runs.
        """
        row = self.row(run_id)
        cancel = self._cancels.get(run_id)
        if cancel is not None:  # this server runs it now
            if not cancel.cancel(who):
                raise RunNotCancellable(f"the run was cancelled already, by {cancel.who}")
            return
        if row.awaiting or row.status == "awaiting_approval":
            raise RunNotCancellable(
                "the run waits for a decision and runs nothing: reject its plan instead "
                f"(/runs/{run_id}/approve)"
            )
        if row.status != "running":
            raise RunNotCancellable(f"the run is not running: it is {row.status.replace('_', ' ')}")
        raise RunNotCancellable(
            "another process runs it (this server did not start it): stop that process"
        )

    def fork(self, run_id: str, step: str) -> str:
        """A new run of the recorded one: `step` and what depends on it run again."""
        parent = Path(self.row(run_id).path)
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
        out = self.runs_dir / f"{parent.stem}.fork-{file_part(step, 'step')}-{stamp}.jsonl"
        errors: list[BaseException] = []

        def work() -> None:
            try:
                trusted = code_inside(parent, self.workspace)  # the workspace is the owner's
                replay(parent, from_step=step, out=out, tools=self.tools, trust_plugins=trusted)
            except StepgraphError as e:
                errors.append(e)

        self._wait_for_journal(out, self._spawn(f"fork-{run_id}-{stamp}", work))
        row = self.index.at(out)
        if row is None:
            raise TaskFileError(f"the fork did not start: {errors[0] if errors else 'no journal'}")
        return row.run_id

    def replay(self, run_id: str) -> dict[str, Any]:
        """Run a recorded run again from its journal; identical, or where it diverged."""
        path = Path(self.row(run_id).path)
        trusted = code_inside(path, self.workspace)
        report = replay(path, tools=self.tools, trust_plugins=trusted)
        return {
            "identical": report.identical,
            "journal": report.journal.name,
            "divergences": [str(d) for d in report.divergences],
            "error": report.error,
        }

    def _spawn(self, name: str, work: Callable[[], None]) -> threading.Thread:
        def guarded() -> None:
            try:
                work()
            except StepgraphError as e:  # journaled as the run's end by the engine
                log.warning("run %s stopped: %s", name, e)

        thread = threading.Thread(target=guarded, name=f"run-{name}", daemon=True)
        self._threads.append(thread)
        thread.start()
        return thread

    def _wait_for_journal(self, path: Path, thread: threading.Thread, timeout: float = 10) -> None:
        """Until the run's first event is on disk (so the index finds it), or its thread ended."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if path.stat().st_size > 0 and b"\n" in path.read_bytes()[:65536]:
                    return
            except OSError:
                pass
            if not thread.is_alive():
                return
            time.sleep(0.005)

    def join(self, timeout: float = 30) -> None:
        """Wait for the runs started here (tests, shutdown)."""
        for thread in list(self._threads):
            thread.join(timeout)

    async def tail(
        self, run_id: str, after_seq: int = 0, offset: int = 0
    ) -> AsyncIterator[tuple[int, bytes] | StreamEnd]:
        """The journal's lines with their seq as they are written (after `after_seq`), then the end.

        Reading the file rather than listening inside the engine means a run started by
        another process (the command line) is followed the same way. It is read a page
        at a time from where the last page stopped (from byte `offset` at first), so
        what is held is one page, whatever the size of the journal. The last item says
        why it stopped: the run ended, or its journal was replaced, removed or cut
        shorter than what was read, or no process writes it any more (interrupted).
        """
        path = Path(self.row(run_id).path)
        after = after_seq
        try:
            first = path.stat()
        except OSError:
            yield StreamEnd.of("journal_removed")
            return
        idle = 0
        last_kind = ""
        while True:
            try:
                page = await asyncio.to_thread(
                    read_page, path, after=after, offset=offset, limit=TAIL_PAGE
                )
            except JournalError:  # gone, or rewritten under the offset
                yield StreamEnd.of(_changed(path, first, offset) or "journal_truncated")
                return
            for line in page.lines:
                yield line.seq, line.text
            if page.lines:
                last_kind = page.lines[-1].kind
            offset, after = page.next_offset, page.last_seq
            if page.ended:
                yield StreamEnd.of("ended")
                return
            changed = _changed(path, first, offset)
            if changed:
                yield StreamEnd.of(changed)
                return
            if page.lines:
                idle = 0
                continue
            # At the end, or at a line still being written: look again soon, and now
            # and then ask whether anyone still writes it (a parked run waits, unwritten).
            idle += 1
            asking = idle == 1 or idle % LIVENESS_POLLS == 0  # at once, then now and then
            if (
                asking
                and last_kind != "plan.awaiting"
                and await asyncio.to_thread(writer_alive, path) is False
            ):  # the index says whether that is a run parked or one whose process died
                row = await asyncio.to_thread(self.index.at, path)
                if row is not None and row.status == "interrupted":
                    yield StreamEnd.of("interrupted")
                    return
            await asyncio.sleep(TAIL_INTERVAL)


def _unpathed(error: StepgraphError, doing: str) -> StepgraphError:
    """The error without the server's path in its message (a journal's is the runs folder's)."""
    if not isinstance(error, JournalError):
        return error
    said = str(error).removeprefix(f"{error.path}: ") if error.path else str(error)
    return JournalError(f"{doing}: {said}")


_END_MESSAGES = {
    "ended": "the run ended",
    "journal_replaced": "the run's journal was replaced by another file while it was "
    "followed: what was shown is not what the file holds now; reload the page",
    "journal_removed": "the run's journal was removed while it was followed",
    "journal_truncated": "the run's journal was cut shorter (or rewritten) while it was "
    "followed: what was shown is not what the file holds now; reload the page",
    "interrupted": "no process writes the run any more: it stopped before the run ended "
    "(interrupted); reload the page to see how it goes on",
}


@dataclass(frozen=True)
class StreamEnd:
    """Why a followed journal's stream stopped, for the follower to say."""

    reason: str  # a key of `_END_MESSAGES`
    message: str

    @classmethod
    def of(cls, reason: str) -> StreamEnd:
        """The end for `reason`, with its message."""
        return cls(reason, _END_MESSAGES[reason])


def _changed(path: Path, first: os.stat_result, offset: int) -> str | None:
    """Whether the journal at `path` is no longer the file being read, or is shorter than read."""
    try:
        now = path.stat()
    except FileNotFoundError:
        return "journal_removed"
    except OSError:
        return None
    if (now.st_dev, now.st_ino) != (first.st_dev, first.st_ino):
        return "journal_replaced"
    if now.st_size < offset:
        return "journal_truncated"
    return None

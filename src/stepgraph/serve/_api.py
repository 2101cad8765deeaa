"""The HTTP API: start, list, read, follow (server-sent events), decide, replay and fork runs."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import Response, StreamingResponse
from pydantic import BaseModel, Field, StringConstraints

from stepgraph.engine import Decision
from stepgraph.exceptions import ApprovalError, JournalError, StepgraphError
from stepgraph.journal import PAGE_EVENTS, read_page
from stepgraph.model import ApprovalPolicy, StepGraph
from stepgraph.serve._keepalive import KEEPALIVE_SECONDS, PING, with_keepalive
from stepgraph.serve._runs import RunManager, RunNotCancellable, RunNotFound, StreamEnd
from stepgraph.serve._views import result_of, review_of

# Bounds on what a request may put into a journal: a name, a comment, an input value.
MAX_NAME = 200
MAX_COMMENT = 10_000
MAX_VALUE = 10_000
MAX_INPUTS = 100
MAX_ID = 100
MAX_PAGE = 5_000  # events in one page of a journal at most

InputName = Annotated[str, StringConstraints(min_length=1, max_length=MAX_ID)]
InputValue = Annotated[str, StringConstraints(max_length=MAX_VALUE)]


class StartRun(BaseModel):
    """A run to start: a task file of the workspace, or a goal."""

    task: str | None = Field(
        None, max_length=1000, description="A task file, relative to the workspace."
    )
    goal: str | None = Field(
        None, max_length=MAX_COMMENT, description="A goal in plain language (needs a planner)."
    )
    set: dict[InputName, InputValue] = Field(
        default_factory=dict, max_length=MAX_INPUTS, description="Input overrides."
    )
    approval: ApprovalPolicy | None = Field(
        None, description="auto, ask (parks for a decision here), readonly or never."
    )


class DecisionIn(BaseModel):
    """Who decides; with an edited plan or a comment for the planner where that applies."""

    by: str = Field(
        min_length=1, max_length=MAX_NAME, description="Who decides (recorded in the journal)."
    )
    plan: StepGraph | None = Field(None, description="For edit: the plan to run instead.")
    comment: str = Field(
        "", max_length=MAX_COMMENT, description="For revise: what the planner should change."
    )
    approval_hash: str | None = Field(
        None,
        pattern="^[0-9a-f]{64}$",
        description="The approval hash the decider was shown (GET .../plan): a decision "
        "about a plan or task that changed since is refused (409).",
    )


class CancelIn(BaseModel):
    """Who cancels the run."""

    by: str = Field(
        min_length=1, max_length=MAX_NAME, description="Who cancels (recorded in the journal)."
    )


class ForkIn(BaseModel):
    """The step to fork from: it and everything depending on it run again."""

    step: str = Field(min_length=1, max_length=MAX_ID, description="The id of a step of the run.")


def _not_found(run_id: str) -> HTTPException:
    return HTTPException(404, f"no run '{run_id}'")


def api_router(
    manager: RunManager, csrf_token: str, *, keepalive: float = KEEPALIVE_SECONDS
) -> APIRouter:
    """The routes under /api; an event stream quiet for `keepalive` seconds sends a comment."""
    router = APIRouter(prefix="/api")

    @router.get("/session")
    def session() -> dict[str, str]:
        """The CSRF token every state-changing request must send as X-CSRF-Token."""
        return {"csrf_token": csrf_token}

    @router.get("/runs")
    def list_runs(
        status: str | None = None,
        task: str | None = None,
        limit: Annotated[int, Query(ge=1, le=1000)] = 200,
    ) -> list[dict[str, Any]]:
        """Runs, newest first, from the index (kept current from the journals)."""
        rows = manager.index.runs(status=status or None, task=task or None, limit=limit)
        return [{**row.as_dict(), "path": row.path.rsplit("/", 1)[-1]} for row in rows]

    @router.post("/runs", status_code=201)
    def start_run(body: StartRun) -> dict[str, str]:
        """Start a run; with approval `ask` it parks until decided here or elsewhere."""
        try:
            run_id = manager.start(
                task=body.task, goal=body.goal, overrides=body.set, approval=body.approval
            )
        except JournalError as e:  # the runs folder cannot be written (read-only, full)
            raise HTTPException(503, str(e)) from e
        except StepgraphError as e:
            raise HTTPException(400, str(e)) from e
        return {"run_id": run_id}

    @router.get("/runs/{run_id}")
    def run_result(run_id: str) -> dict[str, Any]:
        """One run: status, values, verdicts, the answer with each number's step."""
        try:
            return result_of(manager.row(run_id))
        except RunNotFound as e:
            raise _not_found(run_id) from e

    @router.get("/runs/{run_id}/events/page")
    def event_page(
        run_id: str,
        after: Annotated[int, Query(ge=0)] = 0,
        limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = PAGE_EVENTS,
        offset: Annotated[int, Query(ge=0)] = 0,
    ) -> Response:
        """A page of the journal's events (seq over `after`), read from byte `offset`.

        The answer names where the next page starts: ask again with its `after` and
        `offset` until `more` is false. A page is read line by line from the offset,
        never the whole journal.
        """
        try:
            path = Path(manager.row(run_id).path)
            page = read_page(path, after=after, limit=limit, offset=offset)
        except RunNotFound as e:
            raise _not_found(run_id) from e
        except JournalError as e:  # its message names the server's path: not sent
            raise HTTPException(
                400, f"offset {offset} is not the start of a line of the run's journal"
            ) from e
        # The lines are JSON already: joined as they are, not parsed and written again.
        body = b'{"events":[%s],"after":%d,"offset":%d,"more":%s}' % (
            b",".join(line.text for line in page.lines),
            page.last_seq,
            page.next_offset,
            b"true" if page.more else b"false",
        )
        return Response(body, media_type="application/json")

    @router.get("/runs/{run_id}/events", response_class=StreamingResponse)
    async def events(
        run_id: str,
        request: Request,
        after: Annotated[int, Query(ge=0)] = 0,
        offset: Annotated[int, Query(ge=0)] = 0,
    ) -> StreamingResponse:
        """The journal's events as server-sent events, from the start (or `after`), then live.

        A stream with nothing to send for a while sends a comment (`: ping`), so that a
        proxy does not drop the connection of a run that waits for a decision.

        `offset` (a byte offset at the start of a line, as a page of events gives it)
        lets a follower of a large journal start there instead of reading from its start.
        """
        try:
            path = Path(manager.row(run_id).path)
        except RunNotFound as e:
            raise _not_found(run_id) from e
        last = request.headers.get("last-event-id")
        start = int(last) if last and last.isdigit() else after
        if offset:  # asked here, not in the stream: a wrong offset is the request's fault
            try:
                read_page(path, after=start, limit=1, offset=offset)
            except JournalError as e:
                raise HTTPException(
                    400, f"offset {offset} is not the start of a line of the run's journal"
                ) from e

        async def stream() -> AsyncIterator[bytes]:
            async for item in with_keepalive(manager.tail(run_id, start, offset), keepalive):
                if item is None:  # quiet for `keepalive` seconds: a parked run, say
                    if await request.is_disconnected():
                        return
                    yield PING
                    continue
                if isinstance(item, StreamEnd):
                    # The run's own end says nothing more; any other end says why.
                    said = {} if item.reason == "ended" else asdict(item)
                    yield b"event: end\ndata: %s\n\n" % json.dumps(said).encode()
                    return
                if await request.is_disconnected():
                    return
                seq, line = item
                # `id:` lets a reconnecting EventSource resume after the last event it saw.
                yield b"id: %d\ndata: %s\n\n" % (seq, line)

        return StreamingResponse(
            stream(),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    @router.get("/runs/{run_id}/plan")
    def plan_to_review(run_id: str) -> dict[str, Any]:
        """The parked plan: steps, critical path, side effects, diff against the one before."""
        try:
            review = review_of(manager.row(run_id), manager.tools)
        except RunNotFound as e:
            raise _not_found(run_id) from e
        if review is None:
            raise HTTPException(409, "the run is not awaiting approval")
        return {
            "plan": review.state.plan.model_dump(mode="json"),
            "critical_path": review.critical_path,
            "side_effects": review.side_effects,
            "diff": review.diff,
            "inputs": review.inputs,
            "approval_hash": review.approval_hash,
        }

    def _decide(run_id: str, decision: Decision) -> dict[str, str]:
        try:
            manager.decide(run_id, decision)
        except RunNotFound as e:
            raise _not_found(run_id) from e
        except ApprovalError as e:
            raise HTTPException(409, str(e)) from e
        except JournalError as e:  # the runs folder cannot be written (read-only, full)
            raise HTTPException(503, str(e)) from e
        except StepgraphError as e:  # an edited plan that fails the static checks
            raise HTTPException(400, str(e)) from e
        return {"run_id": run_id, "decision": decision.action, "by": decision.who}

    @router.post("/runs/{run_id}/continue", status_code=202)
    def continue_run(run_id: str) -> dict[str, str]:
        """Carry out a decision recorded but not carried out: the server that took it stopped.

        A run interrupted while its steps ran is not continued here: `stepgraph resume`
        on the server finishes it (the run's `way_on` says so).
        """
        try:
            decided = manager.continue_run(run_id)
        except RunNotFound as e:
            raise _not_found(run_id) from e
        except ApprovalError as e:
            raise HTTPException(409, str(e)) from e
        except StepgraphError as e:
            raise HTTPException(400, str(e)) from e
        return {"run_id": run_id, "continued": decided}

    @router.post("/runs/{run_id}/approve", status_code=202)
    def approve(run_id: str, body: DecisionIn) -> dict[str, str]:
        """Approve the parked plan: the run continues."""
        return _decide(
            run_id, Decision("approve", who=body.by, how="web", approval_hash=body.approval_hash)
        )

    @router.post("/runs/{run_id}/reject", status_code=202)
    def reject(run_id: str, body: DecisionIn) -> dict[str, str]:
        """Reject the parked plan: the run ends, nothing runs."""
        return _decide(
            run_id, Decision("reject", who=body.by, how="web", approval_hash=body.approval_hash)
        )

    @router.post("/runs/{run_id}/edit", status_code=202)
    def edit(run_id: str, body: DecisionIn) -> dict[str, str]:
        """Replace the parked plan (checked first); it parks again for approval."""
        if body.plan is None:
            raise HTTPException(422, "an edit needs the plan")
        return _decide(
            run_id,
            Decision(
                "edit", plan=body.plan, who=body.by, how="web", approval_hash=body.approval_hash
            ),
        )

    @router.post("/runs/{run_id}/revise", status_code=202)
    def revise(run_id: str, body: DecisionIn) -> dict[str, str]:
        """Ask the planner to revise the parked plan; the revision parks again."""
        if not body.comment.strip():
            raise HTTPException(422, "a revision needs a comment for the planner")
        if manager.planner is None:
            raise HTTPException(409, "a revision needs a planner; the server has none")
        return _decide(
            run_id,
            Decision(
                "revise",
                comment=body.comment,
                who=body.by,
                how="web",
                approval_hash=body.approval_hash,
            ),
        )

    @router.post("/runs/{run_id}/cancel", status_code=202)
    def cancel(run_id: str, body: CancelIn) -> dict[str, str]:
        """Stop a run this server runs before its next model or tool call.

        Steps already running finish and are journaled; nothing new starts. The run ends
        with `run.cancelled` (who) and `run.end` with status `cancelled`. A run that waits
        for a decision is rejected instead (409), as is one that ended or that another
        process runs.
        """
        try:
            manager.cancel(run_id, body.by)
        except RunNotFound as e:
            raise _not_found(run_id) from e
        except RunNotCancellable as e:
            raise HTTPException(409, str(e)) from e
        return {"run_id": run_id, "cancelled_by": body.by}

    @router.post("/runs/{run_id}/replay")
    def replay(run_id: str) -> dict[str, Any]:
        """Run the recorded run again from its journal; identical, or where it diverged."""
        try:
            return manager.replay(run_id)
        except RunNotFound as e:
            raise _not_found(run_id) from e
        except StepgraphError as e:
            raise HTTPException(400, str(e)) from e

    @router.post("/runs/{run_id}/fork", status_code=201)
    def fork(run_id: str, body: ForkIn) -> dict[str, str]:
        """A new run from a step: that step and its dependents run again, the rest is reused."""
        try:
            return {"run_id": manager.fork(run_id, body.step), "parent": run_id}
        except RunNotFound as e:
            raise _not_found(run_id) from e
        except StepgraphError as e:
            raise HTTPException(400, str(e)) from e

    return router

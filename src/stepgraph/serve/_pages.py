"""The pages: the run list, a run (graph, timeline, inspector, answer), a plan to approve."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from stepgraph.journal import LARGE_JOURNAL
from stepgraph.serve._runs import RunManager, RunNotFound
from stepgraph.serve._times import day_bound, when
from stepgraph.serve._views import (
    NODE_H,
    NODE_W,
    recorded_decision,
    review_of,
    run_view,
    way_on,
)

TEMPLATES = Jinja2Templates(directory=Path(__file__).parent / "templates")
TEMPLATES.env.filters["when"] = when
MAX_SEARCH = 200  # characters of a search over the runs' goals and answers
STATUSES = (
    "awaiting_approval",
    "running",
    "verified",
    "unchecked",
    "unverified",
    "step_failed",
    "not_run",
    "not_approved",
    "invalid",
    "error",
    "interrupted",
    "cancelled",
    "budget_exceeded",
)


def pages_router(manager: RunManager, csrf_token: str) -> APIRouter:
    """The HTML pages (not part of the OpenAPI schema)."""
    router = APIRouter(include_in_schema=False)

    def row_or_404(run_id: str):  # type: ignore[no-untyped-def]
        try:
            return manager.row(run_id)
        except RunNotFound as e:
            raise HTTPException(404, f"no run '{run_id}'") from e

    @router.get("/", response_class=HTMLResponse)
    def run_list(
        request: Request,
        status: str = "",
        task: str = "",
        q: Annotated[str, Query(max_length=MAX_SEARCH)] = "",
        since: Annotated[str, Query(max_length=10)] = "",
        until: Annotated[str, Query(max_length=10)] = "",
    ) -> HTMLResponse:
        rows = manager.index.runs(
            status=status or None,
            task=task or None,
            text=q.strip() or None,
            since=day_bound(since),
            until=day_bound(until, end=True),
            limit=500,
        )
        return TEMPLATES.TemplateResponse(
            request,
            "runs.html",
            {
                "rows": rows,
                "status": status,
                "task": task,
                "q": q,
                "since": since,
                "until": until,
                "filtered": bool(status or task or q.strip() or since or until),
                "statuses": STATUSES,
                "index_note": manager.index.in_memory,
                "csrf": csrf_token,
            },
        )

    @router.get("/runs/{run_id}", response_class=HTMLResponse)
    def run_page(request: Request, run_id: str) -> HTMLResponse:
        row = row_or_404(run_id)
        view = run_view(row)
        parent = manager.index.get(row.parent) if row.parent else None
        replayed = manager.index.get(row.replay_of) if row.replay_of else None
        return TEMPLATES.TemplateResponse(
            request,
            "run.html",
            {
                "row": row,
                "view": view,
                "plan_hash": view.plan_hash,
                "picture": view.picture,
                "large_journal": LARGE_JOURNAL,
                "node_w": NODE_W,
                "node_h": NODE_H,
                "parent": parent,
                "replayed": replayed,
                "forks": manager.index.children(row.run_id),
                "way_on": way_on(row),
                "continuable": row.status == "interrupted" and recorded_decision(Path(row.path)),
                "csrf": csrf_token,
            },
        )

    @router.get("/runs/{run_id}/approve", response_class=HTMLResponse)
    def approval_page(request: Request, run_id: str) -> HTMLResponse:
        row = row_or_404(run_id)
        return TEMPLATES.TemplateResponse(
            request,
            "approve.html",
            {
                "row": row,
                "review": review_of(row, manager.tools),
                "can_revise": manager.planner is not None,
                "csrf": csrf_token,
            },
        )

    return router

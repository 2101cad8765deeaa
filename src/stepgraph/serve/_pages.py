"""The pages: the run list, a run (graph, timeline, inspector, answer), a plan to approve."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from stepgraph.journal import LARGE_JOURNAL
from stepgraph.serve._runs import RunManager, RunNotFound
from stepgraph.serve._views import (
    NODE_H,
    NODE_W,
    recorded_decision,
    review_of,
    run_view,
    way_on,
)

TEMPLATES = Jinja2Templates(directory=Path(__file__).parent / "templates")
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
    def run_list(request: Request, status: str = "", task: str = "") -> HTMLResponse:
        rows = manager.index.runs(status=status or None, task=task or None, limit=500)
        return TEMPLATES.TemplateResponse(
            request,
            "runs.html",
            {
                "rows": rows,
                "status": status,
                "task": task,
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
            {"row": row, "review": review_of(row, manager.tools), "csrf": csrf_token},
        )

    return router

"""The ASGI app of `stepgraph serve`: API, pages, static files, behind the guard."""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from fastapi.staticfiles import StaticFiles

from stepgraph.guards import MAX_BODY, AllowedHosts
from stepgraph.planner import Planner
from stepgraph.serve._api import api_router
from stepgraph.serve._api_docs import api_docs_router
from stepgraph.serve._keepalive import KEEPALIVE_SECONDS
from stepgraph.serve._pages import TEMPLATES, pages_router
from stepgraph.serve._runs import RunManager
from stepgraph.serve._security import Guard
from stepgraph.tools import Tool


def create_app(
    runs_dir: Path | str = "runs",
    *,
    workspace: Path | str = ".",
    token: str | None = None,
    planner: Planner | None = None,
    tools: Iterable[Tool | Callable[..., Any]] = (),
    host: str = "127.0.0.1",
    port: int | None = None,
    allow_hosts: Iterable[str] = (),
    max_body: int = MAX_BODY,
    keepalive: float = KEEPALIVE_SECONDS,
) -> Guard:
    """The web app over a runs folder; its `.app.state.manager` runs the runs.

    `token`, when given, is required of every request (``Authorization: Bearer``, or the
    cookie set by opening any page once with ``?token=``). Every state-changing request
    needs the CSRF token the pages carry (``GET /api/session`` gives it to API clients).
    Requests must name the server in `Host` (loopback names, `host`, `allow_hosts`; at
    `port` when it is given), else 421; bodies over `max_body` bytes get 413. An event
    stream quiet for `keepalive` seconds sends a comment, which keeps proxies from
    closing it.
    """
    manager = RunManager(Path(runs_dir), workspace=Path(workspace), planner=planner, tools=tools)
    csrf_token = secrets.token_urlsafe(24)
    app = FastAPI(
        title="stepgraph",
        summary="Runs of the plan-and-execute engine: start, follow, approve, replay, fork.",
        version="1",
        docs_url=None,  # Swagger UI and ReDoc load from a CDN: /docs is served here instead
        redoc_url=None,
    )
    app.state.manager = manager
    app.add_exception_handler(RequestValidationError, _invalid_request)
    app.include_router(api_router(manager, csrf_token, keepalive=keepalive))
    app.include_router(pages_router(manager, csrf_token))
    app.include_router(api_docs_router(TEMPLATES, csrf_token))
    app.mount("/static", StaticFiles(directory=Path(__file__).parent / "static"), name="static")
    hosts = AllowedHosts.of(host, port=port, extra=allow_hosts)
    return Guard(app, token=token, csrf_token=csrf_token, hosts=hosts, max_body=max_body)


async def _invalid_request(request: Request, error: Exception) -> Response:
    """422 with what was wrong, as FastAPI says it, written as ASCII JSON.

    FastAPI's own handler echoes the input as UTF-8: a lone surrogate in a request's JSON
    (an escaped D800) has none, and its 422 became a 500.
    """
    assert isinstance(error, RequestValidationError)
    body = json.dumps({"detail": jsonable_encoder(error.errors())}, ensure_ascii=True)
    return Response(body, status_code=422, media_type="application/json")

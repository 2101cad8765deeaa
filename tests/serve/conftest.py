"""A real server (uvicorn on a free port of 127.0.0.1) over a temporary runs folder."""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from stepgraph.serve import create_app
from stepgraph.serve._runs import RunManager
from tests.conftest import EXAMPLES


@dataclass
class Server:
    url: str
    runs: Path
    workspace: Path
    manager: RunManager
    client: httpx.Client
    csrf: str

    def post(self, path: str, **json: Any) -> httpx.Response:
        return self.client.post(path, json=json, headers={"X-CSRF-Token": self.csrf})

    def wait_status(self, run_id: str, *statuses: str, timeout: float = 30) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            result = self.client.get(f"/api/runs/{run_id}").json()
            if result["status"] in statuses:
                return result
            time.sleep(0.02)
        raise AssertionError(f"run {run_id} never reached {statuses}: {result['status']}")


def serve(app: Any) -> tuple[uvicorn.Server, threading.Thread, str]:
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    return server, thread, f"http://127.0.0.1:{port}"


def start_server(tmp_path: Path, *, tools: list[Any] = (), token: str | None = None,
                 planner: Any = None, **options: Any) -> Iterator[Server]:  # fmt: skip
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    shutil.copy(EXAMPLES / "migration.yaml", workspace / "migration.yaml")
    runs = tmp_path / "runs"
    app = create_app(runs, workspace=workspace, tools=tools, token=token, planner=planner,
                     **options)  # fmt: skip
    server, thread, url = serve(app)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    with httpx.Client(base_url=url, headers=headers, timeout=30) as client:
        csrf = client.get("/api/session").json()["csrf_token"] if not token else ""
        if token:
            csrf = client.get("/api/session").json()["csrf_token"]
        manager = app.app.state.manager
        try:
            yield Server(url, runs, workspace, manager, client, csrf)
        finally:
            server.should_exit = True
            thread.join(10)
            manager.join(10)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    yield from start_server(tmp_path)

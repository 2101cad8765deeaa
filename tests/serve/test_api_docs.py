"""`/docs`: the API reference is served by the server itself, so it is readable offline."""

from __future__ import annotations

import re

from stepgraph.serve._api_docs import operations


def test_docs_lists_every_operation_and_names_no_other_host(server):
    """Swagger UI loaded its scripts from a CDN: offline, /docs was a blank page."""
    page = server.client.get("/docs")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    links = re.findall(r'(?:src|href|action)="([^"]*)"', page.text)
    assert links and all(link.startswith(("/", "#")) for link in links), links
    assert "//" not in " ".join(links) and "cdn" not in page.text.lower()
    spec = server.client.get("/openapi.json").json()
    for path, methods in spec["paths"].items():
        for method in methods:
            assert f"<code>{method.upper()} {path}</code>" in page.text
    assert "The parked plan: steps, critical path" in page.text  # each operation's docstring
    assert server.client.get("/redoc").status_code == 404  # ReDoc loads from a CDN too


def test_an_operation_lists_its_parameters_and_its_body_fields(server):
    spec = server.client.get("/openapi.json").json()
    by_name = {(op.method, op.path): op for op in operations(spec)}
    start = by_name[("POST", "/api/runs")]
    assert start.body == "StartRun"
    fields = {f.name: f for f in start.fields}
    assert fields["task"].where == "body" and fields["task"].type == "string or null"
    assert fields["task"].description == "A task file, relative to the workspace."
    page = by_name[("GET", "/api/runs/{run_id}/events/page")]
    limit = next(f for f in page.fields if f.name == "limit")
    assert (limit.where, limit.type, limit.required) == ("query", "integer >= 1 <= 5000", False)
    run_id = next(f for f in page.fields if f.name == "run_id")
    assert (run_id.where, run_id.required) == ("path", True)
    assert ("201", "Successful Response") in start.responses

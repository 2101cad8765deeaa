"""The run page's step graph in a real browser, at 200 steps: pan, zoom, fit, search.

Screenshots go to test-artifacts/browser/ (git-ignored), as for the other page tests.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from benchmarks._common import noop, random_dag

from tests.serve.conftest import Server, start_server
from tests.serve.test_browser import browser, shot  # noqa: F401 - the browser fixture

WIDE = random_dag(200, 12, 7)


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:  # noqa: F811 - the fixture takes the imported browser
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    opened.set_default_timeout(20_000)
    yield opened
    context.close()


@pytest.fixture
def wide_site(tmp_path: Path) -> Iterator[Server]:
    yield from start_server(tmp_path, tools=[noop])


def _run_wide(site: Server, page: Any) -> str:
    plan = WIDE.model_dump(mode="json", exclude_defaults=True)
    (site.workspace / "wide.yaml").write_text(yaml.safe_dump({"goal": "200 steps", "plan": plan}))
    run_id = site.post("/api/runs", task="wide.yaml").json()["run_id"]
    site.wait_status(run_id, "unchecked", "verified")
    page.goto(f"{site.url}/runs/{run_id}")
    page.wait_for_function(
        "window.stepgraphArrivals.some((arrival) => arrival.event === 'run.end')"
    )
    return run_id


def _overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    return not (
        a["x"] + a["width"] <= b["x"]
        or b["x"] + b["width"] <= a["x"]
        or a["y"] + a["height"] <= b["y"]
        or b["y"] + b["height"] <= a["y"]
    )


def test_the_inspector_never_covers_the_graph_of_200_steps(wide_site, page):
    _run_wide(wide_site, page)
    view = page.locator("#graph-view").bounding_box()
    page.click("#graph-fit")
    page.locator("#node-s0").click()
    page.wait_for_selector("#inspected")
    inspector = page.locator("#inspector").bounding_box()
    assert not _overlap(view, inspector)
    assert view["width"] >= 600  # the graph keeps most of the page
    shot(page, "graph-200-fit")


def test_a_step_found_by_search_is_brought_into_view_and_opened(wide_site, page):
    _run_wide(wide_site, page)
    view = page.locator("#graph-view").bounding_box()
    far = page.locator("#node-s187").bounding_box()
    assert far is None or not _overlap(far, view)  # it starts out of sight, at the far right
    page.fill("#graph-search", "s187")
    page.press("#graph-search", "Enter")
    page.wait_for_function("document.getElementById('inspected')?.textContent === 's187'")
    node = page.locator("#node-s187").bounding_box()
    assert node["x"] >= view["x"] and node["x"] + node["width"] <= view["x"] + view["width"]
    assert node["y"] >= view["y"] and node["y"] + node["height"] <= view["y"] + view["height"]
    assert page.inner_text("#graph-found") == "1 found"
    # Text stays readable where it was found: the id is drawn at 12 px or more.
    assert page.locator("#node-s187 text.sid").bounding_box()["height"] >= 12
    shot(page, "graph-200-search")


def test_the_graph_pans_zooms_and_fits(wide_site, page):
    _run_wide(wide_site, page)
    start = page.evaluate("window.stepgraphGraph.view()")
    assert start["scale"] >= 0.7  # a large graph opens readable, not shrunk to fit
    page.click("#graph-fit")
    fitted = page.evaluate("window.stepgraphGraph.view()")
    assert fitted["scale"] < start["scale"]
    svg = page.locator("#graph").bounding_box()
    nodes = page.locator(".node").evaluate_all(
        "(all) => all.map((n) => { const r = n.getBoundingClientRect();"
        " return [r.left, r.top, r.right, r.bottom]; })"
    )
    assert len(nodes) == 200
    assert all(svg["x"] - 1 <= left and right <= svg["x"] + svg["width"] + 1
               for left, _, right, _ in nodes)  # fmt: skip
    page.click("#graph-zoom-in")
    assert page.evaluate("window.stepgraphGraph.view()")["scale"] > fitted["scale"]
    before = page.evaluate("window.stepgraphGraph.view()")
    box = page.locator("#graph-view").bounding_box()
    page.mouse.move(box["x"] + 200, box["y"] + 200)
    page.mouse.down()
    page.mouse.move(box["x"] + 320, box["y"] + 260, steps=5)
    page.mouse.up()
    after = page.evaluate("window.stepgraphGraph.view()")
    assert after["tx"] - before["tx"] == pytest.approx(120, abs=2)
    assert after["ty"] - before["ty"] == pytest.approx(60, abs=2)


def test_enter_on_a_focused_node_opens_it(wide_site, page):
    _run_wide(wide_site, page)
    page.focus("#node-s3")
    page.keyboard.press("Enter")
    page.wait_for_function("document.getElementById('inspected')?.textContent === 's3'")


def test_a_small_run_is_shown_whole(site, page):
    run_id = site.post("/api/runs", task="migration.yaml").json()["run_id"]
    site.wait_status(run_id, "verified")
    page.goto(f"{site.url}/runs/{run_id}")
    page.wait_for_selector("#node-nights.verified")
    view = page.locator("#graph-view").bounding_box()
    for step in ("rate", "total", "per_night", "nights"):
        node = page.locator(f"#node-{step}").bounding_box()
        assert view["x"] <= node["x"] and node["x"] + node["width"] <= view["x"] + view["width"]
    shot(page, "graph-small")


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Server]:
    yield from start_server(tmp_path)

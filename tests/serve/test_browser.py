"""The pages in a real browser: Playwright driving Debian's chromium, headless.

Screenshots go to test-artifacts/browser/ (git-ignored). The tests skip, saying why,
only where no chromium can be installed (`.ci/run` installs it with apt-get).
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stepgraph import tool
from stepgraph.journal import read_journal
from tests.conftest import ROOT
from tests.serve.conftest import Server, start_server
from tests.serve.test_decision_race import HOLD, send_report
from tests.serve.test_interrupted_runs import decided_but_not_carried_out

CHROMIUM = os.environ.get("STEPGRAPH_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = ROOT / "test-artifacts" / "browser"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
GATE = threading.Event()  # the test opens it: a step that runs exactly as long as the test wants


@tool
def gated(value: float) -> float:
    """Return the value once the test opens the gate (a step that is visibly running)."""
    if not GATE.wait(30):
        raise TimeoutError("the test never opened the gate")
    return value


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no browser: {CHROMIUM} is missing (apt-get install -y chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    opened.set_default_timeout(20_000)
    yield opened
    context.close()


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Server]:
    yield from start_server(tmp_path, tools=[gated])


def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def test_a_parked_run_approved_on_its_page_finishes_with_the_right_answer(site, page):
    run_id = site.post("/api/runs", task="migration.yaml", approval="ask").json()["run_id"]
    site.wait_status(run_id, "awaiting_approval")
    page.goto(f"{site.url}/runs/{run_id}/approve")
    assert page.inner_text("#critical-path") == "rate → per_night → nights"
    assert page.locator("#plan-table tbody tr").count() == 4
    shot(page, "approve-1-plan")
    page.fill("#by", "alice")
    page.click("#approve")
    page.wait_for_url(f"**/runs/{run_id}")
    page.wait_for_function("document.getElementById('status').textContent === 'verified'")
    page.wait_for_selector("#answer a.number[data-step='nights']")
    assert page.inner_text("#answer") == "3 nights (962.28 GB per night; 2,500 GB in all)"
    assert page.inner_text("#answer a.number[data-step='nights']") == "3"
    page.click("#answer a.number[data-step='per_night']")
    assert page.inner_text("#inspected") == "per_night"
    assert "962.28" in page.inner_text("#inspector")
    shot(page, "approve-2-verified")
    journal = Path(site.manager.row(run_id).path)
    [approved] = read_journal(journal).of_kind("plan.approved")
    assert (approved.who, approved.how) == ("alice", "web") and approved.when


def test_the_run_page_updates_live_while_steps_run(site, page):
    GATE.clear()
    (site.workspace / "gated.yaml").write_text(
        "goal: a step that waits for the test\nplan:\n  steps:\n"
        "    - {id: first, tool: calculate, args: {expression: '20 + 1'}}\n"
        "    - {id: held, tool: gated, args: {value: '${first}'}}\n"
        "    - {id: last, tool: calculate, args: {expression: '${held} * 2'}}\n"
        "answer: '${last}'\n"
    )
    run_id = site.post("/api/runs", task="gated.yaml").json()["run_id"]
    page.goto(f"{site.url}/runs/{run_id}")
    page.wait_for_selector("#node-held.running")
    # It ran; the verdicts come when the run is over: not green yet.
    assert page.get_attribute("#node-first", "class") == "node unchecked"
    assert page.get_attribute("#node-last", "class") == "node pending"
    assert page.inner_text("#status") == "running"
    assert site.client.get(f"/api/runs/{run_id}").json()["status"] == "running"  # the index too
    shot(page, "live-1-running")
    GATE.set()  # the page was loaded before this: what follows can only arrive live
    page.wait_for_selector("#node-last.verified")
    page.wait_for_function("document.getElementById('status').textContent === 'verified'")
    assert page.inner_text("#answer") == "42"
    assert page.locator("#gantt .lane").count() == 3
    shot(page, "live-2-done")


def test_a_plan_rejected_on_its_page_stops_the_run(site, page):
    run_id = site.post("/api/runs", task="migration.yaml", approval="ask").json()["run_id"]
    site.wait_status(run_id, "awaiting_approval")
    page.goto(f"{site.url}/runs/{run_id}/approve")
    page.click("#reject")
    assert "Give your name" in page.inner_text("#decide-error")  # nobody: nothing decided
    page.fill("#by", "bob")
    page.click("#reject")
    page.wait_for_url(f"**/runs/{run_id}")
    page.wait_for_function("document.getElementById('status').textContent === 'not_run'")
    shot(page, "reject-1-stopped")
    events = read_journal(Path(site.manager.row(run_id).path))
    assert events.of_kind("plan.rejected")[0].who == "bob"
    assert events.of_kind("action") == [] and events.of_kind("run.end")[0].status == "not_run"
    page.goto(f"{site.url}/runs/{run_id}/approve")
    assert "not awaiting approval" in page.inner_text("#not-waiting")


def test_a_fork_from_a_step_appears_with_its_parent(site, page):
    run_id = site.post("/api/runs", task="migration.yaml").json()["run_id"]
    site.wait_status(run_id, "verified")
    page.goto(f"{site.url}/runs/{run_id}")
    page.wait_for_function("document.getElementById('status').textContent === 'verified'")
    page.click("#node-per_night")
    page.click("#fork-button")
    page.wait_for_selector("#parent-link")
    fork_id = page.url.rsplit("/", 1)[-1]
    assert fork_id != run_id and page.get_attribute("#parent-link", "href") == f"/runs/{run_id}"
    page.wait_for_function("document.getElementById('status').textContent === 'verified'")
    page.wait_for_selector("#node-nights.verified")
    assert page.inner_text("#answer") == "3 nights (962.28 GB per night; 2,500 GB in all)"
    shot(page, "fork-1-child")
    page.goto(f"{site.url}/runs/{run_id}")
    assert fork_id in page.inner_text("#forks") and "per_night" in page.inner_text("#forks")
    page.goto(f"{site.url}/")
    row = page.locator(f"tr[data-run='{fork_id}']")
    assert run_id in row.inner_text()
    shot(page, "fork-2-list")


def test_an_edit_on_the_approval_page_comes_back_with_its_diff(site, page):
    run_id = site.post("/api/runs", task="migration.yaml", approval="ask").json()["run_id"]
    site.wait_status(run_id, "awaiting_approval")
    page.goto(f"{site.url}/runs/{run_id}/approve")
    page.fill("#by", "carol")
    page.click("text=Edit the plan")
    edited = page.input_value("#plan-json").replace("ceil(", "floor(")
    page.fill("#plan-json", edited)
    page.click("#edit")
    page.wait_for_selector("#diff")
    assert "floor" in page.inner_text("#diff") and "ceil" in page.inner_text("#diff")
    shot(page, "edit-1-diff")
    page.click("#approve")
    page.wait_for_url(f"**/runs/{run_id}")
    # The edited plan is what ran: floor gives 2 nights, which the task's check refuses.
    page.wait_for_function("document.getElementById('status').textContent === 'unverified'")
    page.wait_for_function("document.getElementById('answer').textContent.startsWith('no answer')")
    events = read_journal(Path(site.manager.row(run_id).path))
    assert events.of_kind("plan.edited")[0].who == "carol"
    assert events.of_kind("answer")[0].text.startswith("no answer")


def test_a_step_nothing_checked_is_drawn_unchecked_not_green(site, page):
    """A custom tool with no reverse check: its node says unchecked, the run says so too."""
    (site.workspace / "unchecked.yaml").write_text(
        "goal: a value nothing checks\nplan:\n  steps:\n"
        "    - {id: first, tool: calculate, args: {expression: '20 * 2'}}\n"
        "    - {id: held, tool: gated, args: {value: '${first}'}}\n"
        "answer: '${held}'\n"
    )
    GATE.set()
    run_id = site.post("/api/runs", task="unchecked.yaml").json()["run_id"]
    page.goto(f"{site.url}/runs/{run_id}")
    page.wait_for_function("document.getElementById('status').textContent === 'unchecked'")
    # The run ended before the page loaded: the badge is drawn by the server, the nodes by
    # the replayed events, whose last row is drawn with the run's end.
    page.wait_for_selector("#events tr[data-event='run.end']", state="attached")
    assert page.get_attribute("#node-held", "class") == "node unchecked"
    assert page.get_attribute("#node-first", "class") == "node verified"
    shot(page, "unchecked-1")


def test_a_page_whose_journal_is_replaced_while_followed_says_so(site, page):
    """The stream's end says why: the page shows it instead of waiting for ever."""
    run_id = site.post("/api/runs", task="migration.yaml", approval="ask").json()["run_id"]
    site.wait_status(run_id, "awaiting_approval")
    page.goto(f"{site.url}/runs/{run_id}")
    page.wait_for_function("document.getElementById('status').textContent === 'awaiting_approval'")
    path = Path(site.manager.row(run_id).path)
    copy = path.with_name("copy.tmp")
    copy.write_bytes(path.read_bytes())
    os.replace(copy, path)
    page.wait_for_selector("#stream-end:not([hidden])")
    assert "replaced by another file" in page.inner_text("#stream-end")
    shot(page, "stream-1-replaced")


def test_a_decision_whose_server_died_is_continued_from_its_page(tmp_path, page):
    """Interrupted, with the recorded approval named; Continue carries it out to the answer."""
    HOLD.set()
    run_id = decided_but_not_carried_out(tmp_path)
    for server in start_server(tmp_path, tools=[send_report]):
        page.goto(f"{server.url}/runs/{run_id}")
        # Its events replay as they ran; then the stream's end says no process writes it.
        page.wait_for_function("document.getElementById('status').textContent === 'interrupted'")
        assert page.locator("#stream-end").is_hidden()  # the page says how it goes on already
        assert "the approval by alice (web) was recorded" in page.inner_text("#way-on")
        shot(page, "interrupted-1-decided")
        page.click("#continue-button")
        page.wait_for_function("document.getElementById('status').textContent === 'verified'")
        assert page.inner_text("#answer") == "3"
        assert page.locator("#way-on").count() == 0


def _navigations(page: Any) -> list[str]:
    """The URLs the page's main frame loads, counted from now."""
    seen: list[str] = []

    def loaded(frame: Any) -> None:
        if frame is page.main_frame:
            seen.append(frame.url)

    page.on("framenavigated", loaded)
    return seen


def test_the_page_of_a_repaired_run_loads_once_and_draws_the_plan_that_ran(site, page):
    """The stream replays the first, rejected-by-checks plan's approval: it reloaded for ever."""
    from stepgraph import Engine, Planner
    from stepgraph.testing import ScriptedLLM
    from tests.conftest import EXAMPLES

    planned = EXAMPLES / "planned"
    model = ScriptedLLM.from_file(planned / "migration.script.yaml")
    result = Engine(planner=Planner(model)).run(
        planned / "migration.yaml", journal=site.runs / "planned.jsonl"
    )
    journal = read_journal(site.runs / "planned.jsonl")
    approved = journal.of_kind("plan.approved")
    assert len({a.plan_hash for a in approved}) == 2 and journal.of_kind("plan.repair")
    navigations = _navigations(page)
    page.goto(f"{site.url}/runs/{result.run_id}")
    page.evaluate("window.drawnOnce = true")  # a reload would forget it
    page.wait_for_function(
        "window.stepgraphArrivals.some((arrival) => arrival.event === 'run.end')"
    )
    page.wait_for_timeout(1500)  # a reload the replay asked for would have begun by now
    assert navigations == [f"{site.url}/runs/{result.run_id}"]
    assert page.evaluate("window.drawnOnce") is True
    assert page.inner_text("#status") == "verified"
    assert page.get_attribute("#node-nights", "class") == "node verified"
    assert page.inner_text("#answer") == result.answer
    shot(page, "repaired-1-loaded-once")


def test_a_page_drawn_before_another_plan_is_approved_reloads_once_to_draw_it(site, page):
    run_id = site.post("/api/runs", task="migration.yaml", approval="ask").json()["run_id"]
    site.wait_status(run_id, "awaiting_approval")
    navigations = _navigations(page)
    page.goto(f"{site.url}/runs/{run_id}")
    page.wait_for_function("document.getElementById('status').textContent === 'awaiting_approval'")
    assert page.locator("#node-extra").count() == 0
    plan = site.client.get(f"/api/runs/{run_id}/plan").json()["plan"]
    plan["steps"].append({"id": "extra", "tool": "calculate", "args": {"expression": "1 + 1"}})
    assert site.post(f"/api/runs/{run_id}/edit", by="dana", plan=plan).status_code == 202
    deadline = time.monotonic() + 30  # parked again, with the edited plan
    while time.monotonic() < deadline:
        steps = site.client.get(f"/api/runs/{run_id}/plan").json()["plan"]["steps"]
        if any(step["id"] == "extra" for step in steps):
            break
        time.sleep(0.02)
    assert site.post(f"/api/runs/{run_id}/approve", by="dana").status_code == 202
    page.wait_for_selector("#node-extra")  # drawn by the page it reloaded to
    ended = "['verified', 'unchecked'].includes(document.getElementById('status').textContent)"
    page.wait_for_function(ended)
    assert navigations == [f"{site.url}/runs/{run_id}"] * 2


def test_the_api_docs_page_loads_from_this_server_alone(site, page):
    """Offline, Swagger UI's CDN scripts never came and /docs stayed blank."""
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url))
    page.goto(f"{site.url}/docs")
    spec = site.client.get("/openapi.json").json()
    count = sum(len(methods) for methods in spec["paths"].values())
    assert page.locator("#operations li").count() == count == page.locator("section").count()
    assert "POST /api/runs/{run_id}/approve" in page.inner_text("#operations")
    assert asked and all(url.startswith(site.url) for url in asked), asked
    shot(page, "docs-1-offline")

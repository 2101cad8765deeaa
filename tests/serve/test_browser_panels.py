"""The run page's panels in a real browser (Debian's chromium through Playwright).

What was verified, the model's calls, cancelling, the approval page, the run list's
search; each screenshot goes to test-artifacts/browser/ (or $STEPGRAPH_SHOTS).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stepgraph import Engine, Planner, tool
from stepgraph.journal import read_journal
from stepgraph.testing import ScriptedLLM
from tests.conftest import EXAMPLES, ROOT
from tests.serve import test_browser
from tests.serve.conftest import Server, start_server
from tests.serve.test_cancel import HELD, TASK, held_step

browser = test_browser.browser  # the same chromium, launched once per module
page = test_browser.page
_navigations = test_browser._navigations
SHOTS = Path(os.environ.get("STEPGRAPH_SHOTS") or ROOT / "test-artifacts" / "browser")
ENDED = "['verified', 'unchecked', 'unverified', 'step_failed', 'cancelled']"


def shot(page: Any, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"panels-{name}.png"), full_page=True)


@tool
def broken(value: float) -> float:
    """Fail, as a tool whose service is down does."""
    raise RuntimeError(f"the service is down (asked for {value})")


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Server]:
    HELD.clear()
    planned = EXAMPLES / "planned"
    planner = Planner(ScriptedLLM.from_file(planned / "migration.script.yaml"))
    for server in start_server(tmp_path, tools=[held_step, broken], planner=planner):
        (server.workspace / "slow.yaml").write_text(TASK)
        yield server
    HELD.set()


@pytest.fixture
def bare(tmp_path: Path) -> Iterator[Server]:
    """A server with no planner: nothing is repaired."""
    (tmp_path / "bare").mkdir()
    yield from start_server(tmp_path / "bare", tools=[broken])


def _ended(page: Any) -> None:
    page.wait_for_function(f"{ENDED}.includes(document.getElementById('status').textContent)")


def test_a_verified_run_lists_every_verdict_with_its_values(site, page):
    run_id = site.post("/api/runs", task="migration.yaml").json()["run_id"]
    site.wait_status(run_id, "verified")
    page.goto(f"{site.url}/runs/{run_id}")
    _ended(page)
    page.wait_for_selector("#verification tr.pass")
    checks = read_journal(Path(site.manager.row(run_id).path)).of_kind("check")
    rows = page.locator("#verification tr[data-kind]")
    assert rows.count() == len(checks)  # the passing ones too, the plan's own checks among them
    plan_level = page.locator("#verification tr[data-kind='check']")
    assert plan_level.count() == sum(c.kind == "check" for c in checks) >= 1
    assert "pass" in plan_level.first.inner_text()
    # per_night's reverse check compared 1,093.5 GB with 1,093,500 MB: one unit on the page.
    reverse = page.locator("#verification tr[data-kind='reverse']", has_text="per_night")
    assert "1,093.5 GB" in reverse.inner_text() and " MB" not in reverse.inner_text()
    assert page.inner_text("#verification-summary").startswith(f"{len(checks)} passed, 0 failed")
    assert page.get_attribute("#node-nights", "class") == "node verified"
    rows_shown = page.locator("#events tbody tr")
    assert rows_shown.count() == len(read_journal(Path(site.manager.row(run_id).path)).events)
    first_time = page.locator("#events tbody tr td:nth-child(2)").first.inner_text()
    assert re.match(r"\d\d:\d\d:\d\d \+0\.000 s", first_time), first_time  # no raw ISO
    page.focus("#node-per_night")
    page.keyboard.press("Enter")
    assert page.inner_text("#inspected") == "per_night"
    page.focus("#node-rate")
    page.keyboard.press(" ")
    assert page.inner_text("#inspected") == "rate"
    shot(page, "1-verified")


def test_an_unverified_run_shows_the_failed_check_with_its_values(bare, page):
    """No planner to repair it: floor gives 2 nights, which the task's own check refuses."""
    site = bare
    (site.workspace / "wrong.yaml").write_text(
        (site.workspace / "migration.yaml").read_text().replace("ceil(", "floor(")
    )
    run_id = site.post("/api/runs", task="wrong.yaml").json()["run_id"]
    site.wait_status(run_id, "unverified")
    page.goto(f"{site.url}/runs/{run_id}")
    _ended(page)
    page.wait_for_selector("#verification tr.fail")
    failed = page.locator("#verification tr.fail")
    text = failed.first.inner_text()
    assert "FAIL" in text and "${nights}" in text and "2" in text and "962.28 GB" in text
    assert page.get_attribute("#node-nights", "class") == "node check_failed"
    assert "failed" in page.inner_text("#verification-summary")
    shot(page, "2-unverified")


def test_a_failed_step_is_drawn_failed_and_says_why(bare, page):
    site = bare
    (site.workspace / "broken.yaml").write_text(
        "goal: a step whose tool fails\nplan:\n  steps:\n"
        "    - {id: first, tool: calculate, args: {expression: '20 + 1'}}\n"
        "    - {id: down, tool: broken, args: {value: '${first}'}}\n"
        "    - {id: after, tool: calculate, args: {expression: '${down} * 2'}}\n"
        "answer: '${after}'\n"
    )
    run_id = site.post("/api/runs", task="broken.yaml").json()["run_id"]
    site.wait_status(run_id, "step_failed")
    page.goto(f"{site.url}/runs/{run_id}")
    _ended(page)
    page.wait_for_selector("#node-down.failed")
    assert page.get_attribute("#node-after", "class") == "node skipped"
    page.click("#node-down")
    assert "the service is down" in page.inner_text("#inspector")
    assert "the service is down" in page.inner_text("#events")
    shot(page, "3-failed-step")


def test_a_repaired_run_shows_both_rounds_and_its_model_calls_and_loads_once(site, page):
    planned = EXAMPLES / "planned"
    model = ScriptedLLM.from_file(planned / "migration.script.yaml")
    result = Engine(planner=Planner(model)).run(
        planned / "migration.yaml", journal=site.runs / "planned.jsonl"
    )
    journal = read_journal(site.runs / "planned.jsonl")
    navigations = _navigations(page)
    page.goto(f"{site.url}/runs/{result.run_id}")
    _ended(page)
    page.wait_for_selector("#verification .round.last")
    page.wait_for_timeout(1000)  # a reload asked for by the replayed stream would be under way
    assert navigations == [f"{site.url}/runs/{result.run_id}"]
    assert page.locator("#verification .round").count() == 2
    assert "Round 1: 1 failed (repaired)" in page.inner_text("#verification")
    assert page.get_attribute("#node-nights", "class") == "node verified"  # the last round's
    calls = page.locator("#model-calls details.call")
    assert calls.count() == len(journal.of_kind("llm.request"))
    first = calls.first
    first.locator("summary").click()
    request = journal.of_kind("llm.request")[0]
    response = journal.of_kind("llm.response")[0]
    assert request.messages[-1]["content"][:40] in first.inner_text()
    assert response.text[:30] in first.inner_text()
    assert f"{round(response.latency_ms)} ms" in first.locator("summary").inner_text()
    assert f"mode {response.mode}" in first.locator("summary").inner_text()
    shot(page, "4-repaired")


def test_a_parked_run_approved_from_the_page_says_who_approved(site, page):
    run_id = site.post("/api/runs", task="migration.yaml", approval="ask").json()["run_id"]
    site.wait_status(run_id, "awaiting_approval")
    page.goto(f"{site.url}/runs/{run_id}/approve")
    # The arguments as they will run, each beside what the plan wrote.
    rate = page.locator("#plan-table tbody tr").first.inner_text()
    assert "450 Mbps" in rate and "${inputs.link}" in rate
    assert "${inputs.link}" in page.inner_text("#inputs-table")
    assert page.locator("#revise").count() == 1  # this server has a planner
    shot(page, "5a-approve")
    page.fill("#by", "alice")
    page.click("#approve")
    page.wait_for_url(f"**/runs/{run_id}")
    _ended(page)
    assert "approved by alice (web)" in page.inner_text("#decisions")
    shot(page, "5b-approved")


def test_without_a_planner_the_approval_page_offers_no_revision(bare, page):
    run_id = bare.post("/api/runs", task="migration.yaml", approval="ask").json()["run_id"]
    bare.wait_status(run_id, "awaiting_approval")
    page.goto(f"{bare.url}/runs/{run_id}/approve")
    assert page.locator("#revise").count() == 0
    assert "no planner" in page.inner_text("#no-revise")


def test_a_live_run_is_cancelled_from_its_page(site, page):
    run_id = site.post("/api/runs", task="slow.yaml").json()["run_id"]
    page.goto(f"{site.url}/runs/{run_id}")
    page.wait_for_selector("#node-slow.running")
    assert page.is_visible("#cancel-button")
    shot(page, "6-live")
    page.once("dialog", lambda dialog: dialog.accept("erin"))
    page.click("#cancel-button")
    page.wait_for_function("document.getElementById('cancel-button').disabled")
    HELD.set()  # the running step finishes; the next one never starts
    page.wait_for_function("document.getElementById('status').textContent === 'cancelled'")
    assert "cancelled by erin (web)" in page.inner_text("#decisions")
    assert page.is_hidden("#cancel-button")
    assert page.get_attribute("#node-double", "class") == "node pending"
    row = page.wait_for_selector("#events tr[data-event='run.cancelled']")  # drawn in batches
    assert "before the next tool call" in row.inner_text()
    shot(page, "7-cancelled")


def test_the_run_list_finds_runs_by_words_of_their_goal_or_answer_and_by_date(site, page):
    first = site.post("/api/runs", task="migration.yaml").json()["run_id"]
    (site.workspace / "other.yaml").write_text(
        "goal: twenty one\nplan:\n  steps:\n"
        "    - {id: a, tool: calculate, args: {expression: '20 + 1'}}\nanswer: '${a} apples'\n"
    )
    second = site.post("/api/runs", task="other.yaml").json()["run_id"]
    site.wait_status(first, "verified")
    site.wait_status(second, "verified", "unchecked")
    page.goto(f"{site.url}/")
    page.fill("#filter-q", "apples")
    page.click("button[type=submit]")
    assert [r.get_attribute("data-run") for r in page.locator("tr[data-run]").all()] == [second]
    page.fill("#filter-q", "NIGHTS")  # the migration's answer, case aside
    page.click("button[type=submit]")
    assert [r.get_attribute("data-run") for r in page.locator("tr[data-run]").all()] == [first]
    started = page.locator("tr[data-run] time").first
    assert re.fullmatch(r"\d\d:\d\d:\d\d", started.inner_text())  # today: the clock alone
    page.fill("#filter-q", "")
    page.fill("#filter-since", "2000-01-01")
    page.fill("#filter-until", "2000-01-31")
    page.click("button[type=submit]")
    assert page.locator("tr[data-run]").count() == 0 and "match the filter" in page.inner_text(
        "#runs"
    )
    shot(page, "8-search")

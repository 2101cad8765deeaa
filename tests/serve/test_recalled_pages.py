"""The web page says when a plan came from memory: the run page and the approval page."""

from __future__ import annotations

from pathlib import Path

from stepgraph import Engine, Planner, Task
from stepgraph.model import ApprovalPolicy, RunStatus
from stepgraph.testing import ScriptedLLM
from tests.engine.test_memory import FIRST, OTHER, PLAN, TOOLS, _goal
from tests.serve.conftest import Server


def _remembered_then_recalled(runs: Path, approval: ApprovalPolicy | None = None):
    engine = Engine(
        planner=Planner(ScriptedLLM([PLAN]), syntax="lines"), journal_dir=runs, memory=True
    )
    first = engine.run(Task(name="goal", goal=_goal(**FIRST), tools=TOOLS))
    second = engine.run(Task(name="goal", goal=_goal(**OTHER), tools=TOOLS), approval=approval)
    return first, second


def test_the_run_page_of_a_recalled_run_links_the_run_it_came_from(server: Server) -> None:
    first, second = _remembered_then_recalled(server.runs)
    assert second.status is RunStatus.VERIFIED
    page = server.client.get(f"/runs/{second.run_id}").text
    assert 'id="plan-origin"' in page
    assert f'href="/runs/{first.run_id}"' in page
    assert 'id="plan-origin"' not in server.client.get(f"/runs/{first.run_id}").text


def test_the_approval_page_of_a_parked_recalled_plan_says_where_it_came_from(
    server: Server,
) -> None:
    first, second = _remembered_then_recalled(server.runs, ApprovalPolicy.ASK)
    assert second.status is RunStatus.AWAITING_APPROVAL
    page = server.client.get(f"/runs/{second.run_id}/approve").text
    assert 'id="plan-origin"' in page
    assert f"recalled from verified run {first.run_id}" in page
    assert "450 Mbps -&gt; 1 Gbps" in page

"""A run never sends the same request with the same sampling twice: asking again draws again."""

import json

from stepgraph import Engine, Planner, Task
from stepgraph.journal import JournalWriter, read_journal
from stepgraph.planner._draws import Draws
from tests.planner.test_http import ChatServer, client

GOAL = "How many GB are 2 TB and 500 GB together?"  # no lone conversion: a cross-check
PLAN = 'size: "GB" = data + together\nanswer = f"{size}"'
NOT_A_PLAN = "The answer is 2000 GB."


def _sent(server: ChatServer) -> list[str]:
    return [
        json.dumps([r["body"]["messages"], r["body"].get("temperature"), r["body"].get("seed")])
        for r in server.requests
    ]


def test_each_plan_the_cross_check_asks_for_is_a_new_draw(httpserver, tmp_path):
    """Three other plans, two attempts each: before, the 2nd and 3rd repeated the 1st's requests
    (the same messages, temperature and seed), so the model gave the same refused answers."""
    server = ChatServer(httpserver, [(200, PLAN)] + [(200, NOT_A_PLAN)] * 6)
    planner = Planner(
        client(server.url), syntax="lines", plan_retries=1, retry_with="fresh", cross_route="plan"
    )
    result = Engine(planner=planner, cross_check=True).run(
        Task(goal=GOAL, tools=["calculate", "unit_convert"]), journal=tmp_path / "j.jsonl"
    )
    assert not result.verified and "no second plan" in result.answer
    sent = _sent(server)
    assert len(sent) == 7 and len(set(sent)) == 7
    cross = [r["body"] for r in server.requests[1:]]
    assert len({body["seed"] for body in cross}) == 6
    journal = read_journal(tmp_path / "j.jsonl")
    assert [(e.temperature, e.seed) for e in journal.of_kind("llm.request")] == [
        (r["body"].get("temperature"), r["body"].get("seed")) for r in server.requests
    ]


def test_a_request_already_sent_in_the_run_is_sampled_as_the_next_attempt(tmp_path):
    draws = Draws()
    run, other_run = JournalWriter(tmp_path / "a.jsonl", "a"), JournalWriter(tmp_path / "b", "b")
    messages = [{"role": "user", "content": GOAL}]
    assert [draws.unsent(run, messages, None, 2) for _ in range(3)] == [2, 3, 4]
    assert draws.unsent(run, messages, None, 1) == 1  # the greedy one was not sent yet
    assert draws.unsent(other_run, messages, None, 2) == 2  # another run starts afresh
    assert draws.unsent(run, [{"role": "user", "content": "other"}], None, 2) == 2
    assert draws.unsent(None, messages, None, 2) == 2  # no run: nothing remembered
    run.close()
    other_run.close()

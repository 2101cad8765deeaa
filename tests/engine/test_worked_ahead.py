"""The worked answer asked beside the plan, over HTTP with the real openai client."""

import time

from benchmarks._chat_server import ChatStreamServer

from stepgraph import Engine, LLMSettings, OpenAIClient, Planner, RunStatus, Task, replay
from stepgraph.engine import RunOptions, journal_budget
from stepgraph.journal import read_journal
from stepgraph.model import Budget
from tests.planner.conftest import migration_plan

GOAL = "nights to move 2.5 TB over 450 Mbps, 6 h a night, 90% used, 0.88 retry factor"
INPUTS = {"data": "2.5 TB", "link": "450 Mbps"}
PLAN = migration_plan(answer="${nights} nights (${per_night} per night)")
WORKED = "1215 GB x 0.9 x 0.88 = 962.28 GB a night; 2500 / 962.28 = 2.6, so 3.\nANSWER: 3"
RATE = 400  # tokens per second: the plan takes ~0.5 s, time for the other request to start


def worked_request(body):
    """The worked answer's conversation: its own system prompt, the goal as the user's words."""
    return "step by step" in body["messages"][0]["content"]


def server_for(plans, worked=WORKED, rate=RATE):
    return ChatStreamServer(
        plans,
        tokens_per_second=rate,
        answer_for=lambda body: worked if worked_request(body) else None,
    )


def run(server, path, *, budget=None, cross_route="worked", ahead=True):
    settings = LLMSettings(base_url=server.url, api_key="x", model="m", timeout=10, max_retries=0)
    client = OpenAIClient(settings)
    planner = Planner(client, cross_route=cross_route, plan_retries=1, worked_ahead=ahead)
    engine = Engine(planner=planner, cross_check=True)
    options = RunOptions(budget=budget) if budget is not None else None
    result = engine.run(Task(goal=GOAL, inputs=INPUTS), journal=path, options=options)
    return result, read_journal(path)


def served(server):
    plan = next(s for s in server.served if not s.chosen)
    worked = next(s for s in server.served if s.chosen)
    return plan, worked


def test_the_worked_answer_is_asked_while_the_plan_is_written(tmp_path):
    path = tmp_path / "ahead.jsonl"
    with server_for([PLAN]) as server:
        result, journal = run(server, path)
    assert result.status is RunStatus.VERIFIED
    assert "worked answer" in result.verdicts[-1].description
    plan, worked = served(server)
    assert worked.started_at < plan.finished_at  # side by side, not one after the other
    assert worked.body["stream"] is True and not worked.stopped
    # The journal tells it where the run used it: after the plan ran and its checks passed.
    kinds = [(e.event, getattr(e, "purpose", None)) for e in journal.events]
    asked = kinds.index(("llm.request", "worked"))
    assert kinds[asked + 1] == ("llm.response", "worked")
    assert kinds.index(("check", None)) < asked
    assert not journal.of_kind("llm.unused")


def test_a_run_that_used_the_answer_asked_ahead_replays_exactly(tmp_path):
    path = tmp_path / "ahead.jsonl"
    with server_for([PLAN]) as server:
        run(server, path)
    report = replay(path)
    assert report.identical, report.divergences
    assert report.result is not None and report.result.status is RunStatus.VERIFIED


def test_an_answer_no_plan_reached_is_stopped_and_its_cost_journaled(tmp_path):
    """No valid plan: the worked answer is cut short, and `llm.unused` keeps what it cost."""
    path = tmp_path / "unused.jsonl"
    long_worked = " ".join(["so on"] * 400) + "\nANSWER: 3"  # ~4 s at this rate
    with server_for(["no plan here"], worked=long_worked) as server:
        try:
            run(server, path)
        except Exception as e:  # noqa: BLE001  # the planner's refusal; the journal is the point
            assert "no valid plan" in str(e)
        _, worked = served(server)
        deadline = time.monotonic() + 10
        while not worked.finished_at and time.monotonic() < deadline:  # the server's side
            time.sleep(0.01)
    journal = read_journal(path)
    [unused] = journal.of_kind("llm.unused")
    assert unused.purpose == "worked" and unused.text and len(unused.text) < len(long_worked)
    assert journal.events[-1].event == "run.end" and unused.seq < journal.events[-1].seq
    assert worked.stopped and worked.sent < worked.total  # the server stopped generating
    requests = [e for e in journal.of_kind("llm.request")]
    assert journal_budget(journal.events).used.model_calls == len(requests) + 1
    assert not any(getattr(e, "purpose", None) == "worked" for e in requests)


def test_a_budget_on_model_calls_asks_nothing_ahead(tmp_path):
    """The budget refuses a call before it is made: one asked ahead would slip past it."""
    with server_for([PLAN]) as server:
        result, _ = run(server, tmp_path / "budget.jsonl", budget=Budget(model_calls=5))
    assert result.status is RunStatus.VERIFIED
    plan, worked = served(server)
    assert worked.started_at >= plan.finished_at


def test_the_worked_answer_waits_for_the_plan_unless_asked_ahead(tmp_path):
    """The default: on a CPU server the two would share its cores, and nothing is gained."""
    with server_for([PLAN]) as server:
        result, journal = run(server, tmp_path / "after.jsonl", ahead=False)
    assert result.status is RunStatus.VERIFIED
    plan, worked = served(server)
    assert worked.started_at >= plan.finished_at and "stream" not in worked.body


def test_a_cross_check_by_another_plan_asks_no_worked_answer(tmp_path):
    with server_for([PLAN]) as server:
        run(server, tmp_path / "plan.jsonl", cross_route="plan")
    assert not any(s.chosen for s in server.served)


COUNTS_GOAL = "Ann buys 3 boxes of 12 eggs and 4 more eggs. How many eggs does she have?"
PROGRAM = (
    "```python\ndef solution():\n    boxes = 3\n    eggs_per_box = 12\n    more_eggs = 4\n"
    "    return boxes * eggs_per_box + more_eggs\n```"
)


def worked_request_only(body):
    """The worked answer's own system prompt (a program's also says "step by step")."""
    return body["messages"][0]["content"].startswith("Solve the problem")


def run_auto(server, path, goal, inputs=None):
    settings = LLMSettings(base_url=server.url, api_key="x", model="m", timeout=10, max_retries=0)
    planner = Planner(
        OpenAIClient(settings), cross_route="auto", program_only="auto", worked_ahead=True
    )
    engine = Engine(planner=planner, cross_check=True)
    return engine.run(Task(goal=goal, inputs=inputs or {}), journal=path)


def test_with_the_auto_route_the_words_are_asked_beside_a_program(tmp_path):
    """The small-model preset's route: `auto` takes the words for a goal of counts."""
    worked = "3 x 12 = 36, and 36 + 4 = 40.\nANSWER: 40"
    answer_for = lambda body: worked if worked_request_only(body) else None  # noqa: E731
    path = tmp_path / "auto.jsonl"
    with ChatStreamServer([PROGRAM], tokens_per_second=RATE, answer_for=answer_for) as server:
        result = run_auto(server, path, COUNTS_GOAL)
    assert result.status is RunStatus.VERIFIED, result.verdicts
    program = next(s for s in server.served if not s.chosen)
    words = next(s for s in server.served if s.chosen)
    assert "Python function" in program.body["messages"][0]["content"]
    assert words.started_at < program.finished_at  # side by side
    assert replay(path).identical


def test_with_the_auto_route_a_goal_of_data_asks_no_words_ahead(tmp_path):
    """Data in the goal: `auto` checks by another plan, so no worked answer is asked."""
    answer_for = lambda body: WORKED if worked_request_only(body) else None  # noqa: E731
    with ChatStreamServer([PLAN], tokens_per_second=RATE, answer_for=answer_for) as server:
        run_auto(server, tmp_path / "data.jsonl", GOAL, INPUTS)
    assert not any(s.chosen for s in server.served)


class WordsByTheGoal(Planner):
    """`auto` as it can turn out: the goal as read takes the words, the plan's inputs a plan."""

    def words_witness(self, task):
        return True


def test_words_asked_ahead_that_the_check_does_not_take_are_stopped_and_journaled(tmp_path):
    """No answer left running unseen: its cost is journaled as for a run no plan reached."""
    path = tmp_path / "other-plan.jsonl"
    long_worked = " ".join(["so on"] * 400) + "\nANSWER: 3"  # still coming when the check runs
    answer_for = lambda body: long_worked if worked_request(body) else None  # noqa: E731
    with ChatStreamServer([PLAN], tokens_per_second=RATE, answer_for=answer_for) as server:
        settings = LLMSettings(
            base_url=server.url, api_key="x", model="m", timeout=10, max_retries=0
        )
        planner = WordsByTheGoal(
            OpenAIClient(settings), cross_route="plan", plan_retries=1, worked_ahead=True
        )
        result = Engine(planner=planner, cross_check=True).run(
            Task(goal=GOAL, inputs=INPUTS), journal=path
        )
        _, worked = served(server)
        deadline = time.monotonic() + 10
        while not worked.finished_at and time.monotonic() < deadline:
            time.sleep(0.01)
    assert result.status is RunStatus.VERIFIED
    assert "worked answer" not in result.verdicts[-1].description  # another plan's check
    journal = read_journal(path)
    [unused] = journal.of_kind("llm.unused")
    assert unused.purpose == "worked" and "another plan" in unused.reason
    assert worked.stopped and worked.sent < worked.total
    assert replay(path).identical

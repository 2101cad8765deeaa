"""Budgets: each limit stops a run cleanly before the call that would pass it; resume goes on."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from stepgraph import (
    Budget,
    BudgetExceededError,
    Engine,
    Planner,
    RunStatus,
    Task,
    TaskFileError,
    tool,
)
from stepgraph.cli import ExitCode
from stepgraph.engine import BudgetKeeper, RunOptions, journal_budget, resume
from stepgraph.journal import Action, LLMRequest, LLMResponse, Thought, read_journal
from stepgraph.model import Price
from tests.conftest import EXAMPLES, flat, invoke, make_task
from tests.planner.conftest import migration_plan
from tests.planner.test_http import ChatServer, client

GOAL = Task(
    name="goal",
    goal="Nights to move 2.5 TB over 450 Mbps",
    inputs={"data": "2.5 TB", "link": "450 Mbps"},
)
ANSWER = "3 nights [nights], moving 962.28 GB per night [per_night]."


def _run(task, journal: Path, engine: Engine | None = None, **limits):
    return (engine or Engine()).run(
        task, journal=journal, options=RunOptions(budget=Budget(**limits))
    )


def _stopped(task, journal: Path, engine: Engine | None = None, **limits) -> BudgetExceededError:
    with pytest.raises(BudgetExceededError) as caught:
        _run(task, journal, engine, **limits)
    return caught.value


def _kinds(journal: Path) -> list[str]:
    return [event.event for event in read_journal(journal).events]


def test_tool_call_limit_stops_before_the_call_and_journals_why(tmp_path):
    """Two tool calls allowed: the third is never started, and the journal says why."""
    journal = tmp_path / "j.jsonl"
    error = _stopped(EXAMPLES / "migration.yaml", journal, tool_calls=2)

    assert (error.limit, error.allowed, error.before) == ("tool_calls", 2, "tool")
    assert f"stepgraph resume {journal} --max-tool-calls" in str(error)
    events = read_journal(journal)
    assert len(events.of_kind("action")) == 2
    assert len(events.of_kind("observation")) == 2  # the calls under way finished, journaled
    [stop] = events.of_kind("budget.exceeded")
    assert stop.limit == "tool_calls" and stop.used["tool_calls"] == 2
    assert events.events[-1].status == "budget_exceeded"


def test_resume_with_a_higher_limit_runs_only_what_was_left(tmp_path):
    """The resumed run repeats no tool call and counts the earlier ones against the limit."""
    journal = tmp_path / "j.jsonl"
    _stopped(EXAMPLES / "migration.yaml", journal, tool_calls=2)

    result = resume(journal, budget=Budget(tool_calls=4))

    assert result.status is RunStatus.VERIFIED
    assert result.answer.startswith("3 nights")
    assert len(read_journal(journal).of_kind("action")) == 4  # 2 before, 2 after
    assert result.budget.used.tool_calls == 4 and result.budget.limits.tool_calls == 4


def test_resume_without_a_higher_limit_stops_again_at_once(tmp_path):
    journal = tmp_path / "j.jsonl"
    _stopped(EXAMPLES / "migration.yaml", journal, tool_calls=2)
    with pytest.raises(BudgetExceededError):
        resume(journal)  # the recorded limit still holds
    assert len(read_journal(journal).of_kind("action")) == 2


def test_the_task_key_sets_a_limit_and_an_option_overrides_it(tmp_path):
    task = make_task(
        [
            {"id": "a", "tool": "calculate", "args": {"expression": "1 + 1"}},
            {"id": "b", "tool": "calculate", "args": {"expression": "${a} * 3"}},
        ],
        budget={"tool_calls": 1},
    )
    with pytest.raises(BudgetExceededError):
        Engine().run(task, journal=tmp_path / "a.jsonl")
    result = _run(task, tmp_path / "b.jsonl", tool_calls=2)
    assert result.unverified_values == {} and result.values == {"a": 2, "b": 6}


def test_wall_time_limit_stops_before_the_next_tool_call(tmp_path):
    @tool
    def slow(x: float) -> float:
        """Return x after 0.4 s."""
        time.sleep(0.4)
        return x

    task = make_task(
        [
            {"id": "a", "tool": "slow", "args": {"x": 1}},
            {"id": "b", "tool": "slow", "args": {"x": "${a}"}},
        ],
        budget={"wall_time": "300 ms"},  # wide of the start-up, which a loaded machine slows
    )
    with pytest.raises(BudgetExceededError) as caught:
        Engine(tools=[slow]).run(task, journal=tmp_path / "j.jsonl")
    assert caught.value.limit == "wall_time" and caught.value.usage["wall_time"] >= 0.4
    assert [e.step for e in read_journal(tmp_path / "j.jsonl").of_kind("action")] == ["a"]


def test_the_keeper_refuses_by_its_clock():
    """Wall time is checked before every call, against the keeper's clock (simulated here)."""
    now = [0.0]
    keeper = BudgetKeeper(Budget(wall_time=5), clock=lambda: now[0])
    keeper.check(Thought(step="a", text=""))
    keeper.check(Action(step="a", tool="calculate", args={}, attempt=1))
    now[0] = 5.0
    with pytest.raises(BudgetExceededError, match="wall time"):
        keeper.check(LLMRequest(purpose="answer", attempt=1, model="m", messages=[]))
    assert keeper.used.tool_calls == 1 and keeper.used.model_calls == 0


def test_model_call_limit_stops_before_the_answer_request(httpserver, tmp_path):
    server = ChatServer(httpserver, [(200, migration_plan()), (200, ANSWER)])
    engine = Engine(planner=Planner(client(server.url)))
    error = _stopped(GOAL, tmp_path / "j.jsonl", engine, model_calls=1)

    assert (error.limit, error.before) == ("model_calls", "model")
    assert len(server.requests) == 1  # the second request was never sent
    assert _kinds(tmp_path / "j.jsonl").count("llm.request") == 1
    # Resumed with one more call: the steps are kept, only the answer is asked for.
    resumed = resume(tmp_path / "j.jsonl", planner=engine.planner, budget=Budget(model_calls=2))
    assert resumed.status is RunStatus.VERIFIED and resumed.answer == ANSWER
    assert len(server.requests) == 2
    assert len(read_journal(tmp_path / "j.jsonl").of_kind("action")) == 4  # none ran twice


@pytest.mark.parametrize(("limit", "allowed"), [("prompt_tokens", 300), ("completion_tokens", 50)])
def test_token_limits_stop_once_reached(httpserver, tmp_path, limit, allowed):
    """Each reply uses 321 prompt and 54 completion tokens: the first passes, the next not."""
    server = ChatServer(httpserver, [(200, migration_plan()), (200, ANSWER)])
    engine = Engine(planner=Planner(client(server.url)))
    error = _stopped(GOAL, tmp_path / "j.jsonl", engine, **{limit: allowed})
    assert error.limit == limit
    assert error.usage[limit] == {"prompt_tokens": 321, "completion_tokens": 54}[limit]
    assert len(server.requests) == 1


def test_cost_of_a_known_model_comes_from_genai_prices(httpserver, tmp_path):
    """gpt-4o-mini at $0.15 / $0.60 per million tokens: 2 x (321 in, 54 out) = $0.0001611."""
    server = ChatServer(httpserver, [(200, migration_plan()), (200, ANSWER)])
    engine = Engine(planner=Planner(client(server.url, model="gpt-4o-mini")))
    result = _run(GOAL, tmp_path / "j.jsonl", engine, cost=1.0)
    assert result.status is RunStatus.VERIFIED
    assert result.budget.used.cost == pytest.approx(2 * (321 * 0.15 + 54 * 0.60) / 1e6)


def test_cost_limit_stops_before_the_call_after_the_one_that_reached_it(httpserver, tmp_path):
    server = ChatServer(httpserver, [(200, migration_plan()), (200, ANSWER)])
    engine = Engine(planner=Planner(client(server.url, model="gpt-4o-mini")))
    error = _stopped(GOAL, tmp_path / "j.jsonl", engine, cost=0.00005)
    assert error.limit == "cost" and len(server.requests) == 1
    assert error.usage["cost"] == pytest.approx((321 * 0.15 + 54 * 0.60) / 1e6)


def test_cost_from_a_price_the_user_gives(httpserver, tmp_path):
    """A model genai-prices does not know, priced at $1 / $2 per million tokens."""
    server = ChatServer(httpserver, [(200, migration_plan()), (200, ANSWER)])
    engine = Engine(planner=Planner(client(server.url)))
    price = Price(input=1, output=2)
    result = _run(GOAL, tmp_path / "j.jsonl", engine, cost=1.0, price=price)
    assert result.budget.used.cost == pytest.approx(2 * (321 * 1 + 54 * 2) / 1e6)
    report = journal_budget(read_journal(tmp_path / "j.jsonl").events)  # what `show` reads
    assert report.used.cost == pytest.approx(result.budget.used.cost)
    assert report.limits.cost == 1.0 and report.used.model_calls == 2


def test_a_cost_limit_without_a_known_price_is_refused_before_any_call(httpserver, tmp_path):
    server = ChatServer(httpserver, [])
    engine = Engine(planner=Planner(client(server.url, model="my-local-model")))
    with pytest.raises(TaskFileError, match="price of model 'my-local-model'"):
        _run(GOAL, tmp_path / "j.jsonl", engine, cost=0.01)
    assert server.requests == []


def test_the_keeper_counts_tokens_under_either_name():
    keeper = BudgetKeeper(Budget(price=Price(input=1, output=1)))
    for usage in ({"prompt_tokens": 10, "completion_tokens": 1}, {"input_tokens": 5}):
        keeper.check(
            LLMResponse(purpose="plan", attempt=1, text="", usage=usage, latency_ms=1, mode="text")
        )
    assert (keeper.used.prompt_tokens, keeper.used.completion_tokens) == (15, 1)
    assert keeper.used.cost == pytest.approx(16 / 1e6)


def test_cli_exit_code_resume_and_show(tmp_path):
    """Exit 9 with the way forward; `resume --max-...` finishes; `show` reports usage."""
    journal = tmp_path / "j.jsonl"
    stopped = invoke(
        "run", EXAMPLES / "migration.yaml", "--journal", journal, "--max-tool-calls", 2
    )
    assert stopped.exit_code == ExitCode.BUDGET == 9
    assert f"stepgraph resume {journal} --max-tool-calls N" in flat(stopped.output)

    again = invoke("resume", journal)
    assert again.exit_code == ExitCode.BUDGET

    done = invoke("resume", journal, "--max-tool-calls", 4)
    assert done.exit_code == ExitCode.OK, done.output
    assert "3 nights" in done.output

    shown = flat(invoke("show", journal).output)
    assert "budget: tool calls 2 used of 2; stopped before a tool call" in shown
    assert "tool calls │ 4 │ 4" in shown


def test_cli_task_key_budget(tmp_path):
    text = (EXAMPLES / "migration.yaml").read_text() + "\nbudget:\n  tool_calls: 3\n"
    (tmp_path / "t.yaml").write_text(text)
    result = invoke("run", tmp_path / "t.yaml", "--journal", tmp_path / "j.jsonl")
    assert result.exit_code == ExitCode.BUDGET
    assert len(read_journal(tmp_path / "j.jsonl").of_kind("action")) == 3


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--price-per-mtok", "cheap", "write it as input=DOLLARS,output=DOLLARS"),
        ("--price-per-mtok", "input=1", "write it as input=DOLLARS,output=DOLLARS"),
        ("--max-wall-time", "soon", "a budget option is not valid: --max-wall-time: 'soon'"),
    ],
)
def test_bad_budget_options_are_clear_errors(tmp_path, option, value, message):
    journal = tmp_path / "j.jsonl"
    result = invoke("run", EXAMPLES / "migration.yaml", "--journal", journal, option, value)
    assert result.exit_code == ExitCode.USAGE  # a bad option value, not a bad task file
    assert message in flat(result.output)
    assert not journal.exists()  # nothing ran


def test_max_wall_time_in_plain_seconds_is_taken_as_seconds(tmp_path):
    """--help says plain seconds work: `--max-wall-time 60` is 60 s, not a pydantic error."""
    journal = tmp_path / "j.jsonl"
    result = invoke(
        "run", EXAMPLES / "migration.yaml", "--journal", journal, "--max-wall-time", "60"
    )
    assert result.exit_code == ExitCode.OK, result.output
    assert "pydantic" not in result.output


def test_a_bad_budget_in_a_task_file_is_a_task_file_error(tmp_path):
    text = (EXAMPLES / "migration.yaml").read_text() + "\nbudget:\n  tool_calls: -1\n"
    (tmp_path / "t.yaml").write_text(text)
    result = invoke("run", tmp_path / "t.yaml")
    assert result.exit_code == ExitCode.INVALID and "budget" in flat(result.output)


def test_genai_prices_works_offline(monkeypatch):
    """Its price table ships in the package: no connection is made for a price."""
    import socket

    def refuse(*args, **kwargs):
        raise AssertionError("genai-prices tried to open a connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    from stepgraph.engine import model_cost

    assert model_cost("gpt-4o-mini", 1_000_000, 1_000_000, None) == pytest.approx(0.15 + 0.60)
    assert model_cost("no-such-model-anywhere", 10, 10, None) is None


@pytest.mark.parametrize("where", ["option", "task key"])
def test_a_run_its_budget_stopped_replays_identically(tmp_path, where):
    """Replay applies the recorded call limits (not time or cost): it stops where the run did."""
    from stepgraph import replay

    journal = tmp_path / "j.jsonl"
    if where == "option":
        _stopped(EXAMPLES / "migration.yaml", journal, tool_calls=2)
    else:
        text = (EXAMPLES / "migration.yaml").read_text()
        (tmp_path / "t.yaml").write_text(text + "\nbudget: {tool_calls: 2, wall_time: 1 h}\n")
        with pytest.raises(BudgetExceededError):
            Engine().run(tmp_path / "t.yaml", journal=journal)
    report = replay(journal)
    assert report.identical, (report.divergences, report.error)
    assert len(read_journal(report.journal).of_kind("action")) == 2


def test_a_run_stopped_before_its_repair_resumes_into_the_repair(httpserver, tmp_path):
    """floor() fails a check; the repair request is over the limit; resume asks for it."""
    answer = "${nights} nights"
    script = [(200, migration_plan("floor", answer=answer)), (200, migration_plan(answer=answer))]
    server = ChatServer(httpserver, script)
    engine = Engine(planner=Planner(client(server.url)))
    journal = tmp_path / "j.jsonl"
    error = _stopped(GOAL, journal, engine, model_calls=1)
    assert error.limit == "model_calls" and len(server.requests) == 1

    result = resume(journal, planner=engine.planner, budget=Budget(model_calls=2))

    assert result.status is RunStatus.VERIFIED and result.answer == "3 nights"
    assert [r.purpose for r in read_journal(journal).of_kind("llm.request")] == ["plan", "repair"]
    assert result.budget.used.model_calls == 2


def test_the_limits_are_a_typed_field_of_run_start_and_of_run_resume(tmp_path):
    """`run.start` and `run.resume` record the limits as a `Budget`; the caller's options stay."""
    journal = tmp_path / "j.jsonl"
    options = RunOptions(budget=Budget(tool_calls=2))
    with pytest.raises(BudgetExceededError):
        Engine().run(EXAMPLES / "migration.yaml", journal=journal, options=options)
    assert options.policy is None and options.plan_file is None  # not written to by the run
    resume(journal, budget=Budget(tool_calls=4))
    events = read_journal(journal)
    [start], [again] = events.of_kind("run.start"), events.of_kind("run.resume")
    assert start.budget == Budget(tool_calls=2)
    assert again.budget == Budget(tool_calls=4)
    assert "budget" not in (start.model_extra or {})


def test_a_run_without_limits_records_no_budget(tmp_path):
    """Nothing limited: `run.start` records no budget (an empty one would read as limits)."""
    journal = tmp_path / "j.jsonl"
    Engine().run(EXAMPLES / "migration.yaml", journal=journal)
    assert read_journal(journal).events[0].budget is None
    assert json.loads(journal.read_text().splitlines()[0])["budget"] is None


def test_an_older_journal_s_limits_and_links_still_read(tmp_path):
    """A `run.start` line written before these fields were typed reads into them."""
    journal = tmp_path / "j.jsonl"
    Engine().run(EXAMPLES / "migration.yaml", journal=journal)
    lines = journal.read_text().splitlines()
    start = json.loads(lines[0])
    start["config"] = {"repair_rounds": 1, "plan_retries": None, "stream": False}
    start["budget"] = {"tool_calls": 9}
    start["replay_of"] = {"run_id": "abc", "journal": "x.jsonl", "from_step": None, "live": False}
    journal.write_text("\n".join([json.dumps(start), *lines[1:]]) + "\n")
    read = read_journal(journal).events[0]
    assert read.budget == Budget(tool_calls=9)
    assert read.replay_of is not None and read.replay_of.run_id == "abc"
    assert read.config.repair_rounds == 1 and "plan_retries" in read.config.model_fields_set
    assert journal_budget(read_journal(journal).events).limits.tool_calls == 9

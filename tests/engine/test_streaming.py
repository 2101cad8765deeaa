"""Plans streamed into execution, over HTTP with the real openai client and a streaming server."""

import json
import re

import pytest
from benchmarks._chat_server import ChatStreamServer

from stepgraph import (
    ApprovalPolicy,
    Engine,
    LLMError,
    LLMSettings,
    OpenAIClient,
    Planner,
    RunStatus,
    Task,
    replay,
    tool,
)
from stepgraph.engine import Decision
from stepgraph.journal import read_journal
from tests.conftest import invoke
from tests.planner.conftest import migration_plan

# Tokens per second: the plan's last ~200 tokens, written after its first step, take 0.4 s,
# ample time for that step to start even on a loaded machine.
RATE = 500
FAST = 4000  # where no test looks at the order of events
GOAL = "nights to move 2.5 TB over 450 Mbps, 6 h a night, 90% used, 0.88 retry factor"
INPUTS = {"data": "2.5 TB", "link": "450 Mbps"}
ANSWER = "${nights} nights (${per_night} per night)"
SENT: list[str] = []
PLAN = migration_plan(answer=ANSWER)


@tool(side_effects=True)
def send_report(text: str) -> str:
    """Send a report to the team (changes the world)."""
    SENT.append(text)
    return "sent"


def task(**fields):
    return Task(goal=GOAL, inputs=INPUTS, **fields)


def engine(server, **options):
    settings = LLMSettings(base_url=server.url, api_key="x", model="m", timeout=10, max_retries=0)
    return Engine(tools=[send_report], planner=Planner(OpenAIClient(settings)), **options)


def run(server, path, the_task=None, **options):
    run_options = {k: options.pop(k) for k in ("approval", "approver") if k in options}
    result = engine(server, **options).run(the_task or task(), journal=path, **run_options)
    return result, read_journal(path)


def seq(journal, kind, step=None, nth=0):
    found = [e.seq for e in journal.events if e.event == kind and (step is None or e.step == step)]
    return found[nth]


def test_a_step_starts_while_the_model_is_still_writing_the_plan(tmp_path):
    """The first action is journaled before the model's answer has ended."""
    with ChatStreamServer([PLAN], tokens_per_second=RATE) as server:
        result, journal = run(server, tmp_path / "s.jsonl", stream=True)
    assert result.status is RunStatus.VERIFIED
    assert server.served[0].body["stream"] is True
    response = next(e for e in journal.events if e.event == "llm.response")
    assert response.stream == "complete"
    assert (response.response_id, response.response_model) == ("chatcmpl-stream", "stream-model")
    assert response.finish_reasons == ["stop"]  # from the last chunk
    assert seq(journal, "action", "rate") < response.seq < seq(journal, "plan.proposed")
    assert seq(journal, "observation", "total") < response.seq  # ran before the answer ended


def test_a_streamed_run_gives_what_a_run_not_streamed_gives(tmp_path):
    """Same answer, values, verdicts, plan and the same events per step."""
    outcomes = []
    for stream in (False, True):
        with ChatStreamServer([PLAN], tokens_per_second=FAST) as server:
            outcomes.append(run(server, tmp_path / f"{stream}.jsonl", stream=stream))
    (plain, plain_journal), (streamed, streamed_journal) = outcomes
    assert streamed.status is RunStatus.VERIFIED
    assert streamed.answer == plain.answer == "3 nights (962.28 GB per night)"
    assert streamed.values == plain.values
    assert streamed.plan == plain.plan
    assert [v.passed for v in streamed.verdicts] == [v.passed for v in plain.verdicts]

    def per_step(journal):
        return sorted((e.event, e.step) for e in journal.events if e.step)

    assert per_step(streamed_journal) == per_step(plain_journal)


def bad_then_more():
    """A plan whose second step calls an unknown tool, followed by a long tail of steps."""
    plan = json.loads(migration_plan())
    plan["steps"].insert(1, {"id": "oops", "tool": "teleport", "args": {"what": "data"}})
    plan["steps"] += [
        {"id": f"extra{i}", "tool": "calculate", "args": {"expression": f"{i} + 1"}}
        for i in range(60)
    ]
    return json.dumps(plan)


def test_an_invalid_step_stops_the_stream_and_the_planner_is_told_why(tmp_path):
    """The answer is cut off at the bad step; the feedback names it; the next plan runs."""
    # slower: the ~1,000 tokens of the tail take a second, far longer than the client needs
    with ChatStreamServer([bad_then_more(), PLAN], tokens_per_second=1000) as server:
        result, journal = run(server, tmp_path / "s.jsonl", stream=True)
    first, second = server.served
    assert first.stopped and first.sent < first.total  # the tail was never generated
    assert second.sent == second.total
    responses = [e for e in journal.events if e.event == "llm.response"]
    assert [r.stream for r in responses] == ["stopped", "complete"]
    assert [r.finish_reasons for r in responses] == [[], ["stop"]]  # a stopped one never finished
    assert "extra" not in responses[0].text
    invalid = next(e for e in journal.events if e.event == "plan.invalid")
    assert any("oops" in p and "unknown tool 'teleport'" in p for p in invalid.problems)
    feedback = second.body["messages"][-1]["content"]
    assert "teleport" in feedback
    assert result.status is RunStatus.VERIFIED and result.values["nights"] == 3
    # the step written before the bad one started early, and ran again for the second plan
    assert seq(journal, "action", "rate") < seq(journal, "llm.request", nth=1)
    assert len([e for e in journal.events if e.event == "action" and e.step == "rate"]) == 2


def report_plan():
    steps = [
        {"id": "mail", "tool": "send_report", "args": {"text": "nights: ${n}"}},
        {"id": "n", "tool": "calculate", "args": {"expression": "ceil(2500 GB / (962.28 GB))"}},
        {"id": "later", "tool": "calculate", "args": {"expression": "${n} + 1"}},
    ]
    closing = "The mail waits for the count; the spare night is a margin. " * 5  # 0.2 s more
    return json.dumps(
        {"steps": steps, "answer": "${n} nights, ${later} with a spare", "thought": closing}
    )


def test_a_side_effecting_step_waits_for_the_approved_plan(tmp_path):
    """Read-only steps start early; the one that changes the world starts after approval."""
    SENT.clear()
    with ChatStreamServer([report_plan()], tokens_per_second=RATE) as server:
        result, journal = run(
            server, tmp_path / "s.jsonl", stream=True, approval=ApprovalPolicy.AUTO
        )
    assert result.status is RunStatus.VERIFIED and SENT == ["nights: 3"]
    response = seq(journal, "llm.response")
    assert seq(journal, "action", "n") < response
    assert seq(journal, "action", "mail") > seq(journal, "plan.approved") > response


class Person:
    def __init__(self):
        self.views = 0

    def review(self, view):
        self.views += 1
        return Decision("approve", who="tester")


def test_when_a_person_must_approve_nothing_starts_before_they_do(tmp_path):
    """Policy 'ask': the plan is planned as without streaming; every action follows approval."""
    person = Person()
    with ChatStreamServer([PLAN], tokens_per_second=FAST) as server:
        result, journal = run(
            server,
            tmp_path / "s.jsonl",
            stream=True,
            approval=ApprovalPolicy.ASK,
            approver=person,
        )
    assert result.status is RunStatus.VERIFIED and person.views == 1
    assert "stream" not in server.served[0].body
    assert seq(journal, "action") > seq(journal, "plan.approved")


def test_a_server_that_ignores_stream_is_read_whole(tmp_path):
    """One JSON body instead of events: the run goes on as without streaming."""
    with ChatStreamServer([PLAN], tokens_per_second=FAST, streaming=False) as server:
        result, journal = run(server, tmp_path / "s.jsonl", stream=True)
    assert server.served[0].body["stream"] is True
    response = next(e for e in journal.events if e.event == "llm.response")
    assert response.stream == "not streamed" and response.usage["completion_tokens"] > 0
    assert (response.response_id, response.finish_reasons) == ("chatcmpl-whole", ["stop"])
    assert result.status is RunStatus.VERIFIED and result.values["nights"] == 3


def test_a_streamed_answer_journals_its_token_usage_for_budgets(tmp_path):
    """The counts come on a last chunk when asked for (llama-server, OpenAI do so)."""
    with ChatStreamServer([PLAN], tokens_per_second=FAST) as server:
        result, journal = run(server, tmp_path / "s.jsonl", stream=True)
    assert server.served[0].body["stream_options"] == {"include_usage": True}
    response = next(e for e in journal.events if e.event == "llm.response")
    assert response.stream == "complete" and result.status is RunStatus.VERIFIED
    assert response.usage["completion_tokens"] == server.served[0].sent > 0


def test_a_server_that_refuses_stream_options_still_streams_the_plan(tmp_path):
    with ChatStreamServer([PLAN], tokens_per_second=FAST, refuses_stream_options=True) as server:
        result, journal = run(server, tmp_path / "s.jsonl", stream=True)
    assert [("stream_options" in s.body) for s in server.served] == [False]  # the retry
    response = next(e for e in journal.events if e.event == "llm.response")
    # no counts came: the pieces read are counted, and the usage says it is a count of them
    sent = server.served[0].sent
    assert response.usage == {"completion_tokens": sent, "streamed_pieces": sent}
    assert response.stream == "complete" and sent > 0
    assert result.status is RunStatus.VERIFIED and result.values["nights"] == 3


def test_a_streamed_run_with_a_stopped_answer_replays_exactly(tmp_path):
    """Replay streams the recorded answers again: the same steps start, nothing differs."""
    path = tmp_path / "s.jsonl"
    with ChatStreamServer([bad_then_more(), PLAN], tokens_per_second=FAST) as server:
        run(server, path, stream=True)
    report = replay(path, tools=[send_report])
    assert report.identical, report.divergences
    assert report.result is not None and report.result.values["nights"] == 3


def test_the_task_file_key_turns_streaming_on(tmp_path):
    """`stream: true` in a task streams without the engine option."""
    with ChatStreamServer([PLAN], tokens_per_second=RATE) as server:
        result, journal = run(server, tmp_path / "s.jsonl", task(stream=True))
    assert server.served[0].body["stream"] is True
    assert seq(journal, "action") < seq(journal, "llm.response")
    assert result.status is RunStatus.VERIFIED


def test_streaming_is_off_unless_asked_for(tmp_path):
    with ChatStreamServer([PLAN], tokens_per_second=FAST) as server:
        run(server, tmp_path / "s.jsonl")
    assert "stream" not in server.served[0].body


def test_the_command_line_streams_with_its_option(tmp_path):
    """`stepgraph run --stream` against a streaming endpoint."""
    with ChatStreamServer([PLAN], tokens_per_second=RATE) as server:
        task_file = tmp_path / "t.yaml"
        task_file.write_text(f"goal: {GOAL}\ninputs:\n  data: 2.5 TB\n  link: 450 Mbps\n")
        journal = tmp_path / "cli.jsonl"
        args = ["run", task_file, "--stream", "--base-url", server.url, "--model", "m"]
        result = invoke(*args, "--journal", journal, "--json", env={"OPENAI_API_KEY": "x"})
    assert result.exit_code == 0, result.output
    events = read_journal(journal).events
    assert server.served[0].body["stream"] is True
    assert json.loads(result.stdout)["status"] == "verified"
    assert min(e.seq for e in events if e.event == "action") < next(
        e.seq for e in events if e.event == "llm.response"
    )


@pytest.mark.parametrize("policy", [ApprovalPolicy.NEVER])
def test_a_policy_that_runs_nothing_starts_nothing(tmp_path, policy):
    with ChatStreamServer([PLAN], tokens_per_second=FAST) as server:
        result, journal = run(server, tmp_path / "s.jsonl", stream=True, approval=policy)
    assert result.status is RunStatus.NOT_RUN
    assert not [e for e in journal.events if e.event == "action"]


def test_a_run_where_a_person_approved_replays_without_streaming(tmp_path):
    """`run.start` says whether streaming was in force; the replay follows it, not the task key."""
    path = tmp_path / "s.jsonl"
    with ChatStreamServer([bad_then_more(), PLAN], tokens_per_second=FAST) as server:
        run(server, path, task(stream=True), approval=ApprovalPolicy.ASK, approver=Person())
    assert read_journal(path).events[0].config.stream is False
    report = replay(path, tools=[send_report])
    assert report.identical, report.divergences


def test_a_stream_that_breaks_off_ends_the_run_with_a_clear_error(tmp_path):
    """An error event mid-answer: not retried (steps already started), the run ends as an error."""
    path = tmp_path / "s.jsonl"
    server = ChatStreamServer([PLAN], tokens_per_second=FAST, fail_after=120)
    with server, pytest.raises(LLMError, match="stream broke off after 120 pieces"):
        run(server, path, stream=True)
    events = read_journal(path).events
    assert len(server.served) == 1
    assert [e.status for e in events if e.event == "run.end"] == ["error"]
    started = {e.step for e in events if e.event == "action"}
    assert started and started <= {e.step for e in events if e.event == "observation"}


def test_show_says_which_answers_were_streamed_and_which_stopped(tmp_path):
    path = tmp_path / "s.jsonl"
    with ChatStreamServer([bad_then_more(), PLAN], tokens_per_second=FAST) as server:
        run(server, path, stream=True)
    shown = invoke("show", path).output
    flat = " ".join(shown.split())  # the console wraps long lines
    sent = server.served[0].sent  # the server's counts never came: its pieces were counted
    assert re.search(
        r"model \(plan, attempt 1\): completion_tokens (\d+) \(counted as streamed\); "
        r"streamed: stopped;",
        flat,
    )
    counted = int(re.search(r"attempt 1\): completion_tokens (\d+)", flat).group(1))
    assert 0 < counted <= sent
    assert re.search(
        r"model \(plan, attempt 2\): completion_tokens \d+, .*?; streamed: complete;", flat
    )


def test_a_plan_that_fails_whole_plan_checks_at_its_end_goes_back_to_the_planner(tmp_path):
    """Every step is fine alone, the answer template is not: checked once the answer is whole."""
    broken = migration_plan(answer="${nights} nights, ${weeks} weeks")
    with ChatStreamServer([broken, PLAN], tokens_per_second=FAST) as server:
        result, journal = run(server, tmp_path / "s.jsonl", stream=True)
    responses = [e for e in journal.events if e.event == "llm.response"]
    assert [r.stream for r in responses] == ["complete", "complete"]
    invalid = next(e for e in journal.events if e.event == "plan.invalid")
    assert any("answer template" in p and "${weeks}" in p for p in invalid.problems)
    assert seq(journal, "action", "rate") < seq(journal, "plan.invalid")  # started, then refused
    assert result.status is RunStatus.VERIFIED and result.answer == "3 nights (962.28 GB per night)"


class _WholeAnswers:
    """A client that declares no streaming: only `complete`."""

    model = "whole"

    def __init__(self, texts):
        self.texts = list(texts)

    def complete(self, messages, *, schema=None, attempt=1):
        from stepgraph.planner import LLMReply

        return LLMReply(text=self.texts.pop(0), model=self.model)


def test_the_scripted_model_hands_its_answer_out_piece_by_piece():
    """`ScriptedLLM.stream_complete` shows the answer growing, and stops where told."""
    from stepgraph.planner import StreamingClient
    from stepgraph.testing import ScriptedLLM

    seen: list[str] = []
    model = ScriptedLLM([PLAN, PLAN])
    assert isinstance(model, StreamingClient)
    reply = model.stream_complete([], on_text=lambda text: seen.append(text) or True)
    assert reply.text == PLAN and reply.stream == "complete"
    assert len(seen) > 2 and seen[-1] == PLAN
    assert all(later.startswith(earlier) for earlier, later in zip(seen, seen[1:], strict=False))
    stopped = model.stream_complete([], on_text=lambda text: len(text) < 100)
    assert stopped.stream == "stopped" and PLAN.startswith(stopped.text) and stopped.text != PLAN


def test_the_scripted_model_streams_its_plan_into_an_offline_run(tmp_path):
    """`ScriptedLLM` is a `StreamingClient`: with `stream=True` its plan streams into the run."""
    from stepgraph.testing import ScriptedLLM

    path = tmp_path / "s.jsonl"
    result = Engine(planner=Planner(ScriptedLLM([PLAN])), stream=True).run(task(), journal=path)
    journal = read_journal(path)
    assert result.status is RunStatus.VERIFIED
    assert journal.events[0].config.stream is True
    assert [e.stream for e in journal.events if e.event == "llm.response"] == ["complete"]


def test_stream_with_scripted_on_the_command_line_streams(tmp_path):
    """`stepgraph run --stream --scripted FILE`: the scripted answer streams into the run."""
    (tmp_path / "t.yaml").write_text(json.dumps({"name": "t", "goal": GOAL, "inputs": INPUTS}))
    (tmp_path / "s.yaml").write_text(json.dumps({"scripted": True, "responses": [PLAN]}))
    path = tmp_path / "s.jsonl"
    args = ["run", tmp_path / "t.yaml", "--stream", "--scripted", tmp_path / "s.yaml"]
    result = invoke(*args, "--journal", path)
    assert result.exit_code == 0, result.output
    journal = read_journal(path)
    assert journal.events[0].config.stream is True
    assert [e.stream for e in journal.events if e.event == "llm.response"] == ["complete"]


def test_a_client_that_cannot_stream_reads_the_plan_whole_and_records_so(tmp_path):
    """Asked to stream, a client without `stream_complete`: nothing starts early, and
    `run.start` records that the run did not stream (so its replay does not either)."""
    path = tmp_path / "s.jsonl"
    engine = Engine(planner=Planner(_WholeAnswers([PLAN])), stream=True)
    result = engine.run(task(), journal=path)
    journal = read_journal(path)
    assert result.status is RunStatus.VERIFIED
    assert journal.events[0].config.stream is False
    assert seq(journal, "llm.response") < seq(journal, "action")
    assert [e.stream for e in journal.events if e.event == "llm.response"] == [None]

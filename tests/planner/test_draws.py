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


APPLES = "A box has 30 apples. 20 apples are sold and 5 are eaten. How many apples are left?"
NO_PROGRAM = "The apples left are 30 - 20 - 5."
# valid, but its answer does not change with the apples: the effect check fails every round
UNMOVED_PROGRAM = (
    "apples = 30\nsold = 20\neaten = 5\nleft = apples - apples + eaten + sold - sold\nprint(left)"
)


def _programs_only(url: str, **options) -> Planner:
    return Planner(
        client(url), syntax="lines", numbered_names=True, retry_with="fresh",
        program_only=True, **options,
    )  # fmt: skip


def test_a_program_request_the_run_sent_before_takes_its_answer_and_asks_nothing(
    httpserver, tmp_path
):
    """The repair rounds' fresh program was the first round's sampled one, word for word:
    before, each was sent again and the model gave the same program (held-out GSM8K 98)."""
    server = ChatServer(httpserver, [(200, NO_PROGRAM), (200, UNMOVED_PROGRAM)] * 3)
    result = Engine(planner=_programs_only(server.url)).run(
        Task(goal=APPLES), journal=tmp_path / "j.jsonl"
    )
    assert not result.verified
    assert len(server.requests) == 2  # the greedy program, then the sampled one; no repeats
    journal = read_journal(tmp_path / "j.jsonl")
    reused = journal.of_kind("llm.reused")
    assert [(e.purpose, e.attempt, e.asked_attempt) for e in reused] == [
        ("program", 1, 2), ("program", 1, 2),
    ]  # fmt: skip
    assert all(e.text == UNMOVED_PROGRAM for e in reused)
    assert len(journal.of_kind("plan.repair")) == 2  # the rounds still ran, at no model cost
    assert journal.of_kind("run.start")[0].config.reuse_repeats is True


def test_asked_again_without_reuse_the_model_is_sent_the_same_request(httpserver, tmp_path):
    server = ChatServer(httpserver, [(200, NO_PROGRAM), (200, UNMOVED_PROGRAM)] * 3)
    planner = _programs_only(server.url, reuse_repeats=False)
    Engine(planner=planner).run(Task(goal=APPLES), journal=tmp_path / "j.jsonl")
    sent = _sent(server)
    assert sent[2] == sent[1]  # the repair's program request: the first round's, again


def test_a_run_that_reused_answers_replays_identically(httpserver, tmp_path):
    from stepgraph import replay

    server = ChatServer(httpserver, [(200, NO_PROGRAM), (200, UNMOVED_PROGRAM)])
    Engine(planner=_programs_only(server.url)).run(Task(goal=APPLES), journal=tmp_path / "j.jsonl")
    report = replay(tmp_path / "j.jsonl")
    assert report.identical, [str(d) for d in report.divergences]
    replayed = read_journal(report.journal)
    assert len(replayed.of_kind("llm.reused")) == 2 and len(replayed.of_kind("llm.response")) == 2


def test_an_answer_is_remembered_per_run_and_per_sampling(tmp_path):
    draws = Draws()
    run, other_run = JournalWriter(tmp_path / "a.jsonl", "a"), JournalWriter(tmp_path / "b", "b")
    messages = [{"role": "user", "content": GOAL}]
    draws.answer(run, messages, None, 2, 1, "first")
    draws.answer(run, messages, None, 2, 3, "later")  # the first answer is the one kept
    assert draws.answered(run, messages, None, 2) == (1, "first")
    assert draws.answered(run, messages, None, 1) is None  # sampled otherwise
    assert draws.answered(other_run, messages, None, 2) is None
    assert draws.answered(None, messages, None, 2) is None
    run.close()
    other_run.close()


def test_a_reused_answer_edited_in_the_journal_is_never_run_and_the_replay_says_so(
    httpserver, tmp_path
):
    """The replay takes reused answers from its own run, never from the journal's text: an
    `llm.reused` rewritten by hand to another program runs nothing and shows as a divergence."""
    from stepgraph import replay

    server = ChatServer(httpserver, [(200, NO_PROGRAM), (200, UNMOVED_PROGRAM)])
    path = tmp_path / "j.jsonl"
    Engine(planner=_programs_only(server.url)).run(Task(goal=APPLES), journal=path)
    forged = "left = apples - sold - eaten\nprint(left)"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for event in lines:
        if event["event"] == "llm.reused":
            event["text"] = forged
    path.write_text("".join(json.dumps(event) + "\n" for event in lines))
    report = replay(path)
    assert not report.identical
    assert any(d.event == "llm.reused" for d in report.divergences)
    replayed = read_journal(report.journal)
    assert all(e.text == UNMOVED_PROGRAM for e in replayed.of_kind("llm.reused"))
    assert replayed.of_kind("run.end")[0].status != "verified"

"""An answer that loops is stopped while it streams, over HTTP, instead of at the token cap."""

import pytest
from benchmarks._chat_server import ChatStreamServer, tokens

from stepgraph import (
    Budget,
    BudgetExceededError,
    Engine,
    LLMSettings,
    OpenAIClient,
    Planner,
    RunStatus,
    Task,
    replay,
)
from stepgraph.engine import RunOptions
from stepgraph.journal import read_journal
from stepgraph.planner._loops import LoopGuard, looping

GOAL = (
    "How many nights does it take to send 10 TB across a 2 Gbps connection that we may use "
    "only from 19:00 to 23:00, at 85% utilisation, and 10% of the packets have to be sent again?"
)
LINE = 'per_night: "TB" = connection * duration * utilisation * (1 - packets_share)'
COMMENT = "# one night's data: the line's rate over the night, less the share resent"
# The 1.5B model's greedy plan for this goal (a tuning goal, 2026-12-06): the two lines 23
# times, until the 1,024-token cap cut the 24th.
LOOP = f"{COMMENT}\n{LINE}\n" * 23 + f'{COMMENT}\nper_night: "TB" = connection *'
PLAN = (
    f"{LINE}\nnights = ceil(data / per_night)\n"
    'assert nights * per_night >= data, "the nights carry the whole data"\n'
    'answer = f"{nights} nights ({per_night} per night)"'
)


def test_a_block_of_lines_written_four_times_in_a_row_is_a_loop():
    assert looping(f"{COMMENT}\n{LINE}\n" * 4)
    assert looping("x = a * 2\n" + f"{LINE}\n" * 4)
    assert not looping(f"{COMMENT}\n{LINE}\n" * 3)
    # a comment a model writes before every step is no loop: the steps differ
    steps = "".join(f"# calculate\nstep_{n} = a * {n}\n" for n in range(8))
    assert not looping(steps)
    # only the last lines count: a long answer's loop is found, its start is no loop
    long = "".join(f"step_{n} = a * {n}\n" for n in range(100_000))
    assert looping(long + f"{COMMENT}\n\n{LINE}\n\n" * 4)
    assert not looping(f"{LINE}\n" * 4 + long)


def test_the_guard_stops_at_the_fourth_repeat_and_keeps_whole_lines():
    guard = LoopGuard()
    text = ""
    for piece in LOOP:
        text += piece
        if not guard(text):
            break
    assert guard.fired
    kept = guard.cut(text)
    assert kept.count(LINE) == 4 and kept.endswith(LINE + "\n")
    assert LoopGuard().cut(text) == text  # a guard that did not fire cuts nothing


def _planner(server: ChatStreamServer, **options) -> Planner:
    settings = LLMSettings(base_url=server.url, api_key="x", model="m", timeout=10, max_retries=0)
    return Planner(
        OpenAIClient(settings), syntax="lines", numbered_names=True, plan_retries=1, **options
    )


def test_a_looping_answer_is_stopped_while_it_streams_and_the_next_attempt_answers(tmp_path):
    path = tmp_path / "j.jsonl"
    # at 2,000 tokens a second the loop alone takes 0.4 s: the client stops it well before
    with ChatStreamServer([LOOP, PLAN], tokens_per_second=2_000) as server:
        result = Engine(planner=_planner(server, stop_loops=True)).run(
            Task(goal=GOAL), journal=path
        )
    looped = server.served[0]
    assert looped.stopped and looped.sent < looped.total / 2
    # 2 Gbps x 4 h x 0.85 x 0.9 = 2.754 TB a night; 10 TB in 4 nights
    assert result.status is RunStatus.VERIFIED and result.answer.startswith("4 nights")
    journal = read_journal(path)
    first = journal.of_kind("llm.response")[0]
    assert first.stream == "stopped" and first.text.count(LINE) == 4
    assert journal.of_kind("run.start")[0].config.stop_loops is True
    report = replay(path)
    assert report.identical, [str(d) for d in report.divergences]


def _pieces_to_the_stop(answer: str) -> int:
    """How many of the server's pieces a reader has when the guard stops the answer."""
    guard, text = LoopGuard(), ""
    for count, piece in enumerate(tokens(answer), start=1):
        text += piece
        if not guard(text):
            return count
    raise AssertionError("the answer does not loop")


def test_a_stopped_answer_counts_the_tokens_it_streamed(tmp_path):
    """The server's counts come on a last chunk, which a stopped stream never reads."""
    path = tmp_path / "j.jsonl"
    with ChatStreamServer([LOOP, PLAN], tokens_per_second=2_000) as server:
        Engine(planner=_planner(server, stop_loops=True)).run(Task(goal=GOAL), journal=path)
    stopped, answered = read_journal(path).of_kind("llm.response")[:2]
    read = _pieces_to_the_stop(LOOP)
    assert stopped.stream == "stopped" and server.served[0].sent >= read > 100
    assert stopped.usage == {"completion_tokens": read, "streamed_pieces": read}
    # a stream that ran to its end has the server's own counts, prompt tokens too
    assert answered.usage["prompt_tokens"] == 100 and "streamed_pieces" not in answered.usage


def test_a_completion_token_budget_binds_a_stopped_answer(tmp_path):
    """Before, a stopped answer counted 0 tokens: a loop could run past the limit unseen."""
    path = tmp_path / "j.jsonl"
    budget = RunOptions(budget=Budget(completion_tokens=100))
    with ChatStreamServer([LOOP, PLAN], tokens_per_second=2_000) as server:
        engine = Engine(planner=_planner(server, stop_loops=True))
        with pytest.raises(BudgetExceededError) as caught:
            engine.run(Task(goal=GOAL), journal=path, options=budget)
    assert caught.value.limit == "completion_tokens"
    assert caught.value.usage["completion_tokens"] == _pieces_to_the_stop(LOOP)
    assert len(server.served) == 1  # the next plan was never asked for


def test_without_the_setting_the_loop_is_read_to_its_end(tmp_path):
    with ChatStreamServer([LOOP, PLAN], tokens_per_second=20_000) as server:
        Engine(planner=_planner(server)).run(Task(goal=GOAL), journal=tmp_path / "j.jsonl")
    assert not server.served[0].stopped
    assert server.served[0].sent == server.served[0].total

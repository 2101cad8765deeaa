"""A goal that asks for a time of day is refused before any model call, saying what to ask.

Tried as a new user (2026-12-06): "A train leaves at 10:40 and the trip takes 2 hours 35
minutes. What time does it arrive?" was answered "2.58333 h", **verified**, by a program
that adds the trip's hours and minutes and ignores the departure. A lone 10:40 is no
number a plan can use, and the engine has no time of day, so every answer it could verify
was wrong. The program below is the model's real reply.
"""

from __future__ import annotations

import pytest

from stepgraph import replay
from stepgraph.journal import read_journal
from stepgraph.planner import asked_time_of_day
from tests.conftest import invoke
from tests.planner.test_http import ChatServer

TRAIN = "A train leaves at 10:40 and the trip takes 2 hours 35 minutes. What time does it arrive?"
IGNORES_DEPARTURE = "```python\nhours = 2\nminutes = 35\ntrip = hours + minutes\nprint(trip)\n```"


def _asked(command: str, goal: str, server: ChatServer, tmp_path, *options: str):
    return invoke(
        command,
        goal,
        "--base-url",
        server.url,
        "--model",
        "qwen",
        "--preset",
        "small-model",
        "--journal",
        tmp_path / "run.jsonl",
        *options,
        env={"OPENAI_API_KEY": "not-needed"},
    )


@pytest.mark.parametrize("command", ["run", "plan"])
def test_a_time_of_day_asked_is_refused_before_the_model_is_asked(
    command: str, httpserver, tmp_path
) -> None:
    server = ChatServer(httpserver, [(200, IGNORES_DEPARTURE)] * 4)
    options = ["--json", "--no-memory"] if command == "run" else []
    result = _asked(command, TRAIN, server, tmp_path, *options)
    assert result.exit_code == 3, result.output  # no valid plan
    said = " ".join(result.output.split())
    assert "time of day ('What time')" in said
    assert "How long does the trip take?" in said
    assert server.requests == []  # nothing spent on a question no answer of it could be right
    if command == "run":
        (end,) = read_journal(tmp_path / "run.jsonl").of_kind("run.end")
        assert end.status == "invalid"
        # no answer was recorded, yet the run had a planner: the replay refuses it again
        report = replay(tmp_path / "run.jsonl")
        assert report.identical, (report.error, [str(d) for d in report.divergences])
        # a journal edited to say the refused run verified is not replayed as identical
        forged = tmp_path / "forged.jsonl"
        text = (tmp_path / "run.jsonl").read_text()
        forged.write_text(text.replace('"status":"invalid"', '"status":"verified"'))
        assert '"status":"verified"' in forged.read_text()
        assert not replay(forged).identical


@pytest.mark.parametrize(
    ("goal", "asked"),
    [
        (TRAIN, "What time"),
        ("If dinner is served at 6:00 pm what is the latest time she can start?", "what is "),
        ("at what time will the tank be full of rainwater.", "what time"),
        ("What was the latest time that Justin could start his chores?", "What was "),
        ("what's the total time taken by Mr. Langsley?", None),  # a duration
        ("How much time does the trip take from 10:40 to 13:15?", None),
        ("What time period had the most rain?", None),
        ("The flight takes 3 hours. What is the arrival time?", "What is the arrival time"),
        ("What is the travel time from 10:40 to 13:15?", None),  # a duration
        # "when" asks for a time of day where the goal states one to start from
        ("A download starts at 22:00 and takes 5 hours. When will it finish?", "When will"),
        ("They started dating 3 years before. When did they meet?", None),
        ("When will the tank be full if 3 litres a minute flow in?", None),
    ],
)
def test_which_questions_ask_for_a_time_of_day(goal: str, asked: str | None) -> None:
    found = asked_time_of_day(goal)
    assert (found is None) == (asked is None)
    if asked is not None:
        assert found is not None and found.startswith(asked)


def test_a_duration_between_two_times_is_still_planned(httpserver, tmp_path) -> None:
    program = "```python\nhours = 13.25 - 10.75\nprint(hours)\n```"
    server = ChatServer(httpserver, [(200, program)] * 4)
    goal = "How many hours does the shift from 10:45 to 13:15 last?"
    result = _asked("run", goal, server, tmp_path, "--json", "--no-memory")
    assert server.requests, result.output  # asked: the model was called
    assert "time of day" not in result.output

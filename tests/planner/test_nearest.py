"""The worked examples a plan-lines prompt shows: the first ones, or the goal's nearest kinds."""

import pytest
import yaml
from pydantic import ValidationError

from stepgraph import Engine, Planner, Task, replay
from stepgraph.journal import read_journal
from stepgraph.planner._nearest import goal_kinds, nearest
from stepgraph.planner._prompt import template
from stepgraph.planner._settings import PlannerSettings
from tests.planner.test_http import ChatServer, client

EXAMPLES = yaml.safe_load(template("examples_lines.yaml"))
NIGHTS = (
    "How many nights does it take to send 8 TB over a 600 Mbps line that we may use from "
    "01:00 to 05:00, at 75% utilisation, with 3% of the traffic lost to retries?"
)
COPY_HOURS = "How many hours does it take to copy 300 GB over a 2 Gbps link at 60% efficiency?"
WINDOW = "How many GB does a 40 Mbps line carry in a 3-hour window at 90% utilisation?"
APPLES = "Anna has 12 apples and gives 5 to Ben. How many apples does she have left?"
PLAN = (
    'per_night: "GB" = line * duration * utilisation * (1 - traffic)\n'
    "nights = ceil(data / per_night)\n"
    'answer = f"{nights} nights ({per_night} per night)"'
)


def _first_goal(goal: str) -> str:
    return nearest(goal, EXAMPLES, 3)[0]["goal"]


def test_a_transfer_goal_is_shown_the_example_of_its_own_kind_first():
    assert "How many nights does the archive need" in _first_goal(NIGHTS)
    assert "How many minutes does a 90 GB upload take" in _first_goal(COPY_HOURS)
    assert "maintenance window" in _first_goal(WINDOW)
    # no loss stated: the nights example without one, or `(1 - packets)` is copied
    no_loss = "A 2 TB archive goes over a 400 Mbps line from 23:00 to 04:00 at 80% utilisation."
    assert "photo library" in _first_goal(no_loss + " How many nights does it need?")
    # the copy's hours is not shown "which is faster" first: the model copied its min()
    assert "Which is faster" not in _first_goal(COPY_HOURS)


def test_a_goal_alike_only_in_what_it_asks_gets_the_first_examples_in_their_order():
    # "How many" and "25%" are no likeness: a transfer's nights are no example for apples
    for goal in (APPLES, "A shirt costs 40 and is 25% off. How many does 30 buy?"):
        assert nearest(goal, EXAMPLES, 3) == EXAMPLES[:3]
    assert nearest(APPLES, EXAMPLES, 0) == []


def test_the_kinds_read_are_the_stated_quantities_the_share_the_range_and_what_is_asked():
    assert goal_kinds(NIGHTS) == {
        "[information]", "[information] / [time]", "[time]", "shares", "clock range",
        "asked a count",
    }  # fmt: skip
    assert goal_kinds(COPY_HOURS) == {
        "[information]", "[information] / [time]", "share", "asked [time]",
    }  # fmt: skip
    assert goal_kinds(APPLES) == {"asked a count"}


def _run(server: ChatServer, tmp_path, **options) -> str:
    planner = Planner(client(server.url), syntax="lines", plan_retries=0, **options)
    result = Engine(planner=planner).run(Task(goal=NIGHTS), journal=tmp_path / "j.jsonl")
    assert result.answer.startswith("11 nights"), result.answer
    return server.requests[0]["body"]["messages"][0]["content"]


def test_the_planner_sends_the_nearest_examples_and_the_journal_says_so(httpserver, tmp_path):
    server = ChatServer(httpserver, [(200, PLAN)])
    system = _run(server, tmp_path, examples="nearest")
    assert system.index("How many nights does the archive need") < system.index("Example 2")
    assert "Which is faster" not in system and "baker" not in system
    journal = read_journal(tmp_path / "j.jsonl")
    assert journal.of_kind("run.start")[0].config.examples == "nearest"
    report = replay(tmp_path / "j.jsonl")
    assert report.identical, [str(d) for d in report.divergences]


def test_by_default_the_first_examples_are_sent_whatever_the_goal(httpserver, tmp_path):
    server = ChatServer(httpserver, [(200, PLAN)])
    system = _run(server, tmp_path)
    assert "Which is faster" in system and "baker" in system
    assert "archive" not in system
    assert read_journal(tmp_path / "j.jsonl").of_kind("run.start")[0].config.examples == "first"


def test_the_choice_is_a_setting_of_its_own_and_a_wrong_one_is_refused(monkeypatch):
    monkeypatch.setenv("STEPGRAPH_EXAMPLES", "nearest")
    assert PlannerSettings().planner_arguments()["examples"] == "nearest"
    monkeypatch.setenv("STEPGRAPH_EXAMPLES", "closest")
    with pytest.raises(ValidationError, match="'first' or 'nearest'"):
        PlannerSettings()

"""A typed goal's numbers must each be used by the plan, or the run is not verified."""

import pytest

from stepgraph import Engine, Planner, PlanValidationError, RunStatus, StepGraph, Task
from stepgraph.testing import ScriptedLLM
from stepgraph.verifiers import goal_coverage
from tests.conftest import make_task


def _plan(*expressions):
    steps = [
        {"id": f"s{i}", "tool": "calculate", "args": {"expression": e}}
        for i, e in enumerate(expressions)
    ]
    return StepGraph.model_validate({"steps": steps})


class _UngroundedPlanner(Planner):
    """A planner whose plan reaches the run without grounding, as a resumed plan does."""

    def __init__(self, plan: StepGraph) -> None:
        super().__init__(ScriptedLLM([]))
        self._plan = plan

    def plan(self, task, journal=None, *, watch=None):
        return self._plan


def test_a_model_plan_that_ignores_a_number_of_the_goal_is_not_verified(tmp_path):
    """A real model answered this goal by converting 2 TB to GB and ignoring '65% full'."""
    plan = StepGraph.model_validate(
        {
            "steps": [
                {"id": "disk_size", "tool": "unit_convert",
                 "args": {"value": "2 TB", "to_unit": "GB"}}
            ],
            "answer": "${disk_size}",
        }
    )  # fmt: skip
    engine = Engine(planner=_UngroundedPlanner(plan), repair_rounds=0)
    goal = "A 2 TB disk is 65% full. How many GB are free?"
    result = engine.run(Task(goal=goal), journal=tmp_path / "run.jsonl")
    assert result.status is RunStatus.UNVERIFIED
    [coverage] = [v for v in result.verdicts if v.kind == "coverage"]
    assert "'65%'" in coverage.description and not coverage.passed


def test_a_hand_written_plan_that_ignores_a_number_is_refused_when_the_task_is_grounded():
    """With grounded: true a person's plan is held to the goal before it runs."""
    task = make_task(
        [{"id": "disk_size", "tool": "unit_convert", "args": {"value": "2 TB", "to_unit": "GB"}}],
        goal="A 2 TB disk is 65% full. How many GB are free?",
        answer="${disk_size}",
        grounded=True,
    )
    with pytest.raises(PlanValidationError, match="the goal states '65%' but no step"):
        Engine().validate(task)


@pytest.mark.parametrize(
    ("goal", "expressions"),
    [
        ("A 2 TB disk is 65% full. How many GB are free?", ["2 TB * (1 - 0.65)"]),
        ("A 2 TB disk is 65% full. How many GB are free?", ["2 TB * 35 %"]),  # the complement
        ("Move 2.5 TB over 450 Mbps from 00:00 to 06:00", ["450 Mbps * 6 h", "2.5 TB / 1 h"]),
        ("Apples are packed 24 to a crate; 1,000 apples", ["floor(1000 / 24)"]),
        ("12% are lost", ["0.88 * 2"]),
    ],
)
def test_numbers_count_as_used_as_written_as_fractions_or_as_a_window(goal, expressions):
    verdict = goal_coverage(goal, _plan(*expressions))
    assert verdict is not None and verdict.passed, verdict.description


def test_a_goal_without_numbers_gets_no_coverage_verdict():
    assert goal_coverage("How many shareholders does Acme have?", _plan("1 + 1")) is None


def test_a_task_with_inputs_is_not_held_to_its_goal_text(run_task):
    """Task files name their inputs; the goal is prose there (the migration example)."""
    from tests.conftest import EXAMPLES

    result, _ = run_task(EXAMPLES / "migration.yaml")
    assert result.status is RunStatus.VERIFIED
    assert not [v for v in result.verdicts if v.kind == "coverage"]


def test_an_ordinal_or_a_time_of_day_is_not_asked_for_but_every_nth_is():
    from stepgraph.verifiers._numbers import goal_numbers

    goal = (
        "Admission is $8 before 6 P.M. The 4th graders came at 4 pm to the 3rd floor, and "
        "every 3rd visitor won."
    )
    assert [(n.text, n.required) for n in goal_numbers(goal)] == [
        ("8", True), ("6", False), ("4", False), ("4", False), ("3", False), ("3", True),
    ]  # fmt: skip


def test_cutting_into_equal_parts_states_their_number_but_does_not_require_it():
    """GSM8K train 2433: "cuts it into fifths", then `/ 5`, was refused as a number unstated."""
    from stepgraph.verifiers._numbers import word_numbers

    found = [(n.text, n.value, n.required) for n in word_numbers("He cuts it into fifths.")]
    assert found == [("into fifths", 5, False)]
    assert [n.value for n in word_numbers("cut in halves, then into equal thirds")] == [2, 3]
    assert word_numbers("the fifths of May") == []  # no cutting: no number
    goal = "He has 100 feet of rope and cuts it into fifths. How long is each piece?"
    verdict = goal_coverage(goal, _plan("100 ft / 5"))
    assert verdict is not None and verdict.passed, verdict.description


def test_a_count_of_things_named_after_a_colon_is_not_required():
    """GSM8K train 4897: "3 different colors: orange, green, and blue" counts what it names."""
    from stepgraph.verifiers._numbers import goal_numbers, word_numbers

    def required(goal: str) -> list[tuple[str, bool]]:
        return [(n.text, n.required) for n in [*goal_numbers(goal), *word_numbers(goal)]]

    assert required("Fish in 3 different colors: orange, green, and blue.") == [("3", False)]
    assert required("There are 4 rooms: the hall, the den and the attic.") == [("4", True)]
    assert required("He bought 3 apples: 2 were red.") == [("3", True), ("2", True)]


def test_a_number_after_a_word_and_a_hyphen_names_something_and_is_not_asked_for():
    """GSM8K train 1402: "killed by COVID-19" refused every right program for its 19."""
    from stepgraph.verifiers._numbers import goal_numbers

    goal = "After COVID-19 they drove 20 miles on I-95 with 5-6 bags."
    assert [(n.text, n.required) for n in goal_numbers(goal)] == [
        ("19", False), ("20", True), ("95", False), ("5", True), ("6", True),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("goal", "expressions"),
    [
        # GSM8K train 4294: 12 is the three periods of 4 weeks, said again
        (
            "She saves $5 a week for 4 weeks, then $10 a week for the next 4 weeks, then "
            "$20 a week for the next 4 weeks. How much has she saved over 12 weeks?",
            ["5 * 4", "10 * 4", "20 * 4"],
        ),
        # GSM8K train 1501: "the two deliveries" counts the first and the second store
        (
            "A truck carries 50000 pounds. 10% is unloaded at the first store, and 20% of "
            "the rest at the second store. How much is left after the two deliveries?",
            ["50000 - 50000 * 0.1", "45000 - 45000 * 0.2"],
        ),
        # GSM8K train 3788: "day one ... day 2 ... those two days"; 75% is 25%'s rest
        (
            "Of the fish she sees, 25% are sharks and 75% are other fish. On day one she counts 15 "
            "fish. On day 2 she counts three times as many. How many sharks over those two "
            "days?",
            ["15 * 3", "0.25 * (15 + 45)"],
        ),
        # GSM8K train 3348 and 7301: names, and a period of one
        ("He wrote 25 songs on the top 10 charts and 10 more. How many songs?", ["25 + 10"]),
        ("She puts $100 into her 401K 26 times. How much after 1 year?", ["100 * 26"]),
        # GSM8K test 457: "N minutes later," says when, as "After N minutes," does
        (
            "Katelyn saw 50 fairies. After about twenty minutes, 25 more joined them. Ten "
            "minutes later, 30 fairies flew away. How many fairies are left?",
            ["50 + 25 - 30"],
        ),
    ],
)
def test_a_number_that_restates_the_others_or_names_something_is_not_required(goal, expressions):
    verdict = goal_coverage(goal, _plan(*expressions))
    assert verdict is not None and verdict.passed, verdict.description


@pytest.mark.parametrize(
    ("goal", "expressions", "unused"),
    [
        # 12 is not the sum of the other weeks: a plan must use it
        ("She saves $5 a week for 4 weeks and $10 a week for 4 weeks. Over 12 weeks?",
         ["5 * 4", "10 * 4"], "12"),
        # three ordinals, but "the two" counts only two of them: no restating
        ("The first, second and third store each took 10 boxes. The two trucks had 50 "
         "boxes. How many are left?", ["50 - 10 * 3"], "two"),
        # a period of 2 is a multiplier; "1 apple" eaten is a number to use
        ("He earns $5 a day. How much in 2 weeks?", ["5 * 7"], "2"),
        ("He had 5 apples and ate 1 apple. How many are left?", ["5"], "1"),
        # 30% and 70% of different things: both needed
        ("70% of the 10 boys and 30% of the 20 girls came. How many came?", ["0.7 * 10"],
         "30%"),
        ("He painted 30% of the walls and 70% of the doors. There are 400 walls and 200 "
         "doors. How many did he paint?", ["400 * 0.3"], "70%"),
        # the story's "two remaining" counts people still to work out, not the ordinals
        ("Four people lost 103 kg. The first lost 27 kg. The second lost 7 kg less. The two "
         "remaining people lost the same. How much did the last one lose?",
         ["103 - 27 - 20", "56 / 4"], "two"),
        # a story's period of one is a duration to add; "the top 2 floors" counts floors
        ("She runs for 1 hour on Monday and 30 minutes on Tuesday. How many minutes?",
         ["30"], "1"),
        ("The building has 23 floors; the top 2 floors have 2 units, the rest 12. How many "
         "units?", ["21 * 12"], "2"),
        # a sum by chance, with no span word: 15 black spools are spools to use
        ("He has 12 spools of red yarn, 15 spools of black yarn, and 3 spools of blue "
         "yarn. How many spools?", ["12 + 3"], "15"),
        # after 5 months, in a story with a rate per month: the months count
        ("Barkley gets 10 new bones at the beginning of the month. After 5 months, he has 8 "
         "bones. How many has he buried?", ["10 - 8"], "5"),
        ("He reads 10 pages every day. Three days later, he has 25 pages left. How many "
         "pages did the book have?", ["25 + 10"], "Three"),
    ],
)  # fmt: skip
def test_a_number_that_only_looks_like_a_restatement_stays_required(goal, expressions, unused):
    verdict = goal_coverage(goal, _plan(*expressions))
    assert verdict is not None and not verdict.passed
    assert verdict.values[unused] == "unused", verdict.values

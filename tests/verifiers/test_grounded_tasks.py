"""A `grounded: true` task holds its own inputs to their quotes, as a plan's inputs are held.

And the goal-number coverage verdict is for plans a model wrote and for grounded tasks: a
person's plan of a goal that merely mentions a number ("a DAG of 25 steps") is not
failed by it.
"""

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from stepgraph import Engine, Planner, PlanValidationError, RunStatus, StepGraph, Task
from stepgraph.task import PreparedTask, parse_input
from stepgraph.testing import ScriptedLLM
from stepgraph.tools import default_registry
from stepgraph.verifiers import goal_coverage, grounding_problems
from tests.conftest import invoke

GOAL = (
    "How many nights does moving 2.5 TB over a 450 Mbps link take, only from 00:00 to "
    "06:00, at 90% utilisation and with 12% lost to retries?"
)
CANONICAL: dict[str, Any] = {
    "name": "grounded-migration",
    "goal": GOAL,
    "grounded": True,
    "inputs": {
        "data": {"value": "2.5 TB", "quote": "moving 2.5 TB"},
        "link": {"value": "450 Mbps", "quote": "450 Mbps"},
        "window": {"value": "6 h", "quote": "from 00:00 to 06:00"},
        "utilisation": {"value": 0.9, "quote": "90% utilisation"},
        "retry_factor": {"value": 0.88, "quote": "12% lost to retries"},
    },
    "tools": ["unit_convert", "calculate"],
    "plan": {
        "steps": [
            {"id": "rate", "tool": "unit_convert",
             "args": {"value": "${inputs.link}", "to_unit": "MB/s"}},
            {"id": "total", "tool": "unit_convert",
             "args": {"value": "${inputs.data}", "to_unit": "GB"}},
            {"id": "per_night", "tool": "calculate",
             "args": {"expression": "${rate} * ${inputs.window} * ${inputs.utilisation}"
                                    " * ${inputs.retry_factor}"},
             "expect_unit": "GB"},
            {"id": "nights", "tool": "calculate",
             "args": {"expression": "ceil(${total} / ${per_night})"}},
        ],
        "checks": [
            {"expression": "${nights} * ${per_night} >= ${total}", "why": "enough nights"},
            {"expression": "(${nights} - 1) * ${per_night} < ${total}", "why": "not one too many"},
        ],
    },
    "answer": "${nights} nights (${per_night} per night)",
}  # fmt: skip


def _steps(task: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {step["id"]: step for step in task["plan"]["steps"]}


def _mbps_as_mb_per_s(task):
    task["inputs"]["link"]["value"] = "450 MB/s"


def _tb_as_tib(task):
    task["inputs"]["data"]["value"] = "2.5 TiB"


def _utilisation_unused(task):
    _steps(task)["per_night"]["args"]["expression"] = (
        "${rate} * ${inputs.window} * ${inputs.retry_factor}"
    )


def _utilisation_not_there(task):
    _utilisation_unused(task)
    del task["inputs"]["utilisation"]


def _divided_by_8_by_hand(task):
    rate = _steps(task)["rate"]
    rate["tool"] = "calculate"
    rate["args"] = {"expression": "${inputs.link} / 8"}


def _window_of_6_min(task):
    task["inputs"]["window"]["value"] = "6 min"


def _window_left_out(task):
    per_night = _steps(task)["per_night"]
    per_night["args"]["expression"] = "${rate} * ${inputs.utilisation} * ${inputs.retry_factor}"
    del per_night["expect_unit"]


def _window_not_there(task):
    _window_left_out(task)
    del task["inputs"]["window"]


def _link_unquoted(task):
    task["inputs"]["link"] = {"value": "450 MB/s"}


def _utilisation_as_its_complement(task):
    """0.1 is 1 - 90%: nothing in "90% utilisation" says a share is lost."""
    task["inputs"]["utilisation"]["value"] = 0.1


MISTAKES = [
    (_mbps_as_mb_per_s, "inputs.link: the value '450 MB/s' is not what the quote '450 Mbps'"),
    (_tb_as_tib, "inputs.data: the value '2.5 TiB' is not what the quote 'moving 2.5 TB'"),
    (_utilisation_unused, "inputs.utilisation: no step or check uses this input"),
    (_utilisation_not_there, "the goal states '90%' but no step or check uses it"),
    (_divided_by_8_by_hand, "8 looks like a conversion factor (bits per byte)"),
    (_window_of_6_min, "inputs.window: the value '6 min' is not what the quote"),
    (_window_left_out, "inputs.window: no step or check uses this input"),
    (_window_not_there, "the goal states '00:00 to 06:00' but no step or check uses it"),
    (_link_unquoted, "inputs.link: a grounded task's input quotes the goal's words"),
    (
        _utilisation_as_its_complement,
        "inputs.utilisation: the value 0.1 is not what the quote '90% utilisation' states",
    ),
]
IDS = [
    "Mbps-as-MB/s",
    "TB-as-TiB",
    "utilisation-unused",
    "utilisation-left-out",
    "by-hand-8",
    "6-min-window",
    "window-unused-no-expect-unit",
    "window-left-out-no-expect-unit",
    "unquoted-wrong-link",
    "utilisation-as-0.1",
]


def _write(tmp_path: Path, change=None) -> Path:
    task = copy.deepcopy(CANONICAL)
    if change is not None:
        change(task)
    path = tmp_path / "task.yaml"
    path.write_text(yaml.safe_dump(task, sort_keys=False))
    return path


def test_the_right_grounded_task_with_0_88_and_0_9_verifies_with_3_nights(tmp_path):
    """0.88 for "12% lost to retries" and 0.9 for "90% utilisation" are what the quotes say."""
    path = _write(tmp_path)
    assert invoke("validate", path).exit_code == 0
    result = Engine().run(path, journal=tmp_path / "run.jsonl")
    assert result.status is RunStatus.VERIFIED, [v.description for v in result.verdicts]
    assert result.answer.startswith("3 nights")
    [coverage] = [v for v in result.verdicts if v.kind == "coverage"]
    assert coverage.passed, coverage.description


@pytest.mark.parametrize(("change", "message"), MISTAKES, ids=IDS)
def test_a_grounded_task_with_one_mistake_is_refused_before_it_runs(tmp_path, change, message):
    """Each wrong canonical task is refused by validate (exit 3) and by run, never verified."""
    path = _write(tmp_path, change)
    validated = invoke("validate", path)
    assert validated.exit_code == 3, validated.output
    with pytest.raises(PlanValidationError) as refused:
        Engine().run(path, journal=tmp_path / "run.jsonl")
    problems = [str(p) for p in refused.value.problems]
    assert any(message in problem for problem in problems), problems


def _as_plan_inputs(task: dict[str, Any]) -> tuple[Task, StepGraph]:
    """The same task with its inputs moved into the plan (each keeps its quote)."""
    plan = copy.deepcopy(task["plan"])
    plan["inputs"] = {
        name: {"value": item["value"], "quote": item.get("quote", "")}
        for name, item in task["inputs"].items()
    }
    return Task(goal=task["goal"]), StepGraph.model_validate(plan)


# The mistakes a plan's own inputs can make too (a plan input always has its quote, and
# one left out of the plan is the goal's number unused, as for a task).
IN_PLAN = [(m, i) for m, i in zip(MISTAKES, IDS, strict=True) if m[0] is not _link_unquoted]


@pytest.mark.parametrize(
    ("change", "message"), [m for m, _ in IN_PLAN], ids=[i for _, i in IN_PLAN]
)
def test_the_same_mistake_in_plan_inputs_is_refused_with_the_same_message(change, message):
    """Task inputs and plan inputs go through one check: the same value, the same refusal."""
    wrong = copy.deepcopy(CANONICAL)
    change(wrong)
    task, plan = _as_plan_inputs(wrong)
    problems = [
        str(p) for p in grounding_problems(plan, PreparedTask(task, default_registry(), {}))
    ]
    assert any(message in problem for problem in problems), problems


@pytest.mark.parametrize(
    ("quote", "value", "states"),
    [
        ("12% lost to retries", 0.88, True),  # the share kept: the complement
        ("12% lost to retries", 0.12, True),
        ("12% lost to retries", "12 %", True),
        ("12% lost to retries", "88 %", True),
        ("12% lost to retries", 12, False),  # a bare 12 would multiply by twelve
        ("12% lost to retries", 0.8, False),
        ("90% utilisation", 0.9, True),
        ("90% utilisation", 0.1, False),  # no loss in the words: the rest is not 90%
        ("from 00:00 to 06:00", "6 h", True),
        ("from 00:00 to 06:00", "360 min", True),
        ("from 00:00 to 06:00", "6 min", False),
        ("450 Mbps", "56.25 MB/s", True),
        ("450 Mbps", "450 MB/s", False),
    ],
)
def test_a_task_input_passes_its_quote_in_every_form_coverage_accepts(
    tmp_path, quote, value, states
):
    """One notion of "this value is what this quote says", for task and plan inputs alike."""
    name = next(n for n, item in CANONICAL["inputs"].items() if item["quote"] == quote)

    def change(task):
        task["inputs"][name]["value"] = value

    prefix = f"inputs.{name}: the value"
    path = _write(tmp_path, change)
    task = Engine().prepare(path)
    assert task.plan is not None
    problems = [str(p) for p in grounding_problems(task.plan, task) if str(p).startswith(prefix)]
    assert (problems == []) is states, problems
    wrong = copy.deepcopy(CANONICAL)
    change(wrong)
    plain_task, plan = _as_plan_inputs(wrong)
    in_plan = grounding_problems(plan, PreparedTask(plain_task, default_registry(), {}))
    assert ([p for p in in_plan if str(p).startswith(prefix)] == []) is states


def test_coverage_counts_a_task_input_only_when_its_value_is_what_the_goal_states():
    """A task input of 450 MB/s does not use the goal's "450 Mbps"; 450 Mbps does."""
    plan = StepGraph.model_validate(
        {"steps": [{"id": "r", "tool": "unit_convert",
                    "args": {"value": "${inputs.link}", "to_unit": "MB/s"}}]}
    )  # fmt: skip
    goal = "Convert a 450 Mbps link"
    right = goal_coverage(goal, plan, {"link": parse_input("450 Mbps")})
    wrong = goal_coverage(goal, plan, {"link": parse_input("450 MB/s")})
    assert right is not None and right.passed
    assert wrong is not None and not wrong.passed and "'450'" in wrong.description


def test_a_hand_written_plan_of_a_goal_with_a_number_verifies_from_a_task_file(tmp_path):
    """A task "perf DAG of 25 steps" with its own plan is not held to the 25 in its goal."""
    steps = [{"id": "s0", "tool": "calculate", "args": {"expression": "1 + 1"}}]
    steps += [
        {"id": f"s{i}", "tool": "calculate", "args": {"expression": f"${{s{i - 1}}} + 1"}}
        for i in range(1, 25)
    ]
    path = tmp_path / "perf.yaml"
    path.write_text(yaml.safe_dump({"goal": "perf DAG of 25 steps", "plan": {"steps": steps}}))
    result = Engine().run(path, journal=tmp_path / "run.jsonl")
    assert result.status is RunStatus.VERIFIED, [v.description for v in result.verdicts]
    assert not [v for v in result.verdicts if v.kind == "coverage"]
    assert invoke("run", path, "--journal", tmp_path / "cli.jsonl").exit_code == 0


def test_a_hand_written_plan_of_a_goal_with_numbers_verifies_from_python(tmp_path):
    """Task(goal="Price of the 2 products for Q3 2025", plan=...) ends verified, no advice."""
    plan = StepGraph.model_validate(
        {
            "steps": [{"id": "total", "tool": "calculate", "args": {"expression": "19.5 + 5.5"}}],
            "answer": "${total}",
        }
    )
    task = Task(goal="Price of the 2 products for Q3 2025", plan=plan)
    result = Engine().run(task, journal=tmp_path / "run.jsonl")
    assert result.status is RunStatus.VERIFIED, [v.description for v in result.verdicts]
    assert result.answer == "25"
    assert not [v for v in result.verdicts if v.kind == "coverage"]


def test_a_grounded_task_without_a_plan_whose_input_misreads_its_quote_asks_no_model(tmp_path):
    """No plan can fix the task's own 450 MB/s: it is refused before the model is asked."""

    def change(task):
        _mbps_as_mb_per_s(task)
        del task["plan"]

    llm = ScriptedLLM([])
    with pytest.raises(PlanValidationError, match="inputs.link: the value '450 MB/s'"):
        Engine(planner=Planner(llm)).run(_write(tmp_path, change), journal=tmp_path / "r.jsonl")
    assert llm.requests == []


def test_a_set_value_of_a_grounded_task_is_held_to_the_goal_and_named_as_set(tmp_path):
    """--set link=1Gbps on a goal that says 450 Mbps would answer another question."""
    path = _write(tmp_path)
    with pytest.raises(PlanValidationError, match=r"value '1 Gbps \(as set\)' is not what"):
        Engine().validate(path, overrides={"link": "1Gbps"})
    Engine().validate(path, overrides={"link": "56.25 MB/s"})  # the same quantity


def test_a_complement_refused_says_why(tmp_path):
    """The refusal of 0.1 for 90% says what the quote states and when the rest would count."""
    with pytest.raises(PlanValidationError) as refused:
        Engine().run(_write(tmp_path, _utilisation_as_its_complement), journal=tmp_path / "r.jsonl")
    [problem] = [str(p) for p in refused.value.problems if "inputs.utilisation" in str(p)]
    assert "(0.9); 0.1 is the rest, 1 - 90%, which counts only where the goal's words" in problem


def test_a_short_quote_is_read_with_the_goal_words_around_it(tmp_path):
    """The quote "12%" of "with 12% lost to retries" states a loss: 0.88 is what is kept."""

    def change(task):
        task["inputs"]["retry_factor"]["quote"] = "12%"

    result = Engine().run(_write(tmp_path, change), journal=tmp_path / "run.jsonl")
    assert result.status is RunStatus.VERIFIED


@pytest.mark.parametrize(
    ("goal", "percent", "literal", "used"),
    [
        (GOAL, "12%", "0.88", True),  # "12% lost to retries": the share kept
        (GOAL, "90%", "0.1", False),  # "90% utilisation": the rest is no number of the goal
        ("A 2 TB disk is 65% full. How many GB are free?", "65%", "0.35", True),
        ("Prices are 30% off", "30%", "0.7", True),
        ("The link runs at 90% utilisation", "90%", "0.1", False),
        ("A DIY version saves 20% of the $400 price", "20%", "0.8", True),  # GSM8K test 370
        ("The third ate 25% less than the second", "25%", "0.75", True),  # train 5103
        ("The second ate 25% more than the first", "25%", "0.75", False),
        ("He sold 3/5 of his land and had 12.8 hectares left", "3/5", "2", True),  # 2/5 left
        ("He owns 3/5 of the land, worth 12.8 dollars", "3/5", "2", False),
    ],
)
def test_a_plan_literal_is_a_complement_only_where_the_words_say_a_share_is_lost(
    goal, percent, literal, used
):
    plan = StepGraph.model_validate(
        {"steps": [{"id": "x", "tool": "calculate", "args": {"expression": f"2 * {literal}"}}]}
    )
    verdict = goal_coverage(goal, plan)
    assert verdict is not None
    assert (verdict.values[percent] == "used") is used

import pytest

from stepgraph import Engine, PlanValidationError
from tests.conftest import make_task


def problems_of(steps, **fields):
    with pytest.raises(PlanValidationError) as error:
        Engine().validate(make_task(steps, **fields))
    return [str(problem) for problem in error.value.problems]


def calc(step_id, expression, **extra):
    return {"id": step_id, "tool": "calculate", "args": {"expression": expression}, **extra}


def test_a_cycle_is_rejected_with_the_cycle_shown():
    """Both step ids appear in the message, as a path the user can read."""
    problems = problems_of([calc("a", "${b} + 1"), calc("b", "${a} + 1")])
    assert problems == ["step 'a': cycle a -> b -> a; remove one of these dependencies"]


def test_a_self_dependency_is_rejected():
    problems = problems_of([calc("a", "1", depends_on=["a"])])
    assert "step 'a': depends_on names the step itself" in problems
    assert "step 'a': depends on itself" in problems


def test_a_self_reference_is_rejected():
    assert "step 'a': ${a} refers to the step itself" in problems_of([calc("a", "${a} + 1")])


def test_duplicate_ids_are_rejected():
    problems = problems_of([calc("a", "1"), calc("a", "2")])
    assert "step 'a': id used by 2 steps; ids must be unique" in problems


def test_an_unknown_tool_is_rejected_listing_the_allowed_ones():
    problems = problems_of([{"id": "a", "tool": "web_search", "args": {}}])
    assert problems == ["step 'a': unknown tool 'web_search' (allowed: calculate, unit_convert)"]


def test_a_tool_outside_the_task_allow_list_is_unknown():
    problems = problems_of(
        [
            {
                "id": "a",
                "tool": "unit_convert",
                "args": {"value": 1, "from_unit": "GB", "to_unit": "MB"},
            }
        ],
        tools=["calculate"],
    )
    assert problems == ["step 'a': unknown tool 'unit_convert' (allowed: calculate)"]


def test_a_dangling_reference_is_rejected():
    problems = problems_of([calc("a", "1"), calc("b", "${nope} * 2")])
    assert problems == ["step 'b': ${nope} refers to no step (steps: a, b)"]


def test_an_unknown_input_is_rejected():
    problems = problems_of([calc("a", "${inputs.size} * 2")], inputs={"data": "1 GB"})
    assert problems == ["step 'a': ${inputs.size} names no task input (inputs: data)"]


def test_an_argument_of_the_wrong_type_is_rejected():
    step = {
        "id": "a",
        "tool": "unit_convert",
        "args": {"value": 1, "from_unit": "GB", "to_unit": 5},
    }
    assert problems_of([step]) == ["step 'a': argument 'to_unit': Input should be a valid string"]


def test_missing_and_extra_arguments_are_rejected():
    step = {"id": "a", "tool": "unit_convert", "args": {"value": 1, "unit": "GB"}}
    problems = problems_of([step])
    assert "step 'a': missing required argument 'to_unit' of tool 'unit_convert'" in problems
    assert any("unknown argument 'unit'" in problem for problem in problems)


def test_an_expect_unit_of_the_wrong_dimension_is_caught_before_the_run():
    """The rate is known to be a rate before anything runs, so 'GB' cannot match."""
    steps = [
        {"id": "rate", "tool": "unit_convert", "args": {"value": "450 Mbps", "to_unit": "MB/s"}},
        calc("volume", "${rate} * 2", expect_unit="GB"),
    ]
    problems = problems_of(steps)
    assert problems == [
        "step 'volume': output is in [information] / [time] but expect_unit 'GB' is [information]"
    ]


def test_adding_incompatible_units_is_caught_before_the_run():
    steps = [calc("a", "${inputs.data} + ${inputs.window}")]
    problems = problems_of(steps, inputs={"data": "2 GB", "window": "6 h"})
    assert len(problems) == 1 and "units do not match" in problems[0]


def test_a_conversion_between_dimensions_is_caught_before_the_run():
    step = {
        "id": "a",
        "tool": "unit_convert",
        "args": {"value": 1, "from_unit": "Mbps", "to_unit": "GB"},
    }
    [problem] = problems_of([step])
    assert problem.startswith(
        "step 'a': cannot convert 1 Mbps ([information] / [time]) to 'GB' ([information]); "
    )
    assert "divide or multiply them with calculate" in problem  # the fix, for the model


def test_an_unsafe_expression_is_caught_before_the_run():
    assert problems_of([calc("a", "__import__('os').system('true')")])[0].startswith("step 'a':")


def test_an_empty_plan_is_rejected():
    assert problems_of([]) == ["the plan has no steps; add at least one tool call"]


def test_a_bad_check_is_rejected():
    problems = problems_of([calc("a", "1")], checks=[{"expression": "${b} > 0"}])
    assert problems == ["check 1 (${b} > 0): ${b} refers to no step (steps: a)"]


def test_a_check_that_compares_two_kinds_of_quantity_is_rejected_before_the_run():
    """The suite's `tib-copy-hours`: the model's `${hours} >= ${inputs.dataset}` (hours
    against TiB) failed only after the run, and took the right answer with it."""
    steps = [calc("hours", "2 TiB / (1 Gbps)", expect_unit="h")]
    checks = [
        {"expression": "${hours} >= 2 TiB", "why": "the copy takes time"},
        {"expression": "${hours} >= 1 h"},  # one kind: the run decides
        {"expression": "${hours} / 0 > 1"},  # 1 / 0 is the run's to report
    ]
    problems = problems_of(steps, checks=checks)
    assert problems == [
        "check 1 (${hours} >= 2 TiB): units do not match: `${hours}` is in h ([time]) and "
        "`2 TiB` is in TiB ([information]): one unit of one kind, or none, for both (Cannot "
        "convert from 'hour' ([time]) to 'tebibyte' ([information]))"
    ]


def test_every_problem_is_reported_at_once():
    problems = problems_of([calc("a", "${zz}"), {"id": "b", "tool": "nope", "args": {}}])
    assert len(problems) == 2


def test_a_valid_plan_gives_its_dependency_graph():
    graph = Engine().validate(
        make_task([calc("a", "1"), calc("b", "${a} + 1"), calc("c", "2", depends_on=["a"])])
    )
    assert sorted(graph.edges) == [("a", "b"), ("a", "c")]


def test_a_unit_mismatch_is_reported_once_not_again_downstream():
    steps = [
        {
            "id": "rate",
            "tool": "unit_convert",
            "args": {"value": "450 Mbps", "to_unit": "MB/s"},
            "expect_unit": "GB",
        },
        calc("volume", "${rate} * 6 h", expect_unit="GB"),
    ]
    problems = problems_of(steps)
    assert len(problems) == 1 and problems[0].startswith("step 'rate': output is in")


def test_messages_for_a_small_models_usual_slips_say_what_to_write():
    """A plain number under a unit, inputs in a goal that has none, a count with no number."""
    from stepgraph import PlanValidationError, StepGraph
    from stepgraph.executor import validate_plan
    from stepgraph.tools import default_registry

    plan = StepGraph.model_validate(
        {
            "steps": [
                {
                    "id": "hours",
                    "tool": "calculate",
                    "args": {"expression": "2 + 3"},
                    "expect_unit": "h",
                },
                {
                    "id": "rate",
                    "tool": "unit_convert",
                    "args": {"value": "${inputs.link}", "to_unit": "MB/s"},
                },
                {
                    "id": "left",
                    "tool": "calculate",
                    "args": {"expression": "apples - 17"},
                },
            ]
        }
    )
    with pytest.raises(PlanValidationError) as error:
        validate_plan(plan, default_registry(), {})
    text = str(error.value)
    assert "write the unit into the expression (e.g. '5 h')" in text
    assert "this goal lists no inputs; write the value from the goal with its unit" in text
    assert "to count apples, write the number before it ('23 apples')" in text


def test_arithmetic_on_a_known_text_input_is_reported_naming_the_step_and_the_input():
    """`${inputs.x} * 100000000` with x the text 'abc' is a plan problem before the run."""
    problems = problems_of([calc("big", "${inputs.x} * 100000000")], inputs={"x": "abc"})
    assert problems == [
        "step 'big': operand `${inputs.x}` is the text 'abc', not a number or quantity; "
        "arithmetic needs numbers"
    ]


def test_a_text_input_is_reported_even_beside_a_reference_of_unknown_unit():
    """The operand check does not wait for every upstream unit to be known."""
    plugin = {"id": "up", "tool": "calculate", "args": {"expression": "${inputs.n} * 2"}}
    steps = [plugin, calc("big", "${inputs.x} * ${up}")]
    problems = problems_of(steps, inputs={"x": "abc", "n": "abc"})
    assert "step 'big': operand `${inputs.x}` is the text 'abc'" in problems[-1]
    assert problems[0].startswith("step 'up': operand `${inputs.n}`")


def test_a_text_input_used_only_where_text_belongs_is_not_a_problem():
    """Only arithmetic on the text is reported: a number input beside it validates."""
    task = make_task([calc("a", "${inputs.n} * 2")], inputs={"name": "abc", "n": "3 GB"})
    Engine().validate(task)


def test_a_field_of_a_text_input_is_a_plan_problem_not_an_internal_error():
    """`${inputs.x.foo}` on a text input is reported for its step, as what to change."""
    problems = problems_of([calc("big", "${inputs.x.foo} * 2")], inputs={"x": "abc"})
    assert problems == ["step 'big': ${inputs.x.foo}: no field 'foo' (have: str)"]


def test_a_constant_expression_run_would_refuse_is_refused_by_validate(tmp_path):
    """`validate` said valid for `9**9**9**9`, which `run` refuses: the limits apply before."""
    from stepgraph import Engine, PlanValidationError, StepGraph, Task

    steps = [{"id": "a", "tool": "calculate", "args": {"expression": "9**9**9**9"}}]
    task = Task(goal="big", plan=StepGraph(steps=steps))
    with pytest.raises(PlanValidationError, match="exponent .* larger than the limit"):
        Engine().validate(task)

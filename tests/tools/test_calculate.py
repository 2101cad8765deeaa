import re
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stepgraph import (
    CalculationError,
    Engine,
    PlanValidationError,
    RunStatus,
    UnitsDoNotCancelError,
    tool,
)
from stepgraph.cli import ExitCode
from stepgraph.journal import read_journal
from stepgraph.tools import calculate
from stepgraph.tools.expression import Expression, check_operands
from stepgraph.units import quantity
from tests.conftest import flat, invoke, make_task


def calc(expression):
    return calculate.func(expression)


def test_arithmetic_and_functions():
    assert calc("ceil(2500 / 962.28)") == 3
    assert calc("floor(7 / 2) + max(1, 4) - min(2, 3) + abs(-1)") == 6
    assert calc("round(sqrt(16) + log(1), 1)") == 4.0
    assert calc("(1 + 2) * 3 ** 2") == 27


def test_numbers_with_units_keep_their_units():
    """'6 h' and '2.5 TB' are quantities; the result carries the combined unit."""
    value = calc("56.25 MB/s * 6 h")
    assert value.to("GB").magnitude == pytest.approx(1215)
    assert calc("2.5 TB / (500 GB)") == pytest.approx(5)


def test_adding_incompatible_units_is_an_error():
    with pytest.raises(CalculationError, match="units do not match"):
        calc("1 GB + 2 s")


def test_comparisons_give_booleans_across_units():
    assert calc("3 * 962.28 GB >= 2.5 TB") is True
    assert calc("2 * 962.28 GB >= 2.5 TB") is False


@pytest.mark.parametrize("expression", ["2.25 h >= 1", "1 < 2.25 h", "3 USD == 3"])
def test_a_quantity_compared_with_a_plain_number_says_which_unit_to_write(expression):
    """The suite's minutes-to-hours: `${hours} >= 1` failed with pint's own "ValueError:
    Cannot compare PlainQuantity and <class 'int'>", which named no fix."""
    with pytest.raises(CalculationError, match=r"with the plain number \d+: write the number"):
        calc(expression)
    assert calc("3 tables >= 2") is True  # a count is a plain number
    assert calc("65 USD >= 0") is True  # zero is zero in every unit


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("__import__('os')", "call to '__import__' is not allowed"),
        ("open('/etc/passwd')", "call to 'open' is not allowed"),
        ("(1).real", "attribute access is not allowed"),
        ("ceil.__globals__", "attribute access is not allowed"),
        ("9**9**9", "exponent 387420489 is larger than the limit"),
        ("[1, 2][0]", "not allowed"),
        ("'a' * 3", "only numbers are allowed"),
        ("os", "unknown name 'os'"),
        ("lambda: 1", "not allowed"),
        ("10**900 * 10**900 * 10**900 * 10**900 * 10**900", "too large"),
        # units convert in floats: pint raised a bare OverflowError for this one
        ("(10 gal) ** 400", "too large to convert its units"),
        ("1 +", "invalid expression syntax"),
        ("ceil(x=1)", "not allowed"),
    ],
)
def test_unsafe_or_runaway_expressions_are_refused(expression, message):
    """No eval: names, attributes, subscripts and calls outside the allow-list are refused."""
    with pytest.raises(CalculationError, match=message):
        calc(expression)


def test_a_megabyte_long_expression_is_refused_before_parsing():
    with pytest.raises(CalculationError, match="characters; the limit is"):
        calc("1+" * 500_000 + "1")


def test_a_slow_expression_hits_the_time_limit(monkeypatch):
    """The evaluator checks a deadline between nodes, so no expression runs unbounded."""
    from stepgraph.tools import expression as _calculate

    monkeypatch.setattr(_calculate, "TIME_LIMIT_SECONDS", -1.0)
    with pytest.raises(CalculationError, match="took longer than"):
        calc("1 + 1")


@given(
    st.lists(st.integers(min_value=-1000, max_value=1000), min_size=2, max_size=6),
    st.lists(st.sampled_from(["+", "-", "*"]), min_size=5, max_size=5),
)
def test_integer_arithmetic_matches_python(numbers, operators):
    """For plain integer arithmetic the evaluator agrees with Python itself."""
    expression = str(numbers[0])
    for number, op in zip(numbers[1:], operators, strict=False):
        expression += f" {op} ({number})"
    assert calc(expression) == eval(expression)  # noqa: S307  # the oracle, on our own digits


def test_quantity_results_reduce_to_plain_numbers_when_dimensionless():
    result = calc("(2500.0 * GB) / (962.28 * GB)")
    assert isinstance(result, float)
    assert quantity(1, "GB") / quantity(1, "GB") == 1


# --- operands that are not numbers (issue 20: resources an input can exhaust) ---------

BIG = 100_000_000  # a text times this would be hundreds of megabytes


def bound(text, **values):
    """An expression whose ${name} references are bound to the given values."""
    return Expression(text, {f"${{{name}}}": value for name, value in values.items()})


def test_a_bound_text_times_a_huge_number_is_refused_by_name_before_evaluating():
    """`${x} * 100000000` with x a text fails at once, naming the reference and the text."""
    started = time.monotonic()
    with pytest.raises(CalculationError) as error:
        calc(bound(f"${{x}} * {BIG}", x="abc"))
    assert time.monotonic() - started < 0.5  # no 300 MB string was built first
    assert str(error.value) == (
        "operand `${x}` is the text 'abc', not a number or quantity; arithmetic needs numbers"
    )


def test_a_literal_text_times_a_huge_number_is_refused():
    """A string written in the expression itself never reaches `*`."""
    with pytest.raises(CalculationError, match="only numbers are allowed, not 'ab'"):
        calc(f"'ab' * {BIG}")


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ([1, 2], "a list of 2 items"),
        ((7,), "a list of 1 item"),
        ({"total": 5, "unit": "GB"}, "a mapping (fields: total, unit)"),
        (None, "empty (null)"),
        (True, "the truth value true"),
    ],
)
def test_lists_mappings_nulls_and_truth_values_are_refused_as_operands(value, shown):
    """Whatever is not a number or a quantity is refused before `*` runs, said in words."""
    with pytest.raises(CalculationError, match=f"operand `\\${{x}}` is {re.escape(shown)}"):
        calc(bound(f"${{x}} * {BIG}", x=value))


def test_a_mapping_operand_suggests_one_of_its_fields():
    """The usual slip, the whole record for one of its fields, gets the fix spelt out."""
    with pytest.raises(CalculationError, match=r"use one of its fields, e\.g\. \$\{x\.total\}"):
        calc(bound("${x} + 1", x={"total": 5}))


def test_a_long_text_operand_is_quoted_only_in_part():
    """The message shows the start of a megabyte-long text and its length, not all of it."""
    with pytest.raises(CalculationError) as error:
        calc(bound("${x} + 1", x="a" * 1_000_000))
    assert len(str(error.value)) < 200
    assert "(1,000,000 characters)" in str(error.value)


@pytest.mark.parametrize(
    "expression",
    ["${x} % 1", "-${x}", "${x} ** 2", "${x} + ${x}", "${x} > 1", "${x} == 1", "max(${x}, 1)"],
)
def test_every_operator_and_function_refuses_a_text_operand(expression):
    """`%` (text formatting), unary minus, powers, comparisons and functions refuse it too."""
    with pytest.raises(CalculationError, match="operand `\\${x}` is the text '%0999999d'"):
        calc(bound(expression, x="%0999999d"))


def test_operands_made_or_chosen_inside_the_expression_are_refused_too():
    """A truth value made mid-expression meets a checking operator; a text chosen by `or`
    is named."""
    with pytest.raises(CalculationError, match="an operand of \\* is the truth value true"):
        calc("(1 < 2) * 5")
    with pytest.raises(CalculationError, match="operand `\\${x}` is the text 'abc'"):
        calc(bound(f"(${{x}} or 2) * {BIG}", x="abc"))


def test_a_text_result_is_refused():
    """calculate answers numbers, quantities or truth values; `${x}` alone on a text is none."""
    with pytest.raises(CalculationError, match="the result is the text 'abc', not a number"):
        calc(bound("${x}", x="abc"))


def test_truth_values_still_compare_and_combine():
    """Checks compare and combine verdicts: `==`, `and`, `not` take truth values."""
    assert calc(bound("${a} == ${b}", a=True, b=True)) is True
    assert calc(bound("${a} and not ${b}", a=True, b=False)) is True


def test_bound_numbers_and_quantities_still_work():
    """The check looks at types only: numbers and quantities pass through unchanged."""
    rate = quantity(56.25, "MB/s")
    assert calc(bound("${r} * 6 h", r=rate)).to("GB").magnitude == pytest.approx(1215)
    assert calc(bound("ceil(${a} / ${b})", a=quantity(2.5, "TB"), b=quantity(962.28, "GB"))) == 3
    assert calc(bound("${n} * 2 ** 10", n=3)) == 3072


def test_check_operands_names_a_text_without_evaluating_or_needing_every_binding():
    """The static check refuses a known text even while another reference is unbound."""
    with pytest.raises(CalculationError, match="operand `\\${x}` is the text 'abc'"):
        check_operands(bound(f"${{x}} * {BIG} * ${{later}}", x="abc"))
    check_operands(bound("${x} * ${later}", x=quantity(1, "GB")))  # no problem, no result


# --- the same through a run: a failed step or an invalid plan, never an internal error -----


@tool
def label() -> str:
    """A tool whose result is a text, known only once it has run."""
    return "abc"


def test_a_text_from_a_step_times_a_huge_number_fails_the_step_with_a_small_journal(tmp_path):
    """The run ends step_failed with the message in the journal, a run.end, and no 300 MB."""
    journal = tmp_path / "run.jsonl"
    task = make_task(
        [
            {"id": "name", "tool": "label", "args": {}},
            {"id": "big", "tool": "calculate", "args": {"expression": f"${{name}} * {BIG}"}},
        ]
    )
    result = Engine(tools=[label]).run(task, journal=journal)
    assert result.status is RunStatus.STEP_FAILED
    assert journal.stat().st_size < 64_000
    events = read_journal(journal)
    failed = [event for event in events.of_kind("observation") if event.step == "big"]
    assert failed[0].error == (
        "operand `${name}` is the text 'abc', not a number or quantity; arithmetic needs numbers"
    )
    assert events.of_kind("run.end")[0].status == "step_failed"


def test_a_text_input_times_a_huge_number_is_an_invalid_plan_with_a_small_journal(tmp_path):
    """A text input known before the run stops it before anything runs, with a run.end."""
    journal = tmp_path / "run.jsonl"
    task = make_task(
        [{"id": "big", "tool": "calculate", "args": {"expression": f"${{inputs.x}} * {BIG}"}}],
        inputs={"x": "abc"},
    )
    with pytest.raises(PlanValidationError, match="operand `\\$\\{inputs.x\\}` is the text"):
        Engine().run(task, journal=journal)
    assert journal.stat().st_size < 64_000
    end = read_journal(journal).of_kind("run.end")[0]
    assert end.status == "invalid" and "step 'big': operand `${inputs.x}`" in end.reason


def test_the_command_line_run_of_a_text_input_exits_invalid_not_internal(tmp_path):
    """`stepgraph run` on such a task file exits 3 (invalid) with the message, not 1."""
    path = tmp_path / "task.yaml"
    path.write_text(
        "goal: multiply x\ninputs:\n  x: {value: abc}\nplan:\n  steps:\n"
        f"    - {{id: big, tool: calculate, args: {{expression: '${{inputs.x}} * {BIG}'}}}}\n"
    )
    journal = tmp_path / "run.jsonl"
    result = invoke("run", path, "--approve", "auto", "--journal", journal)
    assert result.exit_code == ExitCode.INVALID
    assert "operand `${inputs.x}` is the text 'abc'" in flat(result.output)
    assert journal.stat().st_size < 64_000


# --- rounding needs a plain number -------------------------------------------------


@pytest.mark.parametrize(
    "expression",
    [
        "ceil(2500 GB / 356.4 Mbps)", "floor(3 km)", "round(5.5 GB)", "round(7 h, 1)",
        "round(250 cent)", "ceil(2.5 USD / h)",  # cents, or dollars an hour, say which unit
    ],
)  # fmt: skip
def test_rounding_a_quantity_with_units_is_refused(expression):
    """ceil, floor and round of a quantity whose units remain: the count would depend on them."""
    with pytest.raises(UnitsDoNotCancelError, match="the units do not cancel"):
        calc(expression)


def test_rounding_a_quantity_refused_says_how_to_fix_it():
    """The refusal shows the value and an expression that divides by a unit of time."""
    with pytest.raises(UnitsDoNotCancelError) as refused:
        calc("ceil(2500 GB / 356.4 Mbps)")
    assert str(refused.value) == (
        "ceil() of 7.01459 GB/Mbps: the units do not cancel, so the count would depend on the "
        "unit; divide by a unit of time, or convert first, e.g. "
        "ceil((2500 GB / (356.4 Mbps)) / (1 day))"
    )
    assert (refused.value.function, refused.value.dimension) == ("ceil", "[time]")


def test_a_sum_in_dollars_rounds_to_whole_dollars():
    """GSM8K test 1016: $120 grown 5% a year for three years, "Round to the nearest integer"."""
    assert calc("round(120 USD * 1.05 ** 3)") == quantity(139, "USD")
    assert calc("ceil(2.5 USD)") == quantity(3, "USD")
    assert calc("round(2.567 USD, 2)") == quantity(2.57, "USD")


def test_rounding_a_quantity_whose_units_cancel_gives_a_plain_number():
    """ceil(2500 GB / (962.28 GB)) is 3; a count (tables) rounds in its own unit."""
    assert calc("ceil(2500 GB / (962.28 GB))") == 3
    assert calc(bound("ceil(${a} / ${b})", a=quantity(2.5, "TB"), b=quantity(962.28, "GB"))) == 3
    assert calc("floor(2500 GB / 356.4 Mbps / (1 h))") == 15
    assert calc("ceil(230 people / (8 people/table))") == quantity(29, "tables")


def test_whole_days_to_copy_a_petabyte_over_forty_gigabits_is_refused_with_the_hint():
    """A real 1.5B model's ceil(${data} / ${link}) answered '1 PB/bps days': now refused."""
    expression = bound(
        "ceil(${data} / ${link})", data=quantity(1.5, "PB"), link=quantity(40, "Gbit/s")
    )
    with pytest.raises(UnitsDoNotCancelError) as refused:
        calc(expression)
    assert "e.g. ceil((${data} / ${link}) / (1 day))" in str(refused.value)
    assert calc(bound("ceil(${data} / ${link} / (1 day))", **expression_values(expression))) == 4


def expression_values(expression):
    return {ref[2:-1]: value for ref, value in expression.bindings.items()}


def test_rounding_with_units_is_refused_by_validate_before_the_run():
    """The static check sees the units of the inputs: validate names the step and the fix."""
    task = make_task(
        [
            {
                "id": "days",
                "tool": "calculate",
                "args": {"expression": "ceil(${inputs.data} / ${inputs.link})"},
            }
        ],
        inputs={"data": "1.5 PB", "link": "40 Gbit/s"},
    )
    with pytest.raises(PlanValidationError) as refused:
        Engine().validate(task)
    assert "step 'days': ceil() of 300,000 s: the units do not cancel" in str(refused.value)
    assert "ceil((${inputs.data} / ${inputs.link}) / (1 day))" in str(refused.value)


def test_rounding_with_units_through_upstream_steps_is_refused_by_validate():
    """Units traced through the graph: ceil(${total} / ${rate}) of a size over a rate."""
    task = make_task(
        [
            {"id": "total", "tool": "unit_convert", "args": {"value": "2.5 TB", "to_unit": "GB"}},
            {
                "id": "rate",
                "tool": "unit_convert",
                "args": {"value": "450 Mbps", "to_unit": "MB/s"},
            },
            {"id": "n", "tool": "calculate", "args": {"expression": "ceil(${total} / ${rate})"}},
        ]
    )
    with pytest.raises(
        PlanValidationError, match=r"step 'n': ceil\(\) of .*divide by a unit of time"
    ):
        Engine().validate(task)


def test_the_suggestion_divides_by_the_steps_expected_unit():
    """A step that expects hours is told to divide by h, and to keep its expect_unit."""
    task = make_task(
        [
            {
                "id": "hours",
                "tool": "calculate",
                "args": {"expression": "ceil(2500 GB / 356.4 Mbps)"},
                "expect_unit": "h",
            }
        ]
    )
    with pytest.raises(PlanValidationError) as refused:
        Engine().validate(task)
    assert "e.g. ceil((2500 GB / (356.4 Mbps)) / (1 h)) * 1 h" in str(refused.value)


def test_a_rounded_quantity_fails_its_step_at_run_time_with_the_hint(tmp_path):
    """Where the units are unknown before the run, the step fails with the same message."""

    @tool
    def link() -> object:
        """A link speed known only at run time."""
        return quantity(356.4, "Mbps")

    task = make_task(
        [
            {"id": "rate", "tool": "link", "args": {}},
            {"id": "n", "tool": "calculate", "args": {"expression": "ceil(2500 GB / ${rate})"}},
        ],
        answer="${n} nights",
    )
    result = Engine(tools=[link]).run(task, journal=tmp_path / "run.jsonl")
    assert result.status is not RunStatus.VERIFIED
    assert "ceil() of 7.01459 GB/Mbps: the units do not cancel" in result.answer
    assert "ceil((2500 GB / ${rate}) / (1 day))" in result.answer


def test_the_reverse_check_refuses_a_rounded_quantity_with_units():
    """An old journal's ceil result in GB/Mbps does not pass its reverse check."""
    from stepgraph.tools import reverse_calculate

    expression = bound("ceil(${a} / ${b})", a=quantity(2500, "GB"), b=quantity(356.4, "Mbps"))
    verdict = reverse_calculate("n", expression, quantity(8, "GB/Mbps"))
    assert verdict is not None and not verdict.passed
    assert "the units do not cancel" in verdict.description


def test_rounding_money_is_whole_dollars_or_a_refusal_with_a_fix_not_a_registry_error():
    """A real GSM8K plan wrote ceil(900 USD + 1800 USD): "'[currency_usd]' is not defined"."""
    from stepgraph.exceptions import UnitsDoNotCancelError
    from stepgraph.tools.expression import evaluate
    from stepgraph.units import parse_unit, quantity

    assert evaluate("ceil(${a})", {"${a}": quantity(2700.5, parse_unit("USD"))}) == quantity(
        2701, parse_unit("USD")
    )
    with pytest.raises(UnitsDoNotCancelError, match="the units do not cancel"):
        evaluate("ceil(${a})", {"${a}": quantity(27, parse_unit("USD/h"))})

import pytest

from stepgraph import RunStatus, VerdictKind, tool
from stepgraph.tools import reverse_calculate, reverse_convert
from stepgraph.units import quantity
from tests.conftest import make_task

NIGHTS = "ceil((2500.0 * GB) / (962.28 * GB))"


def test_a_rounded_up_count_is_checked_to_cover_the_total():
    verdict = reverse_calculate("nights", NIGHTS, 3)
    assert verdict.passed
    assert verdict.values == {"result": "3", "numerator": "2,500 GB", "denominator": "962.28 GB"}


@pytest.mark.parametrize("wrong", [2, 4])
def test_a_wrong_rounded_count_fails(wrong):
    """2 nights do not cover the data; 4 are one more than needed."""
    assert not reverse_calculate("nights", NIGHTS, wrong).passed


def test_a_floor_is_checked_from_both_sides():
    assert reverse_calculate("n", "floor(10 / 3)", 3).passed
    assert not reverse_calculate("n", "floor(10 / 3)", 2).passed


def test_a_division_is_multiplied_back():
    assert reverse_calculate("q", "(10 GB) / (4 s)", quantity(2.5, "GB/s")).passed
    assert not reverse_calculate("q", "(10 GB) / (4 s)", quantity(2.6, "GB/s")).passed


def test_a_multiplication_is_divided_back_across_units():
    assert reverse_calculate("v", "(56.25 MB/s) * (6 h)", quantity(1215, "GB")).passed
    verdict = reverse_calculate("v", "(56.25 MB/s) * (6 h)", quantity(1215, "Gb"))
    assert not verdict.passed  # bits for bytes: off by eight


def test_an_expression_without_an_inverse_gets_no_verdict():
    assert reverse_calculate("m", "min(1, 2)", 1) is None


def test_a_conversion_is_converted_back():
    assert reverse_convert("r", {"value": 450, "from_unit": "Mbps"}, quantity(56.25, "MB/s")).passed
    assert not reverse_convert("r", {"value": "450 Mbps"}, quantity(450, "MB/s")).passed


def test_a_failing_declared_check_leaves_the_run_unverified(run_task):
    task = make_task(
        [{"id": "n", "tool": "calculate", "args": {"expression": "2 + 2"}}],
        checks=[{"expression": "${n} == 5", "why": "arithmetic is broken"}],
    )
    result, journal = run_task(task)
    assert result.status is RunStatus.UNVERIFIED
    [check] = [v for v in result.verdicts if v.kind is VerdictKind.CHECK]
    assert not check.passed and check.values == {"${n}": "4"}
    assert [e.passed for e in journal.of_kind("check") if e.kind == "check"] == [False]


def test_a_check_that_is_not_a_comparison_fails_clearly(run_task):
    task = make_task(
        [{"id": "n", "tool": "calculate", "args": {"expression": "2 + 2"}}],
        checks=[{"expression": "${n} * 2"}],
    )
    result, _ = run_task(task)
    [check] = [v for v in result.verdicts if v.kind is VerdictKind.CHECK]
    assert "evaluates to 8, not true or false" in check.description


def test_a_custom_tool_with_a_wrong_unit_fails_the_unit_verdict_at_run_time(run_task):
    @tool
    def measure() -> object:
        """Return a size."""
        return quantity(3, "GB")

    task = make_task([{"id": "m", "tool": "measure", "expect_unit": "TB"}])
    result, _ = run_task(task, tools=[measure])
    [unit] = [v for v in result.verdicts if v.kind is VerdictKind.UNIT]
    assert unit.passed and result.unverified_values["m"].magnitude == pytest.approx(0.003)
    # The unit check looked at the dimension, not the number: nothing vouches for 3 GB.
    assert result.status is RunStatus.UNCHECKED and result.step_states["m"] == "unchecked"


def test_a_unit_check_alone_never_makes_a_value_verified(run_task):
    # A real model's plan: max() where the goal asks for a sum. Each step has its expected
    # unit, and only the unit verdict looks at the answer's step: that is no check of 120.
    steps = [
        {"id": "bio", "tool": "calculate", "args": {"expression": "20 min"}, "expect_unit": "min"},
        {
            "id": "total",
            "tool": "calculate",
            "args": {"expression": "max(${bio}, 120 min)"},
            "expect_unit": "min",
        },
    ]
    result, _ = run_task(make_task(steps, answer="${total}"))
    assert all(v.passed for v in result.verdicts)
    assert result.status is RunStatus.UNCHECKED, result.verdicts
    assert result.step_states["total"] == "unchecked"


def test_raise_for_status_turns_outcomes_into_errors(run_task):
    """Scripts can stop on anything but a verified answer, with the reason in the error."""
    from stepgraph import StepExecutionError, VerificationError

    ok, _ = run_task(make_task([{"id": "n", "tool": "calculate", "args": {"expression": "2 + 2"}}]))
    assert ok.raise_for_status() is ok
    wrong, _ = run_task(
        make_task(
            [{"id": "n", "tool": "calculate", "args": {"expression": "2 + 2"}}],
            checks=[{"expression": "${n} == 5"}],
        )
    )
    with pytest.raises(VerificationError, match=r"\$\{n\} == 5"):
        wrong.raise_for_status()
    broken, _ = run_task(
        make_task([{"id": "z", "tool": "calculate", "args": {"expression": "1 / (1 - 1)"}}])
    )
    with pytest.raises(StepExecutionError, match="step 'z': ZeroDivisionError") as error:
        broken.raise_for_status()
    assert error.value.step == "z" and error.value.run_id == broken.run_id


def test_a_custom_tool_states_how_its_result_is_checked_backwards(run_task):
    """@tool(reverse=...) gives any tool a reverse check; a wrong result fails the run."""
    from stepgraph import RunStatus, tool
    from stepgraph.model import Verdict, VerdictKind
    from tests.conftest import make_task

    def square_back(step, args, result):
        back = result**0.5
        return Verdict(
            kind=VerdictKind.REVERSE,
            step=step,
            passed=abs(back - args["x"]) < 1e-9,
            description=f"sqrt({result}) = {back}, expected {args['x']}",
        )

    @tool(reverse=square_back)
    def square(x: float) -> float:
        """Square a number (correctly)."""
        return x * x

    @tool(name="square", reverse=square_back)
    def bad_square(x: float) -> float:
        """Square a number (wrongly)."""
        return x * x + 1

    task = make_task([{"id": "s", "tool": "square", "args": {"x": 3}}], answer="${s}")
    good, _ = run_task(task, tools=[square])
    assert good.status is RunStatus.VERIFIED
    descriptions = [v.description for v in good.verdicts if v.step == "s"]
    assert descriptions == ["sqrt(9.0) = 3.0, expected 3"]
    bad, _ = run_task(task, tools=[bad_square])
    assert bad.status is RunStatus.UNVERIFIED


def test_the_answer_trace_checks_the_unit_and_the_named_step():
    """'144 h [days]' fails when the step days holds 6; units are compared after conversion."""
    from stepgraph.units import quantity
    from stepgraph.verifiers import trace_answer

    sources = {"days": 6, "per_night": quantity(962.28, "GB"), "total": quantity(2.5, "TB")}
    assert not trace_answer("144 h [days]", sources).passed
    assert not trace_answer("6 [per_night]", sources).passed
    assert not trace_answer("962.28 h", sources).passed  # the number exists, in another unit
    assert trace_answer("6 days [days], 0.96228 TB per night [per_night]", sources).passed
    assert trace_answer("2,500 GB in all; 962.28 GB a night", sources).passed


def test_an_answer_template_naming_a_unit_its_value_lacks_is_not_verified(run_task):
    """A real model wrote '${backup_size} days' for a size in GB: never verified."""
    from stepgraph import RunStatus
    from tests.conftest import make_task

    task = make_task(
        [
            {
                "id": "backup_size",
                "tool": "unit_convert",
                "args": {"value": "1.2 TB", "to_unit": "GB"},
            }
        ],
        answer="${backup_size} days (${backup_size} GB per day)",
    )
    result, _ = run_task(task)
    assert result.status is RunStatus.UNVERIFIED
    assert result.answer.startswith("no answer: the answer template's words do not fit")
    assert "'${backup_size} days' but backup_size is 1,200 GB: days is [time]" in result.answer


def test_units_after_references_that_fit_their_values_pass(run_task):
    from stepgraph import RunStatus
    from tests.conftest import make_task

    task = make_task(
        [
            {"id": "size", "tool": "unit_convert", "args": {"value": "1.2 TB", "to_unit": "GB"}},
            {"id": "n", "tool": "calculate", "args": {"expression": "ceil(${size} / 500 GB)"}},
        ],
        answer="${size} GB in all, ${n} days",
    )
    result, _ = run_task(task)
    assert result.status is RunStatus.VERIFIED
    assert result.answer == "1,200 GB in all, 3 days"  # the unit is said once


@pytest.mark.parametrize(
    ("template", "answer"),
    [
        ("${rate} MB/s.", "56.25 MB/s."),  # the full stop stays
        ("${rate} MB/s per link, ${rate} MB/s", "56.25 MB/s per link, 56.25 MB/s"),
        ("${rate} is the rate", "56.25 MB/s is the rate"),  # no unit after: nothing to drop
    ],
)
def test_a_unit_written_after_a_quantity_in_that_unit_is_said_once(run_task, template, answer):
    from stepgraph import RunStatus
    from tests.conftest import make_task

    convert = {"value": "450 Mbps", "to_unit": "MB/s"}
    task = make_task([{"id": "rate", "tool": "unit_convert", "args": convert}], answer=template)
    result, _ = run_task(task)
    assert result.status is RunStatus.VERIFIED
    assert result.answer == answer


def test_a_check_over_a_failed_step_is_not_run_rather_than_failed(run_task):
    """`4/6 verdicts passed` beside a ZeroDivisionError counted the check twice: it did not run."""
    task = make_task(
        [
            {"id": "a", "tool": "calculate", "args": {"expression": "6 * 7"}},
            {"id": "b", "tool": "calculate", "args": {"expression": "1 / 0"}},
        ],
        checks=[
            {"expression": "${a} == 42", "why": "a is 42"},
            {"expression": "${b} > 0", "why": "b is positive"},
        ],
    )
    result, _ = run_task(task)
    assert result.status is RunStatus.STEP_FAILED and "b" in result.failed
    checks = [v for v in result.verdicts if v.kind == VerdictKind.CHECK]
    assert [(v.description, v.passed) for v in checks] == [("${a} == 42: 42 == 42 (a is 42)", True)]


def test_a_tautological_check_does_not_make_an_unchecked_value_verified(run_task):
    """`${a} == ${a}` compares a value with itself: nothing was checked."""

    @tool
    def lookup() -> float:
        """A value from somewhere nothing can recompute."""
        return 7.0

    task = make_task(
        [{"id": "a", "tool": "lookup"}],
        checks=[{"expression": "${a} == ${a}", "why": "a is a"}],
        answer="${a}",
    )
    result, _ = run_task(task, [lookup])
    assert result.status is RunStatus.UNCHECKED


@tool
def lookup() -> float:
    """A value from somewhere nothing can recompute."""
    return 7.0


@pytest.mark.parametrize(
    "expression", ["${a} - ${a} == 0", "${a} * 0 == 0", "${a} / ${a} == 1", "abs(${a}) >= 0"]
)
def test_a_check_true_whatever_the_value_is_is_a_note_not_a_check(run_task, expression):
    """Its truth does not depend on `a`: it is said to check nothing, and `a` stays unchecked."""
    task = make_task(
        [{"id": "a", "tool": "lookup"}], checks=[{"expression": expression}], answer="${a}"
    )
    result, journal = run_task(task, [lookup])
    assert result.status is RunStatus.UNCHECKED
    assert result.step_states == {"a": "unchecked"}
    [check] = [v for v in result.verdicts if v.kind is VerdictKind.CHECK]
    assert check.description.startswith(f"not a check: {expression} holds whatever the values")
    # `show`, `graph` and the web page read the states from the journal: the same there.
    [event] = [e for e in journal.of_kind("check") if e.kind == "check"]
    assert event.values == {}


@pytest.mark.parametrize("expression", ["${a} == 7", "${a} > 0", "${a} < 1000", "${a} != 8"])
def test_a_check_whose_outcome_depends_on_the_value_verifies_it(run_task, expression):
    """A sign or a loose bound is a weak check, but a check: it would fail for other values."""
    task = make_task(
        [{"id": "a", "tool": "lookup"}], checks=[{"expression": expression}], answer="${a}"
    )
    result, _ = run_task(task, [lookup])
    assert result.status is RunStatus.VERIFIED
    assert result.step_states == {"a": "verified"}


def test_a_zero_value_is_checked_by_a_comparison_with_zero(run_task):
    task = make_task(
        [{"id": "r", "tool": "calculate", "args": {"expression": "max(0, 0)"}}],
        checks=[{"expression": "${r} == 0", "why": "nothing is left over"}],
        answer="${r}",
    )
    result, _ = run_task(task)
    assert result.status is RunStatus.VERIFIED


def test_a_check_verifies_only_the_values_its_outcome_depends_on(run_task):
    """`${a} * 0 + ${b} > 0` says nothing about a: b is verified, a stays unchecked."""
    task = make_task(
        [{"id": "a", "tool": "lookup"}, {"id": "b", "tool": "lookup"}],
        checks=[{"expression": "${a} * 0 + ${b} > 0"}],
        answer="${a} and ${b}",
    )
    result, _ = run_task(task, [lookup])
    assert result.step_states == {"a": "unchecked", "b": "verified"}
    [check] = [v for v in result.verdicts if v.kind is VerdictKind.CHECK]
    assert check.values == {"${b}": "7"}
    assert check.description.endswith("its outcome does not depend on ${a}")


def test_a_check_false_whatever_the_values_are_fails_the_run(run_task):
    task = make_task(
        [{"id": "a", "tool": "lookup"}], checks=[{"expression": "${a} != ${a}"}], answer="${a}"
    )
    result, _ = run_task(task, [lookup])
    assert result.status is RunStatus.UNVERIFIED
    [check] = [v for v in result.verdicts if v.kind is VerdictKind.CHECK]
    assert check.description.startswith("not a check: ${a} != ${a} fails whatever the values")


def test_the_answer_is_its_template_headline_not_a_checked_part_beside_it(run_task):
    steps = [
        {"id": "hist", "tool": "calculate", "args": {"expression": "2 * 20 min"}},
        {"id": "total", "tool": "calculate", "args": {"expression": "max(${hist}, 120 min)"}},
    ]
    # hist is reverse-checked (40 min / 20 min = 2); the headline total is not.
    result, _ = run_task(make_task(steps, answer="${total} (history ${hist})"))
    assert result.step_states == {"hist": "verified", "total": "unchecked"}
    assert result.status is RunStatus.UNCHECKED

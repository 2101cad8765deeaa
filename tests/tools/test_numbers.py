"""Numbers are never misread: every value reaches `calculate` as the value itself."""

from fractions import Fraction

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from stepgraph import CalculationError, Engine, PlanValidationError, RunStatus, UnitError, tool
from stepgraph.tools import calculate
from stepgraph.tools.expression import evaluate
from stepgraph.units import quantity
from tests.conftest import make_task


def calc(expression):
    return calculate.func(expression)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("2.5 * 1e-9", 2.5e-9),
        ("2E3", 2000),
        ("1e+16 / 2", 5e15),
        ("0.00001 * 2", 2e-5),
        ("1_000 + 1", 1001),
        ("2**70", 2**70),
    ],
)
def test_numbers_in_scientific_notation_are_numbers(expression, expected):
    """The 'e' of '1e-9' is part of the number, not the elementary charge."""
    assert calc(expression) == expected


def test_a_unit_spelt_like_a_function_is_a_unit_unless_called():
    """'30 min' is thirty minutes; 'min(1, 2)' is the function."""
    assert calc("30 min + 1 h") == quantity(90, "min")
    assert calc("min(1, 2)") == 1
    assert calc("2.5TB / (500 GB)") == pytest.approx(5)


def test_ceil_of_a_quotient_whose_units_cancel_rounds_the_reduced_value():
    """5 GB at 2 MB/s in seconds is 2500 exactly: ceil must not round 2.5 GB*s/MB up to 3000."""
    assert calc("ceil(5 GB / (2 MB/s) / (1 s))") == 2500
    assert calc("ceil(5 GB / (3 MB/s) / (1 s))") == 1667


def test_equality_uses_the_relative_tolerance_of_reverse_checks():
    assert calc("0.1 + 0.2 == 0.3") is True
    assert calc("1 == 1.01") is False
    assert calc("2500 GB == 2.5 TB") is True
    assert calc("2**70 == 2**70 + 1") is False  # integers compare exactly


def test_an_overflow_is_an_error_not_infinity():
    with pytest.raises(CalculationError, match="not a finite number"):
        calc("1e300 * 1e300")


UNITS = ["", "min", "h", "s", "ms", "eV", "EB", "PB", "Mbit/s", "GiB", "kWh", "degree", "%"]
FLOATS = st.one_of(
    st.floats(min_value=1e-300, max_value=1e300),
    st.floats(min_value=-1e300, max_value=-1e-300),
    st.floats(min_value=5e-324, max_value=2.2e-308),  # subnormal
)
INTEGERS = st.integers(min_value=-(2**4090), max_value=2**4090)


def _expected(magnitude, unit, factor):
    """The value computed in plain Python, as an exact fraction in the unit's base."""
    if not unit:
        return magnitude * factor
    return quantity(magnitude * factor, unit)


def _same(result, expected):
    if hasattr(expected, "units") and expected.units.dimensionless:
        expected = expected.to("dimensionless").magnitude  # %, degree: plain numbers
    if hasattr(expected, "units"):
        if not hasattr(result, "units") or not result.is_compatible_with(expected):
            return False
        if expected.units != result.units:
            expected = expected.to(result.units)
        result, expected = result.magnitude, expected.magnitude
    if isinstance(result, int) and isinstance(expected, int):
        return result == expected
    difference = abs(Fraction(result) - Fraction(expected))
    return difference <= Fraction(1, 10**12) * max(abs(Fraction(expected)), abs(Fraction(result)))


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    value=st.one_of(
        st.tuples(FLOATS, st.sampled_from(UNITS)),
        # A huge count of % or degrees becomes a plain float, which may overflow: not here.
        st.tuples(INTEGERS, st.sampled_from([u for u in UNITS if u not in ("degree", "%")])),
    )
)
@example(value=(2.2250738585e-313, "%"))  # subnormal once in a fraction: few digits left
def test_any_value_passes_through_a_reference_unchanged(tmp_path_factory, value):
    """A step's value, whatever its size or unit, reaches calculate as itself, via the engine."""
    magnitude, unit = value
    produced = quantity(magnitude, unit) if unit else magnitude

    @tool
    def source() -> object:
        """Return the value under test."""
        return produced

    task = make_task(
        [
            {"id": "v", "tool": "source"},
            {"id": "same", "tool": "calculate", "args": {"expression": "${v}"}},
            {"id": "triple", "tool": "calculate", "args": {"expression": "${v} * 3"}},
            {"id": "sum", "tool": "calculate", "args": {"expression": "${v} + ${v}"}},
        ]
    )
    journal = tmp_path_factory.mktemp("run") / "run.jsonl"
    result = Engine(tools=[source]).run(task, journal=journal)
    assert result.status is RunStatus.VERIFIED, result.verdicts
    assert _same(result.values["same"], _expected(magnitude, unit, 1))
    assert _same(result.values["triple"], _expected(magnitude, unit, 3))
    assert _same(result.values["sum"], _expected(magnitude, unit, 2))


def test_inputs_in_scientific_notation_and_minutes_run(run_task):
    """20 PB in bytes (>= 1e16), an input of 0.00001 and a value in minutes: a correct plan runs."""
    task = make_task(
        [
            {
                "id": "bytes",
                "tool": "unit_convert",
                "args": {"value": "${inputs.data}", "to_unit": "B"},
            },
            {
                "id": "kept",
                "tool": "calculate",
                "args": {"expression": "${bytes} * ${inputs.share}"},
                "expect_unit": "GB",
            },
            {"id": "mins", "tool": "unit_convert", "args": {"value": "2 h", "to_unit": "min"}},
            {"id": "double", "tool": "calculate", "args": {"expression": "${mins} * 2"}},
        ],
        inputs={"data": "20 PB", "share": 0.00001},
    )
    result, _ = run_task(task)
    assert result.status is RunStatus.VERIFIED, result.verdicts
    assert result.values["kept"].to("GB").magnitude == pytest.approx(200)
    assert result.values["double"] == quantity(240, "min")


def test_a_conversion_of_a_rate_to_a_size_is_refused_before_the_run():
    """unit_convert('450 Mbps', to GB) can never work: validate says so, naming both dimensions."""
    task = make_task(
        [{"id": "size", "tool": "unit_convert", "args": {"value": "450 Mbps", "to_unit": "GB"}}]
    )
    with pytest.raises(PlanValidationError, match=r"step 'size'.*\[information\] / \[time\]"):
        Engine().validate(task)


def test_a_rounded_time_in_seconds_verifies_with_its_reverse_check(run_task):
    """ceil(5 GB / (2 MB/s) / (1 s)) is 2500 and its reverse check passes (no 2501 from noise)."""
    task = make_task(
        [{"id": "t", "tool": "calculate", "args": {"expression": "ceil(5 GB / (2 MB/s) / (1 s))"}}],
        checks=[{"expression": "${t} == 2500", "why": "exact"}],
    )
    result, _ = run_task(task)
    assert result.status is RunStatus.VERIFIED, result.verdicts
    reverse = [v for v in result.verdicts if v.kind == "reverse"]
    assert reverse and all(v.passed for v in reverse)


def test_a_check_with_equality_holds_for_float_noise(run_task):
    task = make_task(
        [{"id": "c", "tool": "calculate", "args": {"expression": "0.1 + 0.2"}}],
        checks=[{"expression": "${c} == 0.3"}],
    )
    result, _ = run_task(task)
    assert result.status is RunStatus.VERIFIED, result.verdicts


def test_calculating_two_to_the_seventy_runs_and_is_journaled_exactly(run_task):
    """A 71-bit integer is an ordinary value: the run ends verified with run.end written."""
    task = make_task(
        [{"id": "big", "tool": "calculate", "args": {"expression": "2**70"}}], answer="${big}"
    )
    result, journal = run_task(task)
    assert result.status is RunStatus.UNCHECKED  # a constant: nothing to check it against
    assert result.unverified_values["big"] == 2**70
    assert journal.events[-1].event == "run.end"


def test_an_answer_naming_no_step_is_refused_by_validate(tmp_path):
    """`${zzz}` in the answer template is caught before the run, like any dangling reference."""
    task = make_task(
        [{"id": "n", "tool": "calculate", "args": {"expression": "1 + 1"}}], answer="${zzz} nights"
    )
    with pytest.raises(PlanValidationError, match=r"answer template: \$\{zzz\} refers to no step"):
        Engine().validate(task)


def test_the_cli_validates_the_unit_of_a_literal_value(tmp_path):
    from tests.conftest import invoke

    path = tmp_path / "rate.yaml"
    path.write_text(
        "goal: g\nplan:\n  steps:\n"
        "    - {id: size, tool: unit_convert, args: {value: 450 Mbps, to_unit: GB}}\n"
    )
    result = invoke("validate", path)
    assert result.exit_code == 3
    assert "cannot convert 450 Mbps" in result.output


@pytest.mark.parametrize(
    ("expression", "expected"),
    [("90 %", 0.9), ("50%", 0.5), ("(1 - 12 %) * 100", 88.0), ("10 % 3", 1), ("7 % (2)", 1)],
)
def test_a_percent_sign_after_a_number_is_a_percentage_unless_an_operand_follows(
    expression, expected
):
    assert calc(expression) == pytest.approx(expected)


def test_an_empty_expect_unit_means_none(run_task):
    """Models write expect_unit: "" for values without a unit; it must not break the run."""
    task = make_task(
        [{"id": "n", "tool": "calculate", "args": {"expression": "2 + 3"}, "expect_unit": ""}],
        answer="${n}",
    )
    result, _ = run_task(task)
    assert result.status is RunStatus.VERIFIED and result.values["n"] == 5


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("1200 GB / 500 GB", 2.4),  # not (1200 GB / 500) * GB
        ("ceil(1200 GB / 500 GB)", 3),
        ("1 GB / 8 Mbit/s", quantity(1000, "s")),  # divided by the rate, not by 8 Mbit, per s
        ("2 m ** 2 * 3", quantity(6, "m ** 2")),
    ],
)
def test_a_number_and_its_unit_bind_tighter_than_the_operators_around_them(expression, expected):
    """A small model writes 'x / 500 GB' for 'x / (500 GB)'; that is what it means."""
    result = calc(expression)
    if isinstance(expected, int | float):
        assert result == pytest.approx(expected)
    else:
        assert result.to(expected.units).magnitude == pytest.approx(expected.magnitude)


def test_a_unit_after_a_bracket_multiplies_it():
    """A real model wrote '(6 - 0) h' for the length of a night."""
    assert calc("(6 - 0) h") == quantity(6, "h")


def test_a_percentage_in_a_product_leaves_no_percent_unit_behind():
    """A real model wrote '450 Mbps * 90%': 405 Mbps, not 40,500 Mbps·%."""
    assert calc("450 Mbps * 90%") == quantity(405, "Mbps")


def test_a_step_id_written_without_its_braces_gets_the_fix():
    """A real model wrote 'items_per_worker * 3' for '${items_per_worker} * 3'."""
    with pytest.raises(CalculationError, match=r"write \$\{items_per_worker\}"):
        calc("items_per_worker * 3")


@pytest.mark.parametrize(
    "text", ["${a} > 0 and ${b} > 0", "${a} > 0 or ${b} < 0", "not ${a} < 0 and 1 > 0"]
)
def test_a_keyword_after_a_number_is_no_unit(text):
    # "0 and" once read as the quantity zero "and" and the check was invalid syntax.
    assert evaluate(text, {"${a}": 1, "${b}": 2}) is True


@pytest.mark.parametrize("text", ["inf GB", "nan nights", "1e999 TB"])
def test_a_quantity_that_is_inf_or_nan_is_refused_where_it_is_read(text):
    """A plan's own "inf GB" reaches unit_convert as text; converted, it was 'inf TB'."""
    from stepgraph.units import parse_quantity

    with pytest.raises(UnitError, match="not a finite number"):
        parse_quantity(text)

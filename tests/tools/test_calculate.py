import pytest
from hypothesis import given
from hypothesis import strategies as st

from stepgraph import CalculationError
from stepgraph.tools import calculate
from stepgraph.units import quantity


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

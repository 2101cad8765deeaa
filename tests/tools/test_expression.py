"""A units error in an expression says which two terms are of two kinds, as written."""

import pytest

from stepgraph.exceptions import CalculationError
from stepgraph.task import parse_input
from stepgraph.tools.expression import evaluate


@pytest.mark.parametrize(
    ("expression", "bindings", "named"),
    [
        # a new user's shift (2026-12-06): clock minutes by hand, the break read as 30 min
        (
            "(${end} - ${start} - ${lunch}) / 60",
            {"${end}": 1065, "${start}": 555, "${lunch}": "30 min"},
            "`${end} - ${start}` is a plain number and `${lunch}` is in min ([time])",
        ),
        (
            "${hours} >= 2 TiB",
            {"${hours}": "1 h"},
            "`${hours}` is in h ([time]) and `2 TiB` is in TiB ([information])",
        ),
        (
            "${a} + 2 * ${b}",
            {"${a}": "2 h", "${b}": 5},
            "`${a}` is in h ([time]) and `2 * ${b}` is a plain number",
        ),
        # hours and minutes add: the terms at fault are the sum and the plain number
        (
            "(${a} + ${m}) * 2 + ${b}",
            {"${a}": "2 h", "${m}": "30 min", "${b}": 5},
            "`(${a} + ${m}) * 2` is in h ([time]) and `${b}` is a plain number",
        ),
        (
            "(${a} + ${m}) * (${b} + ${c})",
            {"${a}": "2 h", "${m}": "30 min", "${b}": 5, "${c}": "1 h"},
            "`${b}` is a plain number and `${c}` is in h ([time])",
        ),
    ],
)
def test_a_units_mismatch_names_the_two_terms_as_written(expression, bindings, named):
    values = {k: parse_input(v) if isinstance(v, str) else v for k, v in bindings.items()}
    with pytest.raises(CalculationError) as caught:
        evaluate(expression, values)
    assert str(caught.value).startswith("units do not match: ")
    assert named in str(caught.value)

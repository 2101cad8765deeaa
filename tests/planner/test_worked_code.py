"""A worked answer's Python read with `ast` and worked out by the expression language."""

import pytest

from stepgraph.planner._worked import computed, final_number, slipped_final


def _block(code: str) -> str:
    return f"Here is the code.\n```python\n{code}\n```\n```output\n0\n```\nANSWER: 0"


@pytest.mark.parametrize(
    ("code", "final"),
    [
        ("x = 7\ny = x * 3\nprint(y)", 21),
        ("x = 7\ny = x * 3", 21),  # no print: the last value assigned
        ("import math\nx = 7\nprint(math.ceil(x / 2))", 4),
        ("x = 7\nprint('Total:', x // 2)", 3),
        ('x = 7\nprint(f"Total: {x % 4} left")', 3),
        ("x = 7.5\nprint(int(x) + round(x))", 15),
        ("x = 2 ** 3\nprint(max(x, 10) - min(x, 1))", 9),
        # GSM8K test 191: the prompt's ANSWER line written inside the program; the output
        # the model imagined under it (2.45) is not what the program gives
        ("week = 3.5\nducks = 10\nday = week * ducks / 7\nANSWER: day\nx = 1", 5),
    ],
)
def test_straight_line_arithmetic_is_worked_out(code, final):
    result = computed(_block(code))
    assert result is not None and result.final == final


def test_the_last_block_counts_and_every_value_on_the_way_is_kept():
    text = _block("a = 1\nprint(a)") + "\nAgain:\n" + _block("b = 2\nc = b * 5\nprint(c + 1)")
    result = computed(text)
    assert result is not None and (result.final, result.values) == (11, [2, 10, 11])


@pytest.mark.parametrize(
    "code",
    [
        "x = 7\nfor i in range(3):\n    x = x + 1\nprint(x)",  # a loop
        "x = 7\nif x > 3:\n    x = 1\nprint(x)",  # a condition
        "def f():\n    return 2\nprint(f())",  # a function of its own
        "x = y + 1\nprint(x)",  # a name never assigned
        "x = 'ab' * 3\nprint(x)",  # text
        "x = [1, 2]\nprint(x[0])",  # a list
        "print(__import__('os').getcwd())",  # never run: refused as a call it does not know
        "x = 7\nx.real",  # an attribute
        "x = 7\nprint(x, x + 1)",  # two values shown
        "x = 9 ** 9 ** 9\nprint(x)",  # beyond the expression language's limits
        "x = = 2",  # not Python
        "import sympy as sp\nx = sp.Rational(1, 2)\nprint(x)",  # an import's name used
        "from os import getcwd\nx = getcwd()\nprint(x)",
    ],
)
def test_anything_but_arithmetic_leaves_the_answer_to_its_words(code):
    assert computed(_block(code)) is None


def test_an_answer_without_code_has_nothing_to_work_out():
    assert computed("3 * 7 = 21\nANSWER: 21") is None


def test_an_import_never_used_leaves_the_arithmetic_to_be_worked_out():
    """Train 152: `import sympy as sp`, unused; the model imagined 42 for its 80 - 36."""
    code = "import sympy as sp\ncost = 80\noff = cost * 0.45\nprint(cost - off)"
    program = computed(_block(code) + "\n```output\n42.0\n```")
    assert program is not None and program.final == pytest.approx(44)


@pytest.mark.parametrize(
    "code",
    [
        "x = 1" + "0" * 400,  # no float holds it: OverflowError escaped the reader
        "x = " + " + ".join(["1"] * 5000),  # Python's parser gives up: RecursionError
    ],
)
def test_a_program_no_float_or_parser_can_hold_is_left_to_its_words(code):
    assert computed(f"```python\n{code}\nprint(x)\n```\nANSWER: 5") is None


@pytest.mark.parametrize(
    ("text", "slip"),
    [
        (
            "\\[ 180 + 300 + 400 = 980 \\text{ dollars} \\]\nANSWER: 980",
            (880, "180 + 300 + 400 = 980"),
        ),
        ("\\( 4 \\times 45 = 170 \\)\nANSWER: 170", (180, "4 \\times 45 = 170")),
        ("So $1,000 + $2,500 = $3,600, in all.\nANSWER: 3600", (3500, "$1,000 + $2,500 = $3,600")),
        ("4 x 45 = 180, and 180 + 300 = 480.\nANSWER: 480", None),  # every sum right
        ("12 / 4 = 3 boxes; 7 - 2 = 6 cats.\nANSWER: 3", None),  # the slip gives no final
        ("(3 + 4) x 5 = 35.\nANSWER: 35", None),  # brackets: not worked out
        ("10 / 0 = 5.\nANSWER: 5", None),
        # pieces of a longer sum: test 1185's words said 6 and were read as a slip worth 42
        ("\\(6 + 6 \\times 6 = 6 + 36 = 42\\) slices.\n70 / 12 is 6 pies.\nANSWER: 6", None),
        ("(2 + 4) x 6 + 1 = 37 seats.\nANSWER: 37", None),
        ("\\( (2 + 4) \\times 6 + 1 = 37 \\)\nANSWER: 37", None),
        ("so 3 + 4 = 8, then 8 x 2 = 16.\nANSWER: 8", (7, "3 + 4 = 8")),
        ("- 180 + 300 + 400 = 980 dollars\nANSWER: 980", (880, "180 + 300 + 400 = 980")),
        ("\\(\\frac{70}{10} + 6 + 1 = 15\\)\nANSWER: 15", None),
        # the last link of a chain (train 3900: the link before it hid it), never a number's tail
        (
            "\\[ 19 \\times 105 \\times 5 = 19 \\times 525 = 10025 \\]\nANSWER: 10025",
            (9975, "19 \\times 525 = 10025"),
        ),
        ("So 125 + 5 = 131 apples.\nANSWER: 131", (130, "125 + 5 = 131")),
        ("2 x 3 = 6 = 6 x 1.\nANSWER: 6", None),
        ("$$3 \\times 4 = 13$$\nANSWER: 13", (12, "$3 \\times 4 = 13")),
        ("-3 + 5 = 2 degrees.\nANSWER: 2", None),  # a sign, not a bullet
    ],
)
def test_a_worked_answer_s_last_sum_written_wrong_is_found(text, slip):
    found = slipped_final(text, final_number(text))
    assert (found and (found.value, found.written)) == slip

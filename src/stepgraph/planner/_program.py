"""A program of last resort: the model's own Python for a goal no plan of it was valid for.

A small code model that writes no valid plan for a GSM8K question often writes the right
short program for it when asked as for any code (Program-of-Thought). `program_lines`
turns such a program into plan lines: its last Python block, ``math.`` dropped from the
calls the expression language knows, imports and prints dropped and the printed value
made the last step, so it is the plan's answer. The lines reader (`_lines`) then reads it
like any plan in lines (each literal that is one of the goal's read numbers becomes that
input), and it is validated, grounded, journaled, approved and verified as any plan is:
it is never executed as Python.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Collection, Mapping
from typing import Any, cast

from stepgraph.exceptions import UnitError
from stepgraph.planner._client import Message
from stepgraph.planner._hand import literal_number
from stepgraph.planner._lines_source import comments_of, too_large
from stepgraph.planner._program_names import (
    comment_unit,
    is_stated,
    named_for,
    percent_names,
    unit_commented,
)
from stepgraph.planner._prompt import render
from stepgraph.planner._worked import is_print, printed_value
from stepgraph.units import parse_unit
from stepgraph.verifiers._everyday import is_everyday
from stepgraph.verifiers._grounding import CALENDAR

# Tries of the program: greedy, then one sample more widely (`_client._sampling`).
PROGRAM_TRIES = 2
# Programs only (`program_only`): greedy, then one sample more widely. A third try was
# accepted 6 times in 97 GSM8K train questions (seed 29, four runs) and verified none,
# while every question with no valid program waited for it.
PROGRAM_ONLY_TRIES = 2
RESULT_NAME = "printed_answer"
ANSWER_VARIABLE = "answer_value"

_ANSWER_NAME = re.compile(r"(?<![\w.])answer(?!\w)")

# Every fenced block, whatever its language, so the fence closing an ```output block is
# never read as the opening of another (the prose after it was read as the program)
_BLOCK = re.compile(r"```[ \t]*(?P<language>[\w+-]*)[ \t]*\n(?P<code>.*?)(?:```|\Z)", re.DOTALL)
_PYTHON = ("", "python", "py", "python3")
# N / 100 where nothing binds tighter on either side: not `x / 60 / 100`, `x ** 60 / 100`
_PERCENT = re.compile(
    r"(?<![\w.])(?<!/\s)(?<!/)(?<!\*\*\s)(?<!\*\*)(?<!%\s)(?<!%)"
    r"(?P<number>\d+(?:\.\d+)?)\s*/\s*100(?![\w.])(?!\s*\*\*)"
)
_MATH_CALL = re.compile(r"\bmath\.(?=(?:ceil|floor|sqrt)\s*\()")


def program_messages(goal: str) -> list[Message]:
    """The program's conversation: the goal alone, as a user would ask for code."""
    return [
        {"role": "system", "content": render("program.md")},
        {"role": "user", "content": goal},
    ]


def program_lines(
    text: str,
    numbers: Collection[float] = (),
    quantities: Mapping[str, Any] | None = None,
    quotes: Mapping[str, str] | None = None,
) -> str:
    """The model's program as plan lines; a program Python cannot read is left as it is.

    `numbers` are the goal's read numbers: ``eggs = 16  # eggs laid`` names the goal's 16,
    so its comment goes (a commented literal is a constant the goal does not state, in
    lines). `quantities` are the read inputs' values by name, for a literal whose comment
    names its unit, and `quotes` their quotes, for a literal that is the number of several
    (named for one). The lines reader reports what it cannot read, naming the line.
    """
    blocks = [
        match.group("code")
        for match in _BLOCK.finditer(text)
        if match.group("language").casefold() in _PYTHON
    ]
    code = _percents(_MATH_CALL.sub("", blocks[-1] if blocks else text), numbers)
    try:
        return _read_program(code, numbers, quantities, quotes)
    except (RecursionError, MemoryError):  # "a + a + ... + a" thousands of times
        return code  # the lines reader refuses it, naming why


def _read_program(
    code: str,
    numbers: Collection[float],
    quantities: Mapping[str, Any] | None,
    quotes: Mapping[str, str] | None,
) -> str:
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return code
    if too_large(tree) is not None:  # the lines reader says which number
        return code
    if (body := _function_body(code, tree)) is not None:
        code, tree = body
    code = _rounded_up(code, tree)
    code = percent_names(code, ast.parse(code), numbers)
    code = unit_commented(code, ast.parse(code), quantities or {})
    code = named_for(code, ast.parse(code), quantities or {}, quotes or {})
    code = _declared(code, ast.parse(code), numbers)
    tree = ast.parse(code)
    lines = code.splitlines()
    for node in tree.body:
        if _states_one_of(node, numbers) and node.lineno == node.end_lineno:
            lines[node.lineno - 1] = ast.get_source_segment(code, node) or lines[node.lineno - 1]
    dropped: set[int] = set()  # line numbers, from 1
    printed: ast.expr | None = None
    for node in tree.body:
        shows = isinstance(node, ast.Expr) and is_print(node.value)
        if shows or isinstance(node, ast.Import | ast.ImportFrom):
            dropped.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
        if shows and isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            printed = printed_value(node.value) or printed
    kept = [line for number, line in enumerate(lines, 1) if number not in dropped]
    last = _last_assigned(tree)
    if printed is not None and not (isinstance(printed, ast.Name) and printed.id == last):
        kept.append(f"{RESULT_NAME} = {ast.unparse(printed)}")
        last = RESULT_NAME
    # In plan lines `answer = ...` is the answer's template; a program's variable so named
    # is one more value.
    program = _ANSWER_NAME.sub(ANSWER_VARIABLE, "\n".join(kept))
    if last is not None:  # the answer is the result: no model call to word it
        program += f'\nanswer = f"{{{_ANSWER_NAME.sub(ANSWER_VARIABLE, last)}}}"'
    return program + "\n"


def _rounded_up(code: str, tree: ast.Module) -> str:
    """``n = a // b`` then ``if a % b != 0: n += 1`` as the one line ``n = ceil(a / b)``.

    The way a program rounds a count up ("tables of 8 for 230 attendees"), also with the
    remainder named first (``left = a % b`` then ``if left > 0:``, kept as a value); plan
    lines have no ``if``, and each such program was refused (the suite's tables-needed,
    three times). Whole division plus one where a remainder is left is the ceiling.
    """
    lines = code.splitlines()
    body = tree.body
    for at in reversed(range(len(body))):
        if (divided := _floor_division(body[at])) is None:
            continue
        name, left, right = divided
        remainders = {ast.unparse(ast.BinOp(left, ast.Mod(), right))}
        following = body[at + 1 : at + 3]
        if following and (named := _remainder_name(following[0], remainders)):
            remainders.add(named)
            following = following[1:]
        if not following or not _adds_one_if(following[0], name, remainders):
            continue
        branch = following[0]
        indent = lines[body[at].lineno - 1][: body[at].col_offset]
        rounded = f"{indent}{name} = ceil({ast.unparse(left)} / {ast.unparse(right)})"
        lines[branch.lineno - 1 : branch.end_lineno or branch.lineno] = []
        lines[body[at].lineno - 1] = rounded
    return "\n".join(lines) + "\n"


def _remainder_name(node: ast.stmt, remainders: set[str]) -> str:
    """The name of ``name = a % b`` where that is one of the `remainders`, else ''."""
    if (
        isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and ast.unparse(node.value) in remainders
    ):
        return node.targets[0].id
    return ""


def _floor_division(node: ast.stmt) -> tuple[str, ast.expr, ast.expr] | None:
    """``name = left // right``: the name and both sides."""
    if not (
        isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.BinOp)
        and isinstance(node.value.op, ast.FloorDiv)
    ):
        return None
    return node.targets[0].id, node.value.left, node.value.right


def _adds_one_if(node: ast.stmt, name: str, remainders: set[str]) -> bool:
    """``if <remainder> [!= 0 | > 0]: name += 1`` (nothing else, no else)."""
    if not isinstance(node, ast.If) or node.orelse or len(node.body) != 1:
        return False
    test, (step,) = node.test, node.body
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        (op,), (limit,) = test.ops, test.comparators
        if not (isinstance(op, ast.NotEq | ast.Gt) and _is_number(limit, 0)):
            return False
        test = test.left
    adds_one = (
        isinstance(step, ast.AugAssign)
        and isinstance(step.op, ast.Add)
        and isinstance(step.target, ast.Name)
        and step.target.id == name
        and _is_number(step.value, 1)
    )
    return ast.unparse(test) in remainders and adds_one


def _is_number(node: ast.expr, value: int) -> bool:
    return (
        isinstance(node, ast.Constant) and not isinstance(node.value, bool) and node.value == value
    )


def _percents(code: str, numbers: Collection[float]) -> str:
    """``60 / 100`` as the goal's share 0.6 where "60%" is one of its numbers.

    A program writes a percentage so; read apart, the 60 would be another input of the
    goal's (60 pounds) and the 100 a number the goal does not state.
    """

    def share(match: re.Match[str]) -> str:
        value = float(match.group("number")) / 100
        return f"{value:g}" if is_stated(value, numbers) else match.group(0)

    return _PERCENT.sub(share, code)


def _declared(code: str, tree: ast.Module, numbers: Collection[float]) -> str:
    """The program with each number the goal does not state declared as plan lines declare it.

    The prompt asks for a comment saying why such a number is used; a code model writes it
    above the line (``# two brothers`` over ``people = 2``) or after an expression that
    holds the number (``earned = daily * 5  # 5 weekdays``). In plan lines only
    ``name = number  # why`` declares a constant: the comment is moved there, and a number
    inside an expression gets a line of its own with the comment as its why. A number
    with no comment at all stays, for grounding to refuse.
    """
    lines = code.splitlines()
    comments = comments_of(code)
    for node in reversed(tree.body):
        if not (
            isinstance(node, ast.Assign)
            and node.lineno == node.end_lineno
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            continue
        target = node.targets[0].id
        text, alone = comments.get(node.lineno, ("", True))
        above, above_alone = comments.get(node.lineno - 1, ("", False))
        if isinstance(node.value, ast.Constant):
            declared = above and above_alone and not _speaks_of_units(above)
            if _unstated(node.value, numbers) and (fact := _calendar_name(node)):
                # the larger period's length in the smaller unit: `year / (2 month)` is 6
                length, why = fact
                indent = lines[node.lineno - 1][: node.col_offset]
                lines[node.lineno - 1] = f'{indent}{target} = "{length}"  # {text or why}'
            elif _unstated(node.value, numbers) and not text and declared:
                lines[node.lineno - 1] += f"  # {above}"
            continue
        unstated = _unstated_factors(node.value, numbers)
        if len(unstated) == 1 and text and not alone and (unit := comment_unit(text)):
            # `space / 12  # in feet`: the unit the value is in, declared as plan lines
            # declare it, so the hand conversion is undone and the units convert (`_hand`)
            indent = lines[node.lineno - 1][: node.col_offset]
            lines[node.lineno - 1] = f'{indent}{target}: "{unit}" = {ast.unparse(node.value)}'
            continue
        if len(unstated) != 1:
            continue  # one comment says why of one number
        (number,) = unstated
        said = bool(text) and not alone and not _speaks_of_units(text)  # units convert alone
        if fact := _calendar_count(target, node.value, number):
            # `days_left = 365 - 180`: a year's days, beside the goal's "180 days"
            (length, why), said = fact, False
            name, hoisted = f"{target}_length", f'"{length}"'
        else:
            why = text if said else (_calendar_rate(target, node.value, number) or "")
            name, hoisted = f"{target}_factor", f"{number:g}"
        if not why:
            continue
        value = _Named(number, name).visit(node.value)
        indent = lines[node.lineno - 1][: node.col_offset]
        statement = f"{indent}{target} = {ast.unparse(value)}" + (f"  # {text}" if said else "")
        lines[node.lineno - 1 : node.lineno] = [f"{indent}{name} = {hoisted}  # {why}", statement]
    return "\n".join(lines) + "\n"


_PERIODS = r"(?P<{}>second|minute|hour|day|week|month|year)s?"
# `months_in_year = 12`, `days_per_week = 7`: the name says which calendar fact the number is
_CALENDAR_NAME = re.compile(
    rf"(?:\w+_)?{_PERIODS.format('small')}_(?:in|per)_(?:a_|one_|each_|the_|first_|this_)?"
    rf"{_PERIODS.format('large')}"
)


_MONTH_DAYS = {
    "january": 31, "march": 31, "april": 30, "may": 31, "june": 30, "july": 31, "august": 31,
    "september": 30, "october": 31, "november": 30, "december": 31,
}  # fmt: skip
_MONTH_NAME = re.compile(rf"(?:\w+_)?days_(?:in|of)_(?P<month>{'|'.join(_MONTH_DAYS)})")


def _calendar_name(node: ast.Assign) -> tuple[str, str] | None:
    """``months_in_year = 12`` as the year's length, "12 month", and why it is needed.

    Only where the name states that calendar fact exactly (GSM8K train 4180, refused for
    an unstated 12); as a length, it divides the goal's "2 months" into a count.
    """
    target = node.targets[0].id if isinstance(node.targets[0], ast.Name) else ""
    match = _CALENDAR_NAME.fullmatch(target)
    value = node.value.value if isinstance(node.value, ast.Constant) else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    month = _MONTH_NAME.fullmatch(target) if match is None else None
    if month is not None:  # `days_in_march = 31` (GSM8K test 613; February has two lengths)
        name = month.group("month")
        if _MONTH_DAYS[name] != value:
            return None
        return f"{value:g} day", f"{name.title()} has {value:g} days"
    if match is None:
        return None
    small, large = match.group("small"), match.group("large")
    if CALENDAR.get(float(value)) != (small, large):
        return None
    return f"{value:g} {small}", f"a {large} has {value:g} {small}s"


def _calendar_rate(target: str, value: ast.expr, number: float) -> str | None:
    """Why ``per_week = per_night * 7`` needs its 7: the names say per what, if exactly.

    GSM8K train 4791 ("4 hours at night ... in one week") was refused for the 7 as a
    conversion done by hand; it counts the nights of a week, which no unit converts.
    """
    small, large = CALENDAR.get(number, ("", ""))
    if not _multiplies(value, number):
        return None  # `hours = minutes / 60` converts minutes, which the units do themselves
    operands = [n.id for n in ast.walk(value) if isinstance(n, ast.Name)]
    smaller = (small, "night") if small == "day" else (small,)
    if not large or not _says(target, (large,)) or not any(_says(o, smaller) for o in operands):
        return None
    return f"a {large} has {number:g} {small}s"


def _calendar_count(target: str, value: ast.expr, number: float) -> tuple[str, str] | None:
    """``days_left = 365 - 180`` counts a year's 365 days: the length, "365 day", and why.

    Only where the number is added or taken away (a length of time, as the goal's "180
    days" beside it) and the name says the smaller period. Before, the bare 365 less the
    goal's 180 days was refused as a count minus a time.
    """
    small, large = CALENDAR.get(number, ("", ""))
    operators = _operators_of(value, number)
    if not large or not _says(target, (small,)) or not operators:
        return None
    if not all(isinstance(op, ast.Add | ast.Sub) for op in operators):
        return None
    return f"{number:g} {small}", f"a {large} has {number:g} {small}s"


def _multiplies(value: ast.expr, number: float) -> bool:
    """Whether every `number` in `value` is a factor of a product, none a divisor."""
    operators = _operators_of(value, number)
    return bool(operators) and all(isinstance(op, ast.Mult) for op in operators)


def _operators_of(value: ast.expr, number: float) -> list[ast.operator]:
    """The operator of each operation in `value` that has the literal `number` for a side."""
    return [
        node.op
        for node in ast.walk(value)
        if isinstance(node, ast.BinOp)
        for side in (node.left, node.right)
        if isinstance(side, ast.Constant) and side.value == number
    ]


def _says(name: str, periods: tuple[str, ...]) -> bool:
    """Whether a name's words say one of `periods` (``per_night``, ``weekly``, ``days``)."""
    words = {word.removesuffix("ly").removesuffix("s") for word in name.casefold().split("_")}
    words |= {"day"} if "dai" in words else set()  # "daily"
    return any(period in words for period in periods)


class _Named(ast.NodeTransformer):
    """Each literal `number` in an expression replaced by the name `name`."""

    def __init__(self, number: float, name: str) -> None:
        self.number, self.name = number, name

    def visit_Constant(self, constant: ast.Constant) -> ast.AST:
        same = not isinstance(constant.value, bool) and constant.value == self.number
        return ast.Name(self.name, ast.Load()) if same else constant


def _speaks_of_units(comment: str) -> bool:
    """Whether a comment names a unit of measure ("# in feet", "# minutes per hour").

    Such a number converts by hand (``space / 12  # in feet``, GSM8K train 4978: declared
    a constant, 18 inches "in feet" stayed 1.5 inches), which plan lines leave to the
    units: it is no constant (a comment that is only a unit declares the value's unit).
    """
    for word in re.findall(r"[A-Za-z]{2,}", comment):
        if word.casefold() == "in":  # the preposition: a comment writes inches out
            continue
        try:
            unit = parse_unit(word, counts=False)
        except UnitError:
            continue
        money = all(str(kind).startswith("[currency_") for kind in unit.dimensionality)
        if not unit.dimensionless and not money and is_everyday(unit):
            return True
    return False


def _unstated_factors(node: ast.expr, numbers: Collection[float]) -> set[float]:
    """The number literals of `node` the goal does not state; a power of two is one number.

    ``2.5 * 10**12  # in bytes`` holds one factor done by hand, 10**12, not a 10 and a 12.
    """
    found, inside = set(), set()
    for power in ast.walk(node):
        if isinstance(power, ast.BinOp) and (value := literal_number(power)) is not None:
            inside.update({id(power.left), id(power.right)})
            if value not in (0, 1) and not is_stated(value, numbers):
                found.add(value)
    for n in ast.walk(node):
        if id(n) not in inside and _unstated(n, numbers):
            found.add(cast(float, literal_number(n)))
    return found


def _unstated(node: ast.AST, numbers: Collection[float]) -> bool:
    """Whether `node` is a number literal the goal does not state (0 and 1 are structure)."""
    if not isinstance(node, ast.Constant) or isinstance(node.value, bool):
        return False
    value = node.value
    if not isinstance(value, int | float) or value in (0, 1):
        return False
    return not is_stated(value, numbers)


def _function_body(code: str, tree: ast.Module) -> tuple[str, ast.Module] | None:
    """A program written as one function (``def solution(): ... return x``), as its body.

    A code model asked for a program often writes the function Program-of-Thought prompts
    show; its body is the program, and what it returns is what it prints. Only a function
    of no parameters whose body is plain statements and one last ``return`` is read so.
    """
    functions = [node for node in tree.body if isinstance(node, ast.FunctionDef)]
    if len(functions) != 1:
        return None
    function = functions[0]
    *steps, last = function.body
    if function.args.args or not isinstance(last, ast.Return) or last.value is None:
        return None
    inner = (node for step in steps for node in ast.walk(step))
    if any(isinstance(node, ast.Return | ast.FunctionDef | ast.Lambda) for node in inner):
        return None
    if steps and isinstance(steps[0], ast.Expr) and isinstance(steps[0].value, ast.Constant):
        steps = steps[1:]  # the docstring
    source = code.splitlines()[steps[0].lineno - 1 : last.lineno - 1] if steps else []
    body = textwrap.dedent("\n".join(source)) + f"\nprint({ast.unparse(last.value)})\n"
    try:
        return body, ast.parse(body)
    except SyntaxError:
        return None


def _states_one_of(node: ast.stmt, numbers: Collection[float]) -> bool:
    """Whether `node` is ``name = <number>`` for one of `numbers`."""
    if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)):
        return False
    value = node.value.value
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return is_stated(value, numbers)


def _last_assigned(tree: ast.Module) -> str | None:
    """The name the program's last assignment binds, where it binds one."""
    for node in reversed(tree.body):
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            return target.id if isinstance(target, ast.Name) else None
    return None

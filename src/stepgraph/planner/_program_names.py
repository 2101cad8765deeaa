"""How a program's literals are read as the goal's numbers, beyond their values.

`program_lines` (`_program`) binds a literal that is exactly one read number to that
input. These readings go further, each for a way a code model writes a number that the
value alone cannot place: a percentage named by its number (`rate = 10`, then `/ 100`), a
unit named in a comment (`rest = 0.5  # in hours`), a number shared by several inputs and
named for one (`price_orange = 2`). Each rewrites the program's own lines, so the lines
reader then reads them as any plan.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Collection, Mapping
from typing import Any

import pint

from stepgraph.exceptions import StepgraphError
from stepgraph.planner._hand import measure_word
from stepgraph.planner._lines_source import comments_of, replace_node
from stepgraph.units import parse_unit, quantity


def percent_names(code: str, tree: ast.Module, numbers: Collection[float]) -> str:
    """``rate = 10`` used only as ``rate / 100``: the goal's "10 percent" as its share, 0.1.

    A program names a percentage by its number and divides where it uses it (GSM8K train
    2816, 4078: `dry_up_percentage = 10`, then `eggs * (dry_up_percentage / 100)`); read
    apart, the 10 is a number the goal states as 10% and "10 percent" is refused unused.
    Only where every use divides by 100 at once (``p / 100``, ``x * p / 100``): a use
    that divides by the name (``x / p / 100``) or uses it bare keeps the program as it is.
    """
    lines, comments = code.splitlines(), comments_of(code)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    for node in tree.body:
        assigned = _assigned_number(node)
        if assigned is None or not is_stated(assigned[1] / 100, numbers):
            continue
        name, number = assigned
        names = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == name]
        uses = [n for n in names if isinstance(n.ctx, ast.Load)]
        divisions = [_percent_division(use, parents) for use in uses]
        statements = {_statement_of(use, parents) for use in uses}
        if len(names) - len(uses) != 1 or not uses or None in divisions:
            continue  # bound once, used at least once, each use divided by 100
        if any(s is None or s.lineno != s.end_lineno for s in statements):
            continue
        for divided, kept in filter(None, divisions):
            replace_node(divided, kept, parents)
        assert isinstance(node, ast.Assign)
        node.value = ast.Constant(number / 100)
        for statement in filter(None, [node, *statements]):
            comment, alone = comments.get(statement.lineno, ("", True))
            indent = lines[statement.lineno - 1][: statement.col_offset]
            shown = f"{indent}{ast.unparse(statement)}"
            lines[statement.lineno - 1] = shown + (f"  # {comment}" if not alone else "")
    return "\n".join(lines) + "\n"


def _assigned_number(node: ast.stmt) -> tuple[str, float] | None:
    """The name and number of a one-line ``name = <number>`` (not 0 or 1, which are structure)."""
    if not (
        isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, int | float)
        and not isinstance(node.value.value, bool)
        and node.value.value not in (0, 1)
        and node.lineno == node.end_lineno
    ):
        return None
    return node.targets[0].id, float(node.value.value)


def unit_commented(code: str, tree: ast.Module, quantities: Mapping[str, Any]) -> str:
    """``rest = 0.5  # in hours`` as the goal's "30-minute" where that is the one it equals.

    The comment names the unit the number is in; the number alone may be none of the
    goal's (0.5 for 30 minutes, GSM8K train 6849) or several of them (5 meters, 5 friends:
    641). The line is written with the input's name, so no reading of the number is left.
    """
    lines, comments = code.splitlines(), comments_of(code)
    for node in tree.body:
        text, alone = comments.get(node.lineno, ("", True))
        assigned = _assigned_number(node)
        if assigned is None or alone or not (unit := comment_unit(text)):
            continue
        name, number = assigned
        if len(found := _equal_to(number, unit, quantities)) == 1:
            indent = lines[node.lineno - 1][: node.col_offset]
            lines[node.lineno - 1] = f"{indent}{name} = {found[0]}  # {text}"
    return "\n".join(lines) + "\n"


def named_for(
    code: str, tree: ast.Module, quantities: Mapping[str, Any], quotes: Mapping[str, str]
) -> str:
    """``price_per_sandwich = 3`` as the goal's "$3" where "3 sandwiches" is a 3 too.

    A literal that is the number of several read inputs is bound to none of them (GSM8K
    train 6048, 2400, 5781: "3 sandwiches at $3 each", and the money refused as a plain 3).
    The variable's name says which: its words before any "per" shared with one input's
    quote ("sandwiches"), or a word of money for the one input in money ("price", "cost").
    """
    lines = code.splitlines()
    for node in tree.body:
        assigned = _assigned_number(node)
        if assigned is None:
            continue
        name, number = assigned
        equal = [n for n, value in quantities.items() if _magnitude(value) == number]
        if len(equal) < 2:
            continue
        words = _words(name.split("_per_")[0].replace("_", " "))
        scores = {n: _score(words, quotes.get(n, ""), quantities[n]) for n in equal}
        best = max(scores.values())
        named = [n for n, score in scores.items() if score == best]
        if best and all(quantities[n] == quantities[named[0]] for n in named):
            found = named[0]  # "$20 for each of the first 5 ... over $20": either $20 is it
            indent = lines[node.lineno - 1][: node.col_offset]
            lines[node.lineno - 1] = f"{indent}{name} = {found}"
    return "\n".join(lines) + "\n"


_MONEY_WORDS = {
    "price", "cost", "dollar", "usd", "money", "pay", "paid", "spend", "spent", "fee", "earn",
    "earning", "wage", "salary", "fare", "charge", "bill", "budget", "rent", "tip",
}  # fmt: skip


def _words(text: str) -> set[str]:
    return {word.removesuffix("s") for word in re.findall(r"[a-z]+", text.casefold())}


def _score(words: set[str], quote: str, value: Any) -> int:
    """How well a name's words name an input: each word of its quote, and money twice over.

    `price_orange = 2` beside "2 oranges" and "$2 each" is the price: a name that speaks of
    money names the sum of money before the thing it buys.
    """
    units = getattr(value, "dimensionality", {})
    money = bool(units) and all(str(kind).startswith("[currency_") for kind in units)
    return len(words & _words(quote)) + (2 if money and words & _MONEY_WORDS else 0)


def _magnitude(value: Any) -> float | None:
    magnitude = getattr(value, "magnitude", value)
    is_number = isinstance(magnitude, int | float) and not isinstance(magnitude, bool)
    return float(magnitude) if is_number else None


def _equal_to(number: float, unit: str, quantities: Mapping[str, Any]) -> list[str]:
    """The names of the quantities that `number` `unit` is."""
    try:
        written = quantity(number, parse_unit(unit, counts=False))
    except StepgraphError:
        return []
    found = []
    for name, value in quantities.items():
        if not isinstance(value, pint.Quantity) or value.dimensionality != written.dimensionality:
            continue
        if math.isclose(value.to(written.units).magnitude, number, rel_tol=1e-9):
            found.append(name)
    return found


def _percent_division(
    use: ast.Name, parents: dict[ast.AST, ast.AST]
) -> tuple[ast.BinOp, ast.expr] | None:
    """The division by 100 that `use` is divided by at once, and what it becomes without it."""
    parent = parents.get(use)
    if _by_hundred(parent) and isinstance(parent, ast.BinOp) and parent.left is use:
        return parent, use
    grand = parents.get(parent) if parent is not None else None
    if (
        isinstance(parent, ast.BinOp)
        and isinstance(parent.op, ast.Mult)
        and _by_hundred(grand)
        and isinstance(grand, ast.BinOp)
        and grand.left is parent
    ):
        return grand, parent
    return None


def _by_hundred(node: ast.AST | None) -> bool:
    return (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Div)
        and isinstance(node.right, ast.Constant)
        and node.right.value == 100
        and not isinstance(node.right.value, bool)
    )


def _statement_of(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> ast.stmt | None:
    while node in parents and not isinstance(node, ast.stmt):
        node = parents[node]
    return node if isinstance(node, ast.stmt) else None


_IN_UNIT = re.compile(r"(?:(?:converted\s+)?(?:in|into|to|as)\s+)?(?P<unit>[A-Za-z][A-Za-z ]*?)\.?")
# "Convert hours to minutes", "2 hours in minutes", "convert to seconds": what it ends in
_CONVERSION = re.compile(
    r"(?:\bconvert\w*\b.*?|(?P<source>[A-Za-z]+))\s+(?:in|into|to)\s+(?P<unit>[A-Za-z]+)\.?",
    re.IGNORECASE,
)


_ASIDE = re.compile(r"\s*\([^()]*\)\s*$")


def comment_unit(comment: str) -> str | None:
    """The unit a comment names for the value, where it is one of measure.

    Either the comment is only a unit ("in feet", "hours"), or it says a conversion into
    one: "Convert hours to minutes" over ``time = 2 * 60`` (the suite's printers-needed: a
    right program refused three times for its 60) declares minutes, as does "2 hours in
    minutes"; a unit after a word that is none ("time to finish") is no conversion.
    """
    comment = _ASIDE.sub("", comment).strip()  # "in minutes (30 seconds)": what it was
    if (match := _IN_UNIT.fullmatch(comment)) and (unit := measure_word(match.group("unit"))):
        return unit
    if (match := _CONVERSION.search(comment)) is None or match.end() != len(comment):
        return None
    unit = measure_word(match.group("unit"))
    source = match.group("source")
    if unit is None or (source is not None and measure_word(source) is None):
        return None
    return unit


def is_stated(value: float, numbers: Collection[float]) -> bool:
    """Whether `value` is one of the goal's read numbers."""
    return any(math.isclose(value, number, rel_tol=1e-12) for number in numbers)

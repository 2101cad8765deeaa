"""A count the plan spells out as that many terms of one sum.

"How much did he sleep in that four day period?" is answered by adding four nights
(`night1 + night2 + night3 + night4`), "the total in two weeks" by adding each week
(`first_week + second_week`), "2 smaller bags that have half as much gold each" by adding
the bag twice: the plan uses the count without writing it (GSM8K train 5985, 952, 1883,
3788: right programs refused for an unused "four", "two", "2"). The count is used where one
sum has exactly that many terms that are its members: named by the word the count counts
("bags": `smaller_bag_gold`), or different terms of one name but for one word or number
(`night1` to `night4`, `salmon_first_week` and `salmon_second_week`; "three friends":
`zachary_money`, `jason_money`, `ryan_money`). A sum of another number of them, one
member added twice, or terms that are neither leave the count unused.
"""

from __future__ import annotations

import ast
import re

from stepgraph.model import StepGraph
from stepgraph.verifiers._calculated import calculated
from stepgraph.verifiers._numbers import GoalNumber

_TOKEN = re.compile(r"[a-z]+|\d+")
_NOUN = re.compile(r"\s*-?\s*([A-Za-z]+)")
_LARGEST = 8  # a sum of more members than this is written as a product


def enumerated(numbers: list[GoalNumber], goal: str, plan: StepGraph) -> list[GoalNumber]:
    """The `numbers` some sum of `plan` spells out as exactly that many members.

    A sum spells out one count: where two of the numbers fit the same sum ("2 large beds
    ... 2 medium beds", a sum of the top bed and the medium bed), it is neither's, since
    a program that forgot to double each bed adds them just so (GSM8K train 1184). The same
    count of the same thing said twice ("three friends ... the three friends") is one.
    """
    sums = _as_written(_sums(plan), {step.id for step in plan.steps})
    fits = {id(number): _fitting(number, goal, sums) for number in numbers}
    claims: dict[int, set[tuple[float, str]]] = {}
    for number in numbers:  # the same count of the same thing, said twice, is one claim
        said = (float(number.value), next(iter(_nouns(goal, number.end)), ""))
        for index in fits[id(number)]:
            claims.setdefault(index, set()).add(said)
    return [
        number for number in numbers if any(len(claims[index]) == 1 for index in fits[id(number)])
    ]


def _fitting(number: GoalNumber, goal: str, sums: list[list[str]]) -> set[int]:
    """The indexes of the sums with exactly `number` members of what the goal counts."""
    count = float(number.value)
    if number.percent or not count.is_integer() or not 2 <= count <= _LARGEST:
        return set()
    if goal[: number.end - len(number.text)].rstrip().endswith("$"):
        return set()  # a sum of money counts nothing
    nouns = _nouns(goal, number.end)
    return {
        index
        for index, terms in enumerate(sums)
        if _named(terms, nouns) == count or int(count) in _of_one_kind(terms)
    }


def _nouns(goal: str, end: int) -> list[str]:
    """The (at most two) words after the count, singular: "four day period" -> day, period."""
    words: list[str] = []
    at = end
    while len(words) < 2 and (match := _NOUN.match(goal, at)):
        words.append(match.group(1).casefold().removesuffix("s"))
        at = match.end()
    return [word for word in words if len(word) >= 3]


def _sums(plan: StepGraph) -> list[list[str]]:
    """The names added in each sum of the plan's expressions (a term that is no name: '')."""
    found = []
    for _, tree in calculated(plan):
        parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        for node in ast.walk(tree):
            if isinstance(node, ast.BinOp) and _is_sum(node) and not _is_sum(parents.get(node)):
                found.append([t.id if isinstance(t, ast.Name) else "" for t in _terms(node)])
    return found


def _as_written(sums: list[list[str]], ids: set[str]) -> list[list[str]]:
    """Each term by the name the plan wrote: `sarah_fish_2` is `sarah_fish` assigned again.

    A program that computes a value twice (GSM8K train 4697: Sarah's fish, the line written
    two times) adds the second, which the lines reader names `sarah_fish_2`; as a member it
    is Sarah's fish, one of "all 4 people".
    """
    return [[_first_name(term, ids) for term in terms] for terms in sums]


def _first_name(term: str, ids: set[str]) -> str:
    base, _, number = term.rpartition("_")
    return base if number.isdigit() and int(number) >= 2 and base in ids else term


def _is_sum(node: ast.AST | None) -> bool:
    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add)


def _terms(node: ast.expr) -> list[ast.expr]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return [*_terms(node.left), *_terms(node.right)]
    return [node]


def _named(terms: list[str], nouns: list[str]) -> int:
    """How many terms are named for one of the counted words."""
    return sum(bool(set(nouns) & set(_tokens(term))) for term in terms)


def _tokens(name: str) -> list[str]:
    """A name's words and numbers, singular: `sharks_day1` -> shark, day, 1."""
    return [token.removesuffix("s") for token in _TOKEN.findall(name.casefold())]


def _of_one_kind(terms: list[str]) -> set[int]:
    """The counts n for which n different terms are one name but for one word or number.

    `night1` to `night4`, `salmon_first_week` and `salmon_second_week`, `revenue_eraser`,
    `revenue_regular` and `revenue_short` ("three kinds of pencils"); a term added twice is
    not two members.
    """
    members: dict[tuple[int, int, tuple[str, ...]], list[str]] = {}
    for term in filter(None, terms):
        tokens = _tokens(term)
        for at, token in enumerate(tokens):
            rest = (len(tokens), at, tuple(tokens[:at] + tokens[at + 1 :]))
            members.setdefault(rest, []).append(token)
    return {
        len(words) for words in members.values() if len(words) > 1 and len(set(words)) == len(words)
    }


__all__ = ["enumerated"]

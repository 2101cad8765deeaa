"""The word after a reference in an answer template, read against the value it follows.

``${a} hours`` with `a` = 5.55556 h names the unit the answer is in: the value is written
in it, once ("5.55556 hours", not "5.55556 h hours"). ``${a} days`` with `a` = 5 GB, or
``${a} nights`` with `a` = 5 GB, says something the value is not: a time, a count. A plain
number counts whatever the text calls it ("3 nights", "5 days"), and a word that is no
unit and no count ("per", "in", "total") is left as written.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pint

from stepgraph.exceptions import UnitError
from stepgraph.references import ReferenceError_, find_references, lookup
from stepgraph.units import dimension_name, format_number, format_value, is_count_unit, parse_unit

# These only read like units to pint (inch, annum, attometre, attosecond, tonne, are,
# hectare, pi, printer's point) and are English far more often.
_NOT_UNITS = frozenset({"a", "an", "are", "as", "at", "has", "in", "pi", "point", "points", "t"})
# A plural noun after a quantity names what is counted ("5 GB nights"); these end like
# one and are not.
_NOT_COUNTS = frozenset(
    {
        *("always", "across", "afterwards", "besides", "does", "goes", "his", "hers", "its"),
        *("less", "minus", "ours", "perhaps", "plus", "theirs", "this", "thus", "towards"),
        *("was", "whereas", "yes", "yours"),
        # verbs that follow a quantity: "2,500 GB remains"
        *("becomes", "comes", "contains", "covers", "equals", "fits", "gives", "holds"),
        *("includes", "lasts", "leaves", "makes", "means", "moves", "needs", "remains"),
        *("seems", "stays", "takes"),
    }
)
_PLURAL = re.compile(r"^[a-z]{2,23}(?<![siu])s$")
_IRREGULAR_PLURALS = frozenset({"people", "children", "men", "women"})
_REFERENCE_THEN_WORD = re.compile(
    r"(?P<ref>\$\{\s*[A-Za-z_][\w.]*\s*\})[ \t]*(?P<word>[A-Za-zµ°%][\w/%·^*µ°]*)"
)


@dataclass(frozen=True)
class SaidWord:
    """A reference and the word after it, as the template says them."""

    start: int  # where ``${ref} word`` begins in the template
    end: int  # where it ends
    mention: str  # ``${a} hours``
    name: str  # ``a``: the reference without ``${...}``
    word: str  # ``hours``
    shown: str  # the number the answer writes ("5.55556"), empty when the words are wrong
    problem: str  # why the word does not fit the value, empty when it fits

    @property
    def text(self) -> str:
        """What the answer writes for the mention: ``5.55556 hours``."""
        return f"{self.shown} {self.word}"


def said_words(template: str, scope: Mapping[str, Any]) -> Iterator[SaidWord]:
    """Each ``${ref} word`` whose word is a unit or a count, judged against the value.

    A reference that does not resolve is left out: the caller says what is missing.
    """
    for match in _REFERENCE_THEN_WORD.finditer(template):
        word = match.group("word")
        try:
            value = lookup(next(find_references(match.group("ref"))), scope)
        except (ReferenceError_, StopIteration):
            continue
        if not isinstance(value, pint.Quantity) or value.units.dimensionless:
            continue  # a plain number counts whatever the text calls it
        said = _judge(value, word)
        if said is None:
            continue
        shown, problem = said
        mention = match.group(0)
        name = match.group("ref")[2:-1].strip()
        if problem:
            problem = f"the answer says '{mention}' but {name} is {format_value(value)}: {problem}"
        yield SaidWord(match.start(), match.end(), mention, name, word, shown, problem)


def _judge(value: Any, word: str) -> tuple[str, str] | None:
    """(the number in the word's unit, "") or ("", what is wrong); None: not a unit word."""
    if word.lower() in _NOT_UNITS:
        return None
    counted = is_count_unit(value.units)
    try:
        unit = parse_unit(word, counts=False)
    except UnitError:
        unit = None
    if unit is not None:
        if counted or not value.is_compatible_with(unit):
            return "", f"{word} is {dimension_name(unit)}, not {_dimension(value)}"
        return format_number(value.to(unit).magnitude), ""
    if is_count_unit(word) and counted and value.is_compatible_with(word):
        return format_number(value.to(word).magnitude), ""  # "29 tables", said once
    if is_count_unit(word) or _reads_as_count(word):
        if counted:
            return "", f"{word} is not what {format_value(value)} counts"
        return "", "a count needs a plain number"
    return None


def _dimension(value: Any) -> str:
    return "a count" if is_count_unit(value.units) else dimension_name(value)


def _reads_as_count(word: str) -> bool:
    """A plain lowercase plural noun ("nights", "trips", "crates", "people")."""
    if word in _IRREGULAR_PLURALS:
        return True
    return bool(_PLURAL.match(word)) and word not in _NOT_COUNTS


def write_said_units(template: str, scope: Mapping[str, Any]) -> str:
    """The template with each value followed by its own unit written in it, once.

    ``${a} hours`` with `a` = 5.55556 h becomes the text ``5.55556 hours``; words that do
    not fit their values are left for `check_answer_template` to refuse.
    """
    pieces: list[str] = []
    kept = 0
    for said in said_words(template, scope):
        if said.problem:
            continue
        pieces.append(template[kept : said.start] + said.text)
        kept = said.end
    return "".join(pieces) + template[kept:]


__all__ = ["SaidWord", "said_words", "write_said_units"]

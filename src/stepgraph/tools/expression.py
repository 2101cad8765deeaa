"""The expression language of `calculate` and of declared checks: arithmetic with units.

Grammar, in words: numbers as Python writes them (``2.5``, ``1e-9``, ``2E3``, ``1_000``);
a number followed by a name is a quantity (``6 h``, ``2.5TB``, ``450 Mbit/s``); a name
followed by ``(`` is a function call (``ceil(x)``, ``min(a, b)``); any other name is a
unit (so ``30 min`` is thirty minutes and ``min(1, 2)`` is one); ``${id}`` and
``${id.field}`` are references. The tokenizer, not a regular expression, tells these
apart, so the ``e`` of ``1e-9`` is never read as the elementary charge.

References are *bound*, never pasted as text: each becomes a name in the evaluator
whose value is the step's exact output. No magnitude (``1e+16``, ``2**70``, ``nan``),
unit (``min``, ``%``) or representation can be misread on the way.

simpleeval over asteval: we want one expression, not a Python subset with loops and
function definitions, and simpleeval lets us replace each AST node handler, so
attributes, subscripts, strings and unknown names are refused outright.

Operands are numbers, quantities and (for ``==``, ``and``, ``not``, ``if``) truth values,
never text or containers: ``'ab' * 10**8`` or ``"%0999999d" % 1`` would build a string as
large as the multiplier, so a bound value that is text, a list or a mapping is refused by
name before anything is evaluated (`check_operands`), and every operator and function
checks its operands again before it runs, for values that only exist mid-evaluation.
"""

from __future__ import annotations

import ast
import io
import math
import operator
import re
import time
import tokenize
from collections.abc import Callable, Iterator, Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any, cast

import pint
import simpleeval

from stepgraph.exceptions import (
    CalculationError,
    StepgraphError,
    UnitError,
    UnitsDoNotCancelError,
)
from stepgraph.references import REFERENCE_PATTERN, Reference, find_references, lookup
from stepgraph.units import (
    dollars,
    format_unit,
    format_value,
    is_count_unit,
    normalize,
    parse_unit,
    registry,
)

MAX_EXPRESSION_LENGTH = 2_000
MAX_EXPONENT = 1_000
MAX_INTEGER_BITS = 4_096
TIME_LIMIT_SECONDS = 1.0
TOLERANCE = 1e-9  # relative: `==` in expressions and every reverse check use it
_PLACEHOLDER = "__ref"
_COUNT = "__count_"  # marks a count noun that follows a number
_PRODUCT = re.compile(r"(?<![\w.])(\d[\d.]*(?:e[-+]?\d+)?) \* (?!__ref)([A-Za-z_µ°][\w]*)")


@dataclass(frozen=True)
class Expression:
    """An expression and the exact values its ``${...}`` references are bound to.

    `bindings` maps each reference's text (``"${total}"``) to its value.
    """

    text: str
    bindings: Mapping[str, Any] = field(default_factory=dict)

    def to_data(self) -> dict[str, Any]:
        """The JSON-ready form the journal keeps (values encoded by the journal writer)."""
        return {"$expression": self.text, "bindings": dict(self.bindings)}

    @classmethod
    def from_data(cls, data: Any) -> Expression:
        """Accept an `Expression`, its `to_data` form, or plain text without references."""
        if isinstance(data, Expression):
            return data
        if isinstance(data, dict) and "$expression" in data:
            return cls(str(data["$expression"]), dict(data.get("bindings") or {}))
        if isinstance(data, str):
            return cls(data)
        raise CalculationError(f"an expression must be text, not {type(data).__name__}")

    def display(self) -> str:
        """The expression with each reference replaced by its value as people read it."""

        def shown(match: Any) -> str:
            value = self.bindings.get(match.group(0))
            return match.group(0) if value is None else format_value(value)

        return REFERENCE_PATTERN.sub(shown, self.text)

    def __str__(self) -> str:
        return self.display()


def bind(text: str, scope: Mapping[str, Any]) -> Expression:
    """Bind every reference of `text` to its value in `scope` (raises `ReferenceError_`)."""
    bindings = {ref.text: lookup(ref, scope) for ref in find_references(text)}
    return Expression(text, bindings)


@dataclass(frozen=True)
class Parsed:
    """A parsed expression: its syntax tree and the values of its placeholder names."""

    tree: ast.Expression
    names: dict[str, Any]
    references: dict[str, Reference]  # placeholder name -> the reference it stands for


def is_number(value: Any) -> bool:
    """Whether `value` is a number or a quantity of one: what arithmetic may work on.

    A truth value is not one (``True * 5`` is a slip, not arithmetic), nor is text.
    """
    magnitude = value.magnitude if isinstance(value, pint.Quantity) else value
    return isinstance(magnitude, int | float) and not isinstance(magnitude, bool)


_SHOWN_TEXT = 40  # characters of a text operand a message quotes: it may be megabytes long


def describe_operand(value: Any) -> str:
    """What a non-numeric value is, in a few words that never echo a long value."""
    if isinstance(value, bool):
        return f"the truth value {str(value).lower()}"
    if isinstance(value, str):
        if len(value) <= _SHOWN_TEXT:
            return f"the text {value!r}"
        return f"the text {value[:_SHOWN_TEXT]!r}... ({len(value):,} characters)"
    if value is None:
        return "empty (null)"
    if isinstance(value, list | tuple):
        return f"a list of {len(value):,} item{'' if len(value) == 1 else 's'}"
    if isinstance(value, dict):
        keys = ", ".join(sorted(map(str, value))[:5]) + (", ..." if len(value) > 5 else "")
        return f"a mapping (fields: {keys or 'none'})"
    return f"a {type(value).__name__}"


def _not_a_number(
    value: Any, what: str, needs: str, reference: str = "${step}"
) -> CalculationError:
    hint = ""
    if isinstance(value, dict):  # the usual slip: the step, not the field of it
        field_ = min(map(str, value), default="field")
        hint = f"; use one of its fields, e.g. {reference[:-1]}.{field_}}}"
    return CalculationError(
        f"{what} is {describe_operand(value)}, not a number or quantity; {needs} needs numbers"
        + hint
    )


def _numeric(op: Callable[..., Any], symbol: str, *, truth: bool = False) -> Callable[..., Any]:
    """`op`, refusing any operand that is not a number before it runs (`truth`: or a bool).

    The last line of defence: text and lists never meet ``*``, ``+``, ``%`` or ``**``
    inside the evaluator, whatever produced them.
    """
    needs = "comparing" if symbol in ("==", "!=", "<", ">", "<=", ">=") else "arithmetic"

    def apply(*operands: Any) -> Any:
        for operand in operands:
            if not (is_number(operand) or (truth and isinstance(operand, bool))):
                raise _not_a_number(operand, f"an operand of {symbol}", needs)
        if needs == "comparing" and len(operands) == 2:
            operands = _comparable(*operands, symbol)
        return op(*operands)

    return apply


def _comparable(left: Any, right: Any, symbol: str) -> tuple[Any, Any]:
    """The two sides to compare: a count beside a plain number as its number (3 tables >= 2).

    A quantity beside a plain number is refused, saying why: ``${hours} >= 1`` for "more
    than an hour" (the suite's minutes-to-hours) failed with pint's bare "Cannot compare
    PlainQuantity and int", which said nothing of the fix.
    """
    sides = (normalize(left), normalize(right))
    plain = [not isinstance(side, pint.Quantity) for side in sides]
    if plain[0] == plain[1]:
        return left, right
    quantity = sides[1] if plain[0] else sides[0]
    number = sides[0] if plain[0] else sides[1]
    if number == 0:
        return left, right  # zero is zero in every unit: pint compares it (x >= 0)
    if not has_units(quantity):  # a count: its number is what is compared
        counted = quantity.magnitude
        return (number, counted) if plain[0] else (counted, number)
    unit = format_unit(quantity.units)
    raise CalculationError(
        f"{symbol} compares {format_value(quantity)} with the plain number "
        f"{format_value(number)}: write the number with its unit ({format_value(number)} {unit})"
    )


ROUNDING = ("ceil", "floor", "round")
# What a rounded quantity of a dimension is best divided by, and what the dimension is
# called, for the suggestion: the goal's own unit is better, the step's expect_unit too.
_DIVISORS = {
    "[time]": ("day", "a unit of time"),
    "[information]": ("GB", "a data size"),
    "[information] / [time]": ("MB/s", "a rate"),
    "[length]": ("m", "a length"),
    "[mass]": ("kg", "a mass"),
    "[currency_usd]": ("USD", "a sum of money"),
}


def in_dollars(value: Any) -> bool:
    """Whether a value is a sum in dollars, which rounds to whole dollars as people mean.

    "What would the price be ... (Round to the nearest integer)" of $120 grown 5% a year
    is 139 USD (GSM8K test 1016: `round(final_price)` refused, as if cents were as likely).
    Only dollars themselves: a sum in cents, or dollars per hour, still says which unit.
    """
    return isinstance(value, pint.Quantity) and str(value.units) in ("USD", "dollar")


def rounds_as_is(value: Any) -> bool:
    """Whether ceil, floor and round may take a value in its own unit: a count, or dollars."""
    return not has_units(value) or in_dollars(value)


def has_units(value: Any) -> bool:
    """Whether a value, reduced, still has units other than counts (``3 tables`` has none).

    ``2500 GB / (962.28 GB)`` has none: it is a plain number. ``2500 GB / (356.4 Mbps)``
    has: it is a time in GB/Mbps, and how it rounds depends on that unit.
    """
    value = normalize(value)
    return isinstance(value, pint.Quantity) and not is_count_unit(cast(pint.Unit, value.units))


def units_do_not_cancel(
    function: str, argument: str, value: Any, rest: str = "", unit: str | None = None
) -> UnitsDoNotCancelError:
    """The refusal of ``function(argument)`` whose value still has units, with the fix.

    The suggestion divides by one `unit` (a step's ``expect_unit``) when it has the value's
    dimension, else by a usual unit of that dimension.
    """
    value = normalize(value)
    dimension = str(value.dimensionality)
    own = format_unit(value.units)
    return _refusal(function, argument, format_value(value), own, dimension, rest, unit)


def _refusal(
    function: str,
    argument: str,
    shown: str,
    own: str,
    dimension: str,
    rest: str,
    unit: str | None,
) -> UnitsDoNotCancelError:
    divisor, what = _DIVISORS.get(dimension, ("", "a quantity of the same dimension"))
    expected = False
    if unit is not None:
        with suppress(UnitError):
            if str(parse_unit(unit, counts=False).dimensionality) == dimension:
                divisor, expected = unit.strip(), True
    if not divisor:  # no usual unit: the value's own, reduced to base units
        try:
            divisor = format_unit(registry().Quantity(1, _dimension_units(dimension)).units)
        except pint.PintError:  # a dimension with no base unit known here: the value's own
            divisor = own
    argument_ = argument if _is_atom(argument) else f"({argument})"
    example = f"{function}({argument_} / (1 {divisor}){', ' + rest if rest else ''})"
    if expected:  # the step expects a quantity in that unit: give it one
        example += f" * 1 {divisor}"
    message = (
        f"{function}() of {shown}: the units do not cancel, so the count would depend on "
        f"the unit; divide by {what}, or convert first, e.g. {example}"
    )
    return UnitsDoNotCancelError(
        message,
        function=function,
        argument=argument,
        shown=shown,
        unit=own,
        dimension=dimension,
        rest=rest,
    )


def suggest_unit(error: UnitsDoNotCancelError, unit: str | None) -> UnitsDoNotCancelError:
    """The same refusal, its suggestion in a step's ``expect_unit`` when that fits."""
    if unit is None:
        return error
    args = (error.function, error.argument, error.shown, error.unit, error.dimension, error.rest)
    return _refusal(*args, unit)


def without_magnitude(error: UnitsDoNotCancelError) -> UnitsDoNotCancelError:
    """The same refusal naming the value by its unit: before the run, magnitudes are 1."""
    shown = f"a value in {error.unit}"
    return _refusal(
        error.function, error.argument, shown, error.unit, error.dimension, error.rest, None
    )


def _dimension_units(dimension: str) -> str:
    """Base units of a dimension as pint reads it: ``[information] / [time]`` -> bit / s."""
    base = {"[time]": "second", "[length]": "meter", "[mass]": "kilogram"}
    base.update({"[information]": "bit", "[current]": "ampere", "[temperature]": "kelvin"})
    base.update({"[substance]": "mole", "[luminosity]": "candela", "[currency_usd]": "USD"})
    text = dimension
    for name, unit in base.items():
        text = text.replace(name, unit)
    return text


def _is_atom(text: str) -> bool:
    return REFERENCE_PATTERN.fullmatch(text) is not None or text.replace(".", "").isalnum()


def _rounding(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    def apply(value: Any, *rest: Any) -> Any:
        value = normalize(value)  # ceil(2500 GB / (962.28 GB)) is a plain 2.598
        if isinstance(value, pint.Quantity):
            if not rounds_as_is(value):  # the evaluator names the argument
                raise units_do_not_cancel(name, format_value(value), value)
            return registry().Quantity(func(value.magnitude, *rest), value.units)
        return func(value, *rest)

    return apply


def _round(value: float, digits: Any = 0) -> Any:
    digits = normalize(digits)
    if isinstance(digits, pint.Quantity) or digits != int(digits):
        raise CalculationError("round(x, digits): digits must be a whole number")
    return round(value, int(digits))


def _log(value: Any, base: Any = math.e) -> float:
    value, base = normalize(value), normalize(base)
    if isinstance(value, pint.Quantity) or isinstance(base, pint.Quantity):
        raise CalculationError("log needs dimensionless numbers")
    return math.log(value, base)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "abs": abs,
    "ceil": _rounding("ceil", math.ceil),
    "floor": _rounding("floor", math.floor),
    "log": _log,
    "max": max,
    "min": min,
    "round": _rounding("round", _round),
    "sqrt": lambda value: normalize(value) ** 0.5,
}


def _guard_number(value: Any) -> Any:
    magnitude = value.magnitude if isinstance(value, pint.Quantity) else value
    if isinstance(magnitude, int) and magnitude.bit_length() > MAX_INTEGER_BITS:
        raise CalculationError(f"intermediate result too large (over {MAX_INTEGER_BITS} bits)")
    return value


def _power(base: Any, exponent: Any) -> Any:
    exponent = normalize(exponent)
    if isinstance(exponent, pint.Quantity):
        raise CalculationError("an exponent must be a plain number")
    if abs(exponent) > MAX_EXPONENT:
        raise CalculationError(f"exponent {exponent} is larger than the limit of {MAX_EXPONENT}")
    return _guard_number(operator.pow(base, exponent))


def _checked(op: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    return lambda left, right: _guard_number(op(left, right))


# Below the smallest normal float a number keeps fewer digits, so a relative tolerance
# cannot hold there: values within a million of the smallest steps count as equal.
SUBNORMAL_SLACK = math.ulp(0.0) * 2**20


def close(left: Any, right: Any, tolerance: float = TOLERANCE) -> bool:
    """Equal within a relative tolerance, after expressing both in the same unit.

    Two integers compare exactly (they may be too large for a float).
    """
    left, right = normalize(left), normalize(right)
    if isinstance(left, pint.Quantity) or isinstance(right, pint.Quantity):
        if not (isinstance(left, pint.Quantity) and isinstance(right, pint.Quantity)):
            return False
        if not left.is_compatible_with(right):
            return False
        if left.units == right.units:  # no conversion: huge integers stay exact
            left, right = left.magnitude, right.magnitude
        else:
            left, right = left.magnitude, right.to(left.units).magnitude
    if isinstance(left, int) and isinstance(right, int):
        return left == right
    try:
        return math.isclose(float(left), float(right), rel_tol=tolerance, abs_tol=SUBNORMAL_SLACK)
    except OverflowError:
        return bool(left == right)


_OPERATORS: dict[type, Callable[..., Any]] = {
    ast.Add: _numeric(_checked(operator.add), "+"),
    ast.Sub: _numeric(_checked(operator.sub), "-"),
    ast.Mult: _numeric(_checked(operator.mul), "*"),
    ast.Div: _numeric(operator.truediv, "/"),
    ast.FloorDiv: _numeric(operator.floordiv, "//"),
    ast.Mod: _numeric(operator.mod, "%"),  # on text, % is formatting: "%0999999d" % 1
    ast.Pow: _numeric(_power, "**"),
    ast.USub: _numeric(operator.neg, "-"),
    ast.UAdd: _numeric(operator.pos, "+"),
    ast.Eq: _numeric(close, "==", truth=True),  # checks compare verdicts: true == true
    ast.NotEq: _numeric(lambda left, right: not close(left, right), "!=", truth=True),
    ast.Gt: _numeric(operator.gt, ">"),
    ast.Lt: _numeric(operator.lt, "<"),
    ast.GtE: _numeric(operator.ge, ">="),
    ast.LtE: _numeric(operator.le, "<="),
    ast.Not: operator.not_,
}
_EQUALITY = (ast.Eq, ast.NotEq)


def _refuse(what: str) -> Callable[[ast.AST], Any]:
    def handler(node: ast.AST) -> Any:
        raise CalculationError(f"{what} is not allowed in an expression")

    return handler


class _Evaluator(simpleeval.SimpleEval):  # type: ignore[misc]  # simpleeval ships no types
    def __init__(
        self,
        names: dict[str, Any],
        deadline: float,
        references: Mapping[str, Reference] | None = None,
    ) -> None:
        super().__init__(operators=_OPERATORS, functions=FUNCTIONS, names=names)
        self.deadline = deadline
        self.references = references or {}
        self.nodes[ast.Attribute] = _refuse("attribute access")
        self.nodes[ast.Subscript] = _refuse("subscripting")
        self.nodes[ast.Name] = self._name
        self.nodes[ast.Constant] = self._constant
        for refused in ("JoinedStr", "FormattedValue", "Lambda", "ListComp", "DictComp"):
            node_type = getattr(ast, refused, None)
            if node_type is not None:
                self.nodes[node_type] = _refuse(refused)

    def _eval(self, node: ast.AST) -> Any:
        if time.monotonic() > self.deadline:
            raise CalculationError(f"expression took longer than {TIME_LIMIT_SECONDS} s")
        return super()._eval(node)

    def _constant(self, node: ast.Constant) -> Any:
        if isinstance(node.value, bool) or not isinstance(node.value, int | float):
            raise CalculationError(f"only numbers are allowed, not {node.value!r}")
        return node.value

    def _name(self, node: ast.Name) -> Any:
        if node.id in self.names:
            return self.names[node.id]
        if node.id.startswith(_COUNT):  # a count noun after its number ("23 apples")
            return registry().Quantity(1, parse_unit(node.id.removeprefix(_COUNT)))
        try:  # a bare name is a unit, even one spelt like a function ("30 min")
            unit = parse_unit(node.id, counts=False)
        except UnitError as e:
            if node.id in self.functions:
                raise CalculationError(
                    f"'{node.id}' is a function: call it, e.g. {node.id}(x)"
                ) from None
            allowed = ", ".join(sorted(FUNCTIONS))
            if "_" in node.id:  # a step id written without ${...}
                hint = f"to use a step's value, write ${{{node.id}}}"
            elif not node.id.islower():  # a misspelt unit: the error suggests the spelling
                hint = str(e)
            else:
                hint = (
                    f"it is not a unit; to count {node.id}, write the number before it "
                    f"('23 {node.id}'); to use a step's value, write ${{{node.id}}}"
                )
            raise CalculationError(
                f"unknown name '{node.id}': {hint}. Use numbers, units "
                f"(6 h, 2.5 TB), ${{step}} references and the functions {allowed}"
            ) from None
        return registry().Quantity(1, unit)

    def _eval_call(self, node: ast.Call) -> Any:
        if not isinstance(node.func, ast.Name) or node.func.id not in self.functions:
            name = node.func.id if isinstance(node.func, ast.Name) else ast.unparse(node.func)
            raise CalculationError(
                f"call to '{name}' is not allowed (allowed: {', '.join(sorted(FUNCTIONS))})"
            )
        if node.keywords:
            raise CalculationError("keyword arguments are not allowed in an expression")
        func = self.functions[node.func.id]
        args = [self._eval(arg) for arg in node.args]
        for arg in args:  # max('abc') is 'c', and sqrt of a list fails deep in pint
            if not is_number(arg):
                raise _not_a_number(arg, f"an argument of {node.func.id}()", f"{node.func.id}()")
        if node.func.id in ROUNDING and args and not rounds_as_is(args[0]):
            rest = ", ".join(self._source(arg) for arg in node.args[1:])
            raise units_do_not_cancel(node.func.id, self._source(node.args[0]), args[0], rest)
        return func(*args)

    def _source(self, node: ast.AST) -> str:
        return written(node, self.references)


def written(node: ast.AST, references: Mapping[str, Reference]) -> str:
    """A subexpression as it was written: references by name, ``2500 GB`` unbracketed.

    `references` maps the parsed expression's placeholder names to their references
    (`Parsed.references`).
    """
    text = ast.unparse(node).replace(_COUNT, "")
    text = _PRODUCT.sub(r"\1 \2", text)
    for name, reference in references.items():
        text = re.sub(rf"\b{name}\b", reference.text.replace("\\", r"\\"), text)
    return text


_ALLOWED_NODES = (
    ast.Expression,
    ast.BinOp,
    ast.UnaryOp,
    ast.Compare,
    ast.BoolOp,
    ast.Call,
    ast.Name,
    ast.Constant,
    ast.Load,
    ast.operator,
    ast.unaryop,
    ast.cmpop,
    ast.boolop,
    ast.IfExp,
)


def _with_placeholders(text: str) -> tuple[str, dict[str, Reference]]:
    if _PLACEHOLDER in text:
        raise CalculationError(f"names starting with '{_PLACEHOLDER}' are reserved")
    placeholders: dict[str, str] = {}  # reference text -> name
    references: dict[str, Reference] = {}

    def swap(match: Any) -> str:
        ref = next(find_references(match.group(0)))
        name = placeholders.setdefault(ref.text, f"{_PLACEHOLDER}{len(placeholders)}")
        references[name] = ref
        return f" {name} "

    return REFERENCE_PATTERN.sub(swap, text), references


def _explicit_products(text: str) -> str:
    """Make quantities explicit, bracketed products: ``6 h`` -> ``(6 * h)``.

    A unit after a closing bracket multiplies too: ``(6 - 0) h`` -> ``(6 - 0) * h``.
    A number's unit runs on over ``/``, ``*`` and ``**``: ``x / 450 Mbit/s`` divides by
    the rate, and ``ceil(${size} / 500 GB)`` by the size, not by 500 and then times GB.
    ``%`` after a number is a percentage, a plain fraction (``90 %`` -> ``(90 / 100)``),
    when no operand follows it; followed by an operand it stays the remainder
    (``10 % 3``). A fraction, not pint's percent unit: ``450 Mbps * 90 %`` is 405 Mbps,
    not 40,500 Mbps·%.
    """
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(position: tuple[int, int]) -> int:
        return starts[position[0] - 1] + position[1]

    try:
        tokens = [
            token
            for token in tokenize.generate_tokens(io.StringIO(text).readline)
            if token.type not in (tokenize.NL, tokenize.COMMENT)
        ]
    except (tokenize.TokenError, SyntaxError) as e:
        raise CalculationError(f"invalid expression syntax: {e.args[0]}") from e
    edits: list[tuple[int, int, str]] = []  # (start, end, replacement), never overlapping
    index = 0
    while index < len(tokens) - 1:
        number, following = tokens[index], tokens[index + 1]
        if number.type == tokenize.NUMBER and _is_unit_name(tokens, index + 1):
            last = _unit_end(tokens, index + 1)
            edits.append((offset(number.start), offset(number.start), "("))
            edits.append((offset(following.start), offset(following.start), "* "))
            for token in tokens[index + 1 : last + 1]:
                if token.type == tokenize.NAME and _is_count_noun(token.string):
                    edits.append((offset(token.start), offset(token.start), _COUNT))
            edits.append((offset(tokens[last].end), offset(tokens[last].end), ")"))
            index = last + 1
            continue
        if number.string == ")" and _is_unit_name(tokens, index + 1):  # "(6 - 0) h"
            edits.append((offset(following.start), offset(following.start), "* "))
        if number.type == tokenize.NUMBER and following.string == "%":
            after = tokens[index + 2] if index + 2 < len(tokens) else None
            if not _is_operand(after):
                edits.append((offset(number.start), offset(number.start), "("))
                edits.append((offset(following.start), offset(following.end), "/ 100)"))
        index += 1
    for begin, finish, replacement in reversed(edits):
        text = f"{text[:begin]}{replacement}{text[finish:]}"
    return text


def _is_count_noun(name: str) -> bool:
    """A word that is no unit but names what is counted (``apples``, ``people``)."""
    try:
        parse_unit(name, counts=False)
    except UnitError:
        try:
            return is_count_unit(parse_unit(name))
        except UnitError:
            return False
    return False


_KEYWORDS = frozenset({"and", "or", "not", "if", "else", "in", "is"})


def _is_unit_name(tokens: list[tokenize.TokenInfo], index: int) -> bool:
    """A name that is not a reference placeholder and not a function being called."""
    token = tokens[index]
    called = index + 1 < len(tokens) and tokens[index + 1].string == "("
    if token.string in _KEYWORDS:  # "${a} > 0 and ${b} > 0": no unit named "and"
        return False
    return token.type == tokenize.NAME and not token.string.startswith(_PLACEHOLDER) and not called


def _unit_end(tokens: list[tokenize.TokenInfo], index: int) -> int:
    """The last token of the unit that starts at `index`: ``Mbit / s``, ``m ** 2``."""
    while index + 2 < len(tokens):
        operator_, operand = tokens[index + 1].string, index + 2
        unit_follows = operator_ in ("/", "*") and _is_unit_name(tokens, operand)
        power_follows = operator_ == "**" and tokens[operand].type == tokenize.NUMBER
        if not (unit_follows or power_follows):
            break
        index = operand
    return index


def _is_operand(token: tokenize.TokenInfo | None) -> bool:
    """Whether a token starts an operand: a number, a name or an opening bracket.

    A sign does not count: ``25 % + 1`` is 1.25; write ``10 % (-3)`` for a remainder.
    """
    if token is None:
        return False
    return token.type in (tokenize.NUMBER, tokenize.NAME) or token.string == "("


def parse(text: str, bindings: Mapping[str, Any] | None = None) -> Parsed:
    """Check length and syntax, bind references to names, and parse.

    References without a binding are left unbound; evaluating them is an error.
    """
    if len(text) > MAX_EXPRESSION_LENGTH:
        raise CalculationError(
            f"expression is {len(text):,} characters; the limit is {MAX_EXPRESSION_LENGTH:,}"
        )
    placed, references = _with_placeholders(text)
    prepared = _explicit_products(dollars(placed)).strip()
    try:
        tree = ast.parse(prepared, mode="eval")
    except SyntaxError as e:
        raise CalculationError(f"invalid expression syntax: {e.msg}") from e
    except (RecursionError, MemoryError, ValueError) as e:  # deeply nested or NUL bytes
        raise CalculationError("invalid expression syntax: too deeply nested") from e
    bindings = bindings or {}
    names = {name: bindings[ref.text] for name, ref in references.items() if ref.text in bindings}
    return Parsed(tree, names, references)


def parse_bound(data: Any) -> Parsed:
    """A recorded calculation's expression (an action's ``expression``), parsed with its values."""
    bound = Expression.from_data(data)
    return parse(bound.text, bound.bindings)


def check_syntax(text: str) -> None:
    """Refuse, without evaluating, what `evaluate` would refuse (references allowed)."""
    parsed = parse(text)
    evaluator = _Evaluator(dict.fromkeys(parsed.references, 1), math.inf)
    for node in ast.walk(parsed.tree):
        if not isinstance(node, _ALLOWED_NODES):
            evaluator.nodes.get(type(node), _refuse(type(node).__name__))(node)
        elif isinstance(node, ast.Constant):
            evaluator._constant(node)
        elif isinstance(node, ast.Call) and (
            not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS or node.keywords
        ):
            evaluator._eval_call(node)
        elif isinstance(node, ast.Name) and not _is_call_target(parsed.tree, node):
            evaluator._name(node)


def _is_call_target(tree: ast.AST, name: ast.Name) -> bool:
    return any(isinstance(node, ast.Call) and node.func is name for node in ast.walk(tree))


def _operands(node: ast.AST) -> Iterator[tuple[ast.AST, bool, str]]:
    """Every operand position under `node`: (operand, a bool may stand there, what needs it)."""
    for inner in ast.walk(node):
        if isinstance(inner, ast.BinOp):
            yield inner.left, False, "arithmetic"
            yield inner.right, False, "arithmetic"
        elif isinstance(inner, ast.UnaryOp) and not isinstance(inner.op, ast.Not):
            yield inner.operand, False, "arithmetic"
        elif isinstance(inner, ast.Compare):
            sides = [inner.left, *inner.comparators]
            for op, left, right in zip(inner.ops, sides, sides[1:], strict=False):
                truth = isinstance(op, _EQUALITY)
                yield left, truth, "comparing"
                yield right, truth, "comparing"
        elif isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name):
            for arg in inner.args:
                yield arg, False, f"{inner.func.id}()"


def _value_names(node: ast.AST) -> Iterator[ast.Name]:
    """The names whose value an operand can be: itself, or a branch of ``if``/``and``/``or``."""
    if isinstance(node, ast.Name):
        yield node
    elif isinstance(node, ast.IfExp):
        yield from _value_names(node.body)
        yield from _value_names(node.orelse)
    elif isinstance(node, ast.BoolOp):
        for value in node.values:
            yield from _value_names(value)


def _check_operands(node: ast.AST, parsed: Parsed) -> None:
    suspects = {name: value for name, value in parsed.names.items() if not is_number(value)}
    if not suspects:  # the usual case: no walk of the tree for bindings that are all numbers
        return
    for operand, truth, needs in _operands(node):
        for name in _value_names(operand):
            if name.id not in suspects:
                continue  # a number, a unit, or a reference bound later (or not at all)
            value = suspects[name.id]
            if not (truth and isinstance(value, bool)):
                text = parsed.references[name.id].text
                raise _not_a_number(value, f"operand `{text}`", needs, text)


def _mismatch(node: ast.AST, parsed: Parsed, error: pint.DimensionalityError) -> str:
    """Which two terms of a sum or comparison are of two kinds, as written, else pint's words.

    "Cannot convert from 'minute' to 'dimensionless'" alone left a new user (2026-12-06)
    to guess which of ``(${end} - ${start} - ${unpaid}) / 60`` had no unit.
    """
    evaluator = _Evaluator(parsed.names, time.monotonic() + TIME_LIMIT_SECONDS, parsed.references)
    for part in ast.walk(node):
        if isinstance(part, ast.BinOp) and isinstance(part.op, ast.Add | ast.Sub):
            pair = (part.left, part.right)
        elif isinstance(part, ast.Compare) and len(part.comparators) == 1:
            pair = (part.left, part.comparators[0])
        else:
            continue
        try:
            left, right = (evaluator._eval(side) for side in pair)
        except Exception:  # noqa: BLE001 - an inner term's own failure: look further in
            continue
        kinds = [_kind(value) for value in (left, right)]
        if None in kinds or _dimension(left) == _dimension(right):
            continue  # h and min add: not the terms at fault
        # kinds, not values: before the run a step's value is a stand-in of its unit
        shown = [
            f"`{_written(side, parsed)}` is {kind}" for side, kind in zip(pair, kinds, strict=True)
        ]
        return f"{shown[0]} and {shown[1]}: one unit of one kind, or none, for both ({error})"
    return str(error)


def _dimension(value: Any) -> str:
    return str(value.dimensionality) if isinstance(value, pint.Quantity) else "dimensionless"


def _kind(value: Any) -> str | None:
    if isinstance(value, pint.Quantity) and not value.dimensionless:
        return f"in {format_unit(value.units)} ({value.dimensionality})"
    return "a plain number" if is_number(value) else None


def _written(node: ast.AST, parsed: Parsed) -> str:
    """A term as the expression wrote it: its references as `${...}`, not placeholders."""
    references = parsed.references

    def original(match: re.Match[str]) -> str:
        reference = references.get(match.group(0))
        return match.group(0) if reference is None else reference.text

    def unit(match: re.Match[str]) -> str:  # `2 TiB` is read as `2 * TiB`: as written
        number, name = match.groups()
        return match.group(0) if name in references else f"{number} {name}"

    text = re.sub(r"\b(\d[\d.]*) \* ([A-Za-z_]\w*)\b", unit, ast.unparse(node))
    return re.sub(r"\b\w+\b", original, text)


def check_operands(expression: Expression) -> None:
    """Refuse, naming the reference, a bound value that is used as a number but is none.

    Nothing is evaluated, so a text bound into ``${x} * 100000000`` is refused before
    the string could be built. References without a binding are not checked.
    """
    parsed = parse(expression.text, expression.bindings)
    _check_operands(parsed.tree.body, parsed)


def evaluate(expression: Expression | str, bindings: Mapping[str, Any] | None = None) -> Any:
    """Evaluate an expression; its references take their values from its bindings."""
    if isinstance(expression, Expression):
        bindings = {**expression.bindings, **(bindings or {})}
        expression = expression.text
    parsed = parse(expression, bindings)
    return evaluate_node(parsed.tree.body, parsed)


def evaluate_node(node: ast.AST, parsed: Parsed) -> Any:
    """Evaluate one (sub)expression of a parsed expression."""
    unbound = [
        parsed.references[n.id].text
        for n in ast.walk(node)
        if isinstance(n, ast.Name) and n.id in parsed.references and n.id not in parsed.names
    ]
    if unbound:
        raise CalculationError(f"unresolved reference {unbound[0]}")
    _check_operands(node, parsed)
    evaluator = _Evaluator(parsed.names, time.monotonic() + TIME_LIMIT_SECONDS, parsed.references)
    try:
        result = evaluator._eval(node)
    except CalculationError:
        raise
    except pint.DimensionalityError as e:
        raise CalculationError(f"units do not match: {_mismatch(node, parsed, e)}") from e
    except (pint.PintError, StepgraphError) as e:
        raise CalculationError(str(e)) from e
    except (ArithmeticError, ValueError, TypeError) as e:
        raise CalculationError(f"{type(e).__name__}: {e}") from e
    except simpleeval.InvalidExpression as e:
        raise CalculationError(str(e)) from e
    except RecursionError as e:
        raise CalculationError("the expression is nested too deeply") from e
    try:
        result = normalize(result)
    except OverflowError:  # pint converts units in floats: (10 gal) ** 400 overflowed there
        raise CalculationError("the result is too large to convert its units") from None
    if not (is_number(result) or isinstance(result, bool)):  # "${x}" alone, x a text
        raise CalculationError(
            f"the result is {describe_operand(result)}, not a number, quantity or truth value"
        )
    magnitude = result.magnitude if isinstance(result, pint.Quantity) else result
    if isinstance(magnitude, float) and not math.isfinite(magnitude):
        raise CalculationError(f"the result is {magnitude}, not a finite number (an overflow?)")
    return result


__all__ = [
    "FUNCTIONS",
    "MAX_EXPONENT",
    "MAX_EXPRESSION_LENGTH",
    "MAX_INTEGER_BITS",
    "TIME_LIMIT_SECONDS",
    "TOLERANCE",
    "Expression",
    "ROUNDING",
    "Parsed",
    "bind",
    "check_operands",
    "check_syntax",
    "close",
    "describe_operand",
    "evaluate",
    "evaluate_node",
    "has_units",
    "is_number",
    "parse",
    "suggest_unit",
    "units_do_not_cancel",
    "without_magnitude",
    "written",
]

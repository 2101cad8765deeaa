r"""The model's own worked answer: a witness the cross-check holds a plan's answer against.

The model is asked as a user would ask it without stepgraph (``prompts/worked.md``: think
step by step, then ``ANSWER: <number>``), in a conversation of its own, so the plan it
made is not shown and cannot be copied. Its arithmetic is not trusted; only its final
number and the numbers along the way are compared with what the plan's code computed.
A small model that reads a goal right but slips in its sums is then confirmed by the
plan, and a plan that answers another question is caught when the words disagree.

A code model often answers in Python and then writes the output it imagines (Qwen2.5-Coder
1.5B: the right program for GSM8K train 6942, "```output 202```" under it, where the
program gives 322). `computed` reads such a program's straight-line arithmetic with `ast`
and works it out with the expression language of `calculate`: never executed as Python,
and anything but assignments of arithmetic to names and a ``print`` is not read at all.
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass

from stepgraph.exceptions import StepgraphError
from stepgraph.tools.expression import Expression, evaluate

# The final answer of a model's free text: `ANSWER: <number>`, else `\boxed{...}`, else the
# last number; signed, since GSM8K has negative answers.
_SIGNED = re.compile(r"(?<![\w.])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?")
_ANSWER_LINE = re.compile(r"answer\s*\**\s*[:=]\s*(?P<rest>[^\n]*)", re.IGNORECASE)
_BOXED = re.compile(r"\\boxed\{(?P<rest>[^{}]*)\}")


def final_number(text: str) -> float | None:
    r"""The number a free-text answer ends with; None when it has none.

    After the last ``ANSWER:``, else in the last ``\boxed{}``, else the text's last number.
    This is how an answer given without stepgraph (a model asked to think step by step and
    end with ``ANSWER: <number>``) is read, so it can be judged by `value_matches`.
    """
    for pattern in (_ANSWER_LINE, _BOXED):
        for match in reversed(list(pattern.finditer(text))):
            number = _SIGNED.search(match.group("rest"))
            if number is not None:
                return float(number.group(0).replace(",", ""))
    numbers = _SIGNED.findall(text)
    return float(numbers[-1].replace(",", "")) if numbers else None


def stated_numbers(text: str) -> list[float]:
    """Every number the worked answer writes down, in order (``2,500`` is 2500)."""
    return [float(n.replace(",", "")) for n in _SIGNED.findall(text)]


@dataclass(frozen=True)
class Slip:
    """A worked answer's last sum written wrong: what it wrote, and what the sum is."""

    written: str  # "180 + 300 + 400 = 980"
    value: float  # 880


# "180 + 300 + 400 = 980 dollars", "\\( 4 \\times 45 = 180 \\)": numbers and operators only
_NUMERAL = r"\$?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
# Found where each starts (a lookahead), so the links of a chain overlap: "19 \\times 105
# \\times 5 = 19 \\times 525 = 10025" holds "19 \\times 525 = 10025" (GSM8K train 3900, a slip
# hidden behind the link before it), never a piece of a number ("25 + 5" in "125 + 5", "3"
# of "$3" but for "$$3" display math) nor after a sign ("-3 + 5 = 2" is no "3 + 5").
_SUM_START = r"(?<![\d.,-])(?!(?<=\$)\d)"
_SUM_TERMS = rf"{_NUMERAL}(?:\s*(?:[-+*/×÷x]|\\times|\\cdot|\\div)\s*{_NUMERAL})+"
_SUM = re.compile(
    rf"{_SUM_START}(?=(?P<terms>{_SUM_TERMS})\s*=\s*(?P<result>{_NUMERAL})(?!\d|\.\d))"
)
_OPERATORS = {"×": "*", "x": "*", "\\times": "*", "\\cdot": "*", "÷": "/", "\\div": "/"}
# A sum that is one piece of a longer one: "6 + 6 \\times 6 = 6 + 36 = 42" holds no
# "6 + 6 \\times 6 = 6" (GSM8K test 1185, read as a slip worth 42), nor "(2 + 4) x 6 + 1 = 37"
# a "6 + 1 = 37". Before it, only an operator after a number or a bracket: a bullet's "- "
# starts a sum.
_OPERATOR_BEFORE = re.compile(r"(?:[\d)}]\s*[-+*/×÷x]|\\times|\\cdot|\\div)\s*$")
_OPERATOR_AFTER = re.compile(r"\s*(?:[-+*/×÷]|\\times|\\cdot|\\div)\s*[$\d(]")


def slipped_final(text: str, final: float) -> Slip | None:
    """The last written sum whose result is the answer's `final` number, where it is wrong.

    A small model reads a goal right and adds wrong: "180 + 300 + 400 = 980" (GSM8K test
    128, both worked answers); the plan's 880 is then no dissent from the words' reading.
    Only the very sum that gives the final number, only numbers and operators (no names,
    no brackets): one the engine can work out as written.
    """
    sums = [
        m
        for m in _SUM.finditer(text)
        if _number(m.group("result")) == final
        and not _OPERATOR_BEFORE.search(text, 0, m.start())
        and not _OPERATOR_AFTER.match(text, m.end("result"))
    ]
    if not sums:
        return None
    terms = sums[-1].group("terms").replace("$", "").replace(",", "")
    for written, operator in _OPERATORS.items():
        terms = terms.replace(written, operator)
    try:
        value = evaluate(terms)
    except (StepgraphError, ZeroDivisionError, OverflowError):
        return None
    if not isinstance(value, int | float) or math.isclose(value, final, rel_tol=1e-6):
        return None
    written = text[sums[-1].start("terms") : sums[-1].end("result")]
    return Slip(" ".join(written.split()), float(value))


def _number(text: str) -> float:
    return float(text.replace(",", "").replace("$", ""))


# "ANSWER: total_per_day" written inside the program, as the prompt asks of the text: the
# program's own print of it (GSM8K test 191: unread, the imagined output 2.45 stood for
# the 5 the program gives, and a wrong plan was confirmed).
_ANSWER_IN_CODE = re.compile(
    r"^(?P<indent>[ \t]*)answer\s*:\s*(?P<value>[A-Za-z_][\w.]*)\s*$", re.IGNORECASE | re.MULTILINE
)
_PYTHON_BLOCK = re.compile(r"```(?:python|py)[^\n]*\n(?P<code>.*?)```", re.DOTALL | re.IGNORECASE)
# The functions of the expression language a program may call, by its Python spelling.
_FUNCTIONS = {"round", "abs", "min", "max", "ceil", "floor", "sqrt", "int", "float"}


@dataclass(frozen=True)
class Computed:
    """A worked answer's program worked out: the value it prints and every value on the way."""

    final: float
    values: list[float]


def computed(text: str) -> Computed | None:
    """The last Python block of a worked answer, worked out; None where it cannot be read.

    Each statement must be ``name = arithmetic`` over numbers and earlier names, a
    ``print`` of one of them (the final value: the last printed, else the last assigned),
    an import (whose names are no numbers), or a comment. Anything else (loops, conditions,
    strings, a function of its own) leaves the answer to its words.
    """
    blocks = list(_PYTHON_BLOCK.finditer(text))
    if not blocks:
        return None
    code = _ANSWER_IN_CODE.sub(r"\g<indent>print(\g<value>)", blocks[-1].group("code"))
    try:
        return _worked_out(ast.parse(code))
    except (SyntaxError, RecursionError, MemoryError, OverflowError):
        # a sum of thousands of terms, a 400-digit number: the answer is left to its words
        return None


def _worked_out(tree: ast.Module) -> Computed | None:
    scope: dict[str, float] = {}
    printed: float | None = None
    last: float | None = None
    for node in tree.body:
        # Any import: a name it brings is no number of the scope, so a statement using
        # one (sympy's `sp.symbols`) is refused below; one left unused changes nothing
        # (train 152: `import sympy as sp`, never used, left a right program unread).
        if isinstance(node, ast.Import | ast.ImportFrom):
            continue
        if isinstance(node, ast.Expr) and is_print(node.value):
            assert isinstance(node.value, ast.Call)
            shown = printed_value(node.value)
            printed = None if shown is None else _value(shown, scope)
            if printed is None:
                return None
            continue
        if not (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            return None
        value = _value(node.value, scope)
        if value is None:
            return None
        scope[node.targets[0].id] = last = value
    final = printed if printed is not None else last
    return None if final is None else Computed(final, [*scope.values(), final])


def is_print(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "print"
        and not node.keywords
    )


def printed_value(call: ast.Call) -> ast.expr | None:
    """The one value a print shows; None for none or several.

    ``print(total)``, ``print("Total:", total)`` and ``print(f"Total: {total}")`` show one.
    """
    shown: list[ast.expr] = []
    for arg in call.args:
        if isinstance(arg, ast.JoinedStr):
            shown += [v.value for v in arg.values if isinstance(v, ast.FormattedValue)]
        elif not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
            shown.append(arg)
    return shown[0] if len(shown) == 1 else None


def _value(node: ast.expr, scope: dict[str, float]) -> float | None:
    """One expression of the program, in the expression language; None if it is not one."""
    bindings: dict[str, float] = {}
    for part in ast.walk(node):
        if isinstance(part, ast.Constant) and not isinstance(part.value, int | float):
            return None
        if isinstance(part, ast.Constant) and isinstance(part.value, bool):
            return None
        if isinstance(part, ast.Attribute) and not (
            isinstance(part.value, ast.Name) and part.value.id == "math"
        ):
            return None
        if isinstance(part, ast.Subscript | ast.JoinedStr | ast.Lambda | ast.Starred):
            return None
    text = _spelled(node, scope, bindings)
    if text is None:
        return None
    try:
        value = evaluate(Expression(text, bindings))
    except (StepgraphError, ArithmeticError, ValueError, TypeError):
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _spelled(node: ast.expr, scope: dict[str, float], bindings: dict[str, float]) -> str | None:
    """The expression as `calculate` reads it: names bound as references, math.f as f."""

    class Spell(ast.NodeTransformer):
        failed = False

        def visit_Call(self, call: ast.Call) -> ast.AST:
            name = call.func.attr if isinstance(call.func, ast.Attribute) else None
            name = call.func.id if isinstance(call.func, ast.Name) else name
            if name not in _FUNCTIONS or call.keywords:
                self.failed = True
                return call
            call.args = [self.visit(arg) for arg in call.args]
            if name in ("int", "float"):  # int() of a count or a share: floor (no negatives)
                return call.args[0] if name == "float" and len(call.args) == 1 else _floor(call)
            call.func = ast.Name(id=name, ctx=ast.Load())
            return call

        def visit_Name(self, name: ast.Name) -> ast.AST:
            if name.id not in scope:
                self.failed = True
                return name
            bindings[f"${{{name.id}}}"] = scope[name.id]
            return ast.Name(id=f"__ref_{name.id}", ctx=ast.Load())

    spell = Spell()
    tree = spell.visit(ast.parse(ast.unparse(node), mode="eval"))
    if spell.failed:
        return None
    text = ast.unparse(tree)
    return re.sub(r"__ref_(\w+)", lambda m: f"${{{m.group(1)}}}", text)


def _floor(call: ast.Call) -> ast.AST:
    call.func = ast.Name(id="floor", ctx=ast.Load())
    return call


__all__ = ["Computed", "computed", "final_number", "stated_numbers"]

"""Plans in lines: the compact syntax a code model writes naturally, read into a plan.

One line per step, Python's own syntax, parsed with `ast` and never executed::

    # the data per night, then whole nights
    per_night: "GB" = link * window * utilisation * (1 - lost)   # one night's share
    nights = ceil(data / per_night)
    assert nights * per_night >= data, "the nights cover the data"
    answer = f"{nights} nights ({per_night} per night)"

- ``name = expression`` is a `calculate` step; names are the goal's inputs (read by the
  engine, `_read_goal`) or earlier steps, as in Python (a name assigned again is a new
  step; ``name += expression`` is one too); a unit is a string: ``"6 h"``;
  ``name: "GB" = ...`` asks for the output in GB;
- ``name = tool(arg=..., ...)`` calls any other tool;
- ``name = 24  # why`` is a constant the goal does not state, and why (the comment);
- ``assert condition, "why"`` is a check; ``answer = f"..."`` the answer template;
- ``unused(name, "why")`` says a number of the goal is not needed, and why;
- a comment on a line of its own is the plan's thought; one after a step is its thought.

The result is the dictionary of a JSON plan (``${name}`` and ``${inputs.name}``
references), validated, journaled, approved and shown as any plan.
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from stepgraph.model import shortened
from stepgraph.planner._lines_source import (
    code_of,
    comments_of,
    is_colon_step,
    second_readings,
    source_line,
    too_large,
)
from stepgraph.planner._read_goal import unique_name
from stepgraph.verifiers import ClockRange

_ANSWER_FIELD = re.compile(r"\{([A-Za-z_]\w*)((?:\.\w+)*)(?::[^{}]*)?\}")


def _constant_number(node: ast.AST) -> float | None:
    """A number written as it is (``13``, ``2.5``); None for anything else, ``True`` too."""
    value = node.value if isinstance(node, ast.Constant) else None
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


class LinesError(ValueError):
    """A plan in lines that cannot be read; the message names the line."""


def read_lines(
    text: str,
    inputs: Collection[str],
    tools: Collection[str] | Mapping[str, Sequence[str]],
    *,
    numbers: Mapping[str, float] | None = None,
    converted: Mapping[str, Sequence[float]] | None = None,
    shares: Collection[str] = (),
    bound: list[str] | None = None,
    choices: Mapping[int, str] | None = None,
    ambiguous: list[Ambiguous] | None = None,
    clocks: Mapping[str, ClockRange] | None = None,
    measured: Collection[str] = (),
) -> dict[str, Any]:
    """The plan a text of lines describes, as the data of a JSON plan.

    `inputs` may map each name to its number as the goal writes it, for ``unused(name, ...)``;
    `tools` may map each tool to its parameters in order, so ``unit_convert(x, "h")`` reads
    as ``unit_convert(value=x, to_unit="h")``. `numbers` are the read inputs' numbers: a
    literal in an expression that is the number of exactly one of them is read as that
    input (a small model types the goal's 10 for ``usd_10``), and said so in `bound`;
    `shares` name those that are plain shares ("half": 0.5), which ``x / 2`` may divide by.
    A literal that is the number of several read inputs is bound to none, and listed in
    `ambiguous` in the order read; `choices` binds the n-th such literal to the input named.
    `converted` holds each read quantity's numbers in the goal's other units (0.5 for "50
    cents" beside dollars): a literal that is one of them is listed in `ambiguous` too, its
    exact input, if it has one, read until a choice says otherwise. `clocks` are the read
    clock ranges by input: ``end - start`` of one's two times is that input. `measured` name
    the read inputs that have a unit: the 1 of ``1 - share`` is the whole, not "1 Gbps".
    """
    source = code_of(text.replace("\0", ""))  # ast refuses NUL with a ValueError
    try:
        try:
            tree = ast.parse(source)
        except SyntaxError as first:
            for candidate in second_readings(source):
                try:
                    tree, source = ast.parse(candidate), candidate
                    break
                except SyntaxError:
                    continue
            else:
                raise first from None
        if (huge := too_large(tree)) is not None:
            shown = shortened(str(huge.value))
            raise LinesError(
                f"line {huge.lineno}: the number {shown} is too large to compute with: write "
                "the goal's quantities with their units instead of factors"
            )
        reader = _Reader(inputs, tools, comments_of(source), numbers or {}, shares)
        reader.converted = converted or {}
        reader.choices = choices or {}
        reader.clocks = clocks or {}
        reader.measured = set(measured)
        data = reader.read(tree)
        if bound is not None:
            bound += reader.bound
        if ambiguous is not None:
            ambiguous += reader.ambiguous
        return data
    except SyntaxError as e:
        shown = source_line(source, e.lineno)
        raise LinesError(f"line {e.lineno}: not a plan line ({e.msg}): {shown}") from None
    except (RecursionError, MemoryError):  # "a + a + ... + a" a hundred thousand times
        raise LinesError("the plan is too deeply nested: one short line per step") from None


def _exact_reciprocal(share: float, divisor: float) -> bool:
    """Whether `share` is exactly 1 / `divisor` in binary (a half, a quarter; not a third)."""
    return float(share).as_integer_ratio() == (1, divisor)


@dataclass(frozen=True)
class Ambiguous:
    """A literal that is the number of several read inputs: `candidates`, in reading order.

    `converted` are the candidates whose number the literal is only in another of the
    goal's units.
    """

    where: str
    value: float
    candidates: tuple[str, ...]
    converted: tuple[str, ...] = ()

    @property
    def default(self) -> str | None:
        """The input read where no choice is made: the one whose stated number it is."""
        stated = [name for name in self.candidates if name not in self.converted]
        return stated[0] if len(stated) == 1 else None


class _Reader:
    def __init__(
        self,
        inputs: Collection[str],
        tools: Collection[str],
        comments: dict[int, tuple[str, bool]],
        numbers: Mapping[str, float],
        shares: Collection[str] = (),
    ) -> None:
        self.scope = {name: f"${{inputs.{name}}}" for name in inputs}
        self.numbers = numbers
        self.shares = set(shares)
        self.bound: list[str] = []
        self.ambiguous: list[Ambiguous] = []
        self.choices: Mapping[int, str] = {}
        self.converted: Mapping[str, Sequence[float]] = {}
        self.inputs = dict(inputs) if isinstance(inputs, Mapping) else {}
        self.tools = set(tools) - {"calculate"}
        self.parameters = (
            {name: list(names) for name, names in tools.items()}
            if isinstance(tools, Mapping)
            else {}
        )
        self.comments = comments
        self.steps: list[dict[str, Any]] = []
        self.checks: list[dict[str, str]] = []
        self.constants: dict[str, dict[str, Any]] = {}
        self.answer: str | None = None
        self.unused: list[dict[str, str]] = []
        self.clocks: Mapping[str, ClockRange] = {}
        self.measured: set[str] = set()  # read inputs with a unit ("1 Gbps")
        self.literals: dict[str, float] = {}  # names given a number alone, as last assigned
        self.clock_ends: set[str] = set()  # names read as a clock range's two times

    def read(self, tree: ast.Module) -> dict[str, Any]:
        for node in tree.body:
            self._statement(node)
        self._drop_clock_ends()
        if not self.steps:
            raise LinesError("the plan has no steps: write one line per step, name = expression")
        thought = " ".join(text for text, alone in self.comments.values() if alone)
        plan: dict[str, Any] = {"thought": thought, "steps": self.steps}
        if self.constants:
            plan["constants"] = self.constants
        if self.checks:
            plan["checks"] = self.checks
        if self.unused:
            plan["unused"] = self.unused
        # With no answer line the last value is the answer, as the prompt says: a model
        # asked to word it wrote "1. seeds_per_row: 80 (step 2)" (GSM8K train 4978), whose
        # 1 and 2 the answer check then refused.
        plan["answer"] = self.answer or f"${{{self.steps[-1]['id']}}}"
        return plan

    def _statement(self, node: ast.stmt) -> None:
        where = f"line {node.lineno}"
        if isinstance(node, ast.Assert):
            why = node.msg.value if isinstance(node.msg, ast.Constant) else "a reverse check"
            self.checks.append({"expression": self._expression(node.test, where), "why": str(why)})
            return
        call = node.value if isinstance(node, ast.Expr) else None
        if isinstance(call, ast.Call) and _is_unused(call):
            self.unused.append(self._unused(call, where))
            return
        target: ast.expr
        value: ast.expr
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            # `total += extra`, as a code model writes it: a new step, total + extra
            earlier = ast.Name(id=node.target.id, ctx=ast.Load())
            target, unit = node.target, None
            value = ast.copy_location(ast.BinOp(earlier, node.op, node.value), node)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value, unit = node.targets[0], node.value, None
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
            unit = _annotated_unit(node.annotation, where)
        elif is_colon_step(node):
            # `factor: 1 - lost`, a colon typed for "=" (the suite's transfer-nights and
            # acme-holders, refused as no plan line in every run); `x: "GB"` stays refused
            assert isinstance(node, ast.AnnAssign)
            target, value, unit = node.target, node.annotation, None
        else:
            raise LinesError(
                f'{where}: a plan line is name = expression, assert or answer = f"..."'
            )
        if not isinstance(target, ast.Name):
            raise LinesError(f"{where}: assign to one plain name, e.g. total = a + b")
        name = target.id
        self.literals.pop(name, None)  # a name given anew is no longer its old number
        if name == "answer":
            self.answer = self._answer(value, where)
            return
        value = self._hoisted(value, where)
        alias = _field_path(value) if unit is None else None
        if alias is not None and not self.scope.get(alias[0], "").startswith("${inputs."):
            # `largest = holders["largest"]`: a name for a field of a step's record, as
            # Python binds it; no step, since calculate computes numbers, not records.
            reference = self._reference(alias[0], where)
            self.scope[name] = f"{reference[:-1]}.{'.'.join(alias[1])}}}"
            return
        comment = self.comments.get(node.lineno, ("", True))
        literal = isinstance(value, ast.Constant) and not isinstance(value.value, bool)
        if (number := _constant_number(value)) is not None:
            self.literals[name] = number  # `start = 13`: a clock's end, maybe
        if literal and comment[0] and not comment[1]:
            assert isinstance(value, ast.Constant)
            if isinstance(value.value, int | float | str):
                self.constants[name] = {"value": value.value, "why": comment[0]}
                self.scope[name] = f"${{inputs.{name}}}"
                return
        step_id = self._new_id(name)
        step: dict[str, Any] = {"id": step_id}
        if comment[0] and not comment[1]:
            step["thought"] = comment[0]
        if (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Name)
            and value.func.id in self.tools
        ):
            step["tool"] = value.func.id
            step["args"] = self._arguments(value, where)
        else:
            step["tool"] = "calculate"
            step["args"] = {"expression": self._expression(value, where)}
        if unit:
            step["expect_unit"] = unit
        self.steps.append(step)
        self.scope[name] = f"${{{step_id}}}"

    def _hoisted(self, value: ast.expr, where: str) -> ast.expr:
        """`value` with each tool call inside it made a step of its own, named by its tool.

        ``list_shareholders(find_company("Acme"))`` and ``find_company("Acme")["id"]`` are
        how Python nests calls; a plan runs each call as a step, so the inner one comes
        first and the outer one refers to it (``${find_company}``, ``${find_company.id}``).
        The line's own call, if it is one, stays the line's step.
        """
        reader = self

        class _Calls(ast.NodeTransformer):
            def visit_Call(self, call: ast.Call) -> ast.AST:
                self.generic_visit(call)  # the innermost call first
                if not (isinstance(call.func, ast.Name) and call.func.id in reader.tools):
                    return call
                step_id = reader._new_id(call.func.id)
                args = reader._arguments(call, where)
                reader.steps.append({"id": step_id, "tool": call.func.id, "args": args})
                reader.scope[step_id] = f"${{{step_id}}}"
                return ast.Name(id=step_id, ctx=ast.Load())

        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
            value.args = [_Calls().visit(arg) for arg in value.args]
            for keyword in value.keywords:
                keyword.value = _Calls().visit(keyword.value)
            return value
        return cast(ast.expr, _Calls().visit(value))

    def _unused(self, call: ast.Call, where: str) -> dict[str, str]:
        """``unused(three, "it counts the classes listed")``: a number the answer needs not."""
        if len(call.args) != 2 or not isinstance(call.args[1], ast.Constant):
            raise LinesError(f'{where}: write unused(name, "why the answer does not need it")')
        number = call.args[0]
        if isinstance(number, ast.Name):
            written = self.inputs.get(number.id, number.id)
        elif isinstance(number, ast.Constant):
            written = str(number.value)
        else:
            raise LinesError(f'{where}: write unused(name, "why the answer does not need it")')
        return {"number": written, "why": str(call.args[1].value)}

    def _new_id(self, name: str) -> str:
        return unique_name(name, {step["id"] for step in self.steps})

    def _arguments(self, call: ast.Call, where: str) -> dict[str, Any]:
        tool = ast.unparse(call.func)
        parameters = self.parameters.get(tool, [])
        if len(call.args) > len(parameters) or any(
            isinstance(arg, ast.Starred) for arg in call.args
        ):
            raise LinesError(f"{where}: name each argument of {tool}(...)")
        # In the tool's own order, as Python would bind them: a code model writes them so.
        args: dict[str, Any] = {
            name: self._argument(arg, where)
            for name, arg in zip(parameters, call.args, strict=False)
        }
        for keyword in call.keywords:
            if keyword.arg is None:
                raise LinesError(f"{where}: name each argument, no **")
            if keyword.arg in args:
                raise LinesError(f"{where}: {tool}(...) is given '{keyword.arg}' twice")
            args[keyword.arg] = self._argument(keyword.value, where)
        return args

    def _argument(self, node: ast.expr, where: str) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return self._reference(node.id, where)
        if isinstance(node, ast.List | ast.Tuple):
            return [self._argument(item, where) for item in node.elts]
        return self._expression(node, where)

    def _reference(self, name: str, where: str) -> str:
        if name not in self.scope and (alike := _spelled_alike(name, self.scope)):
            # `usd_25` for `usd_2_5` ($2.50), `dumplings_1` for `dumpling_1`: one name only
            self.bound.append(f"{where}: '{name}' read as {alike}, the only name spelled so")
            return self.scope[alike]
        if name not in self.scope:
            known = ", ".join(sorted(self.scope)) or "none"
            raise LinesError(f"{where}: '{name}' is neither an input nor an earlier step ({known})")
        return self.scope[name]

    def _expression(self, node: ast.expr, where: str) -> str:
        """The expression as `calculate` reads it: names bound, unit strings unquoted.

        A field of an earlier step's record, written as Python reads one (``rows[0]``,
        ``company["id"]``, ``company.id``), is the reference ``${company.id}``.
        """
        reader = self
        fields: dict[str, tuple[str, list[str]]] = {}  # placeholder -> (name, path)

        class _Fields(ast.NodeTransformer):
            def _field(self, chain: ast.Attribute | ast.Subscript) -> ast.AST:
                found = _field_path(chain)
                if found is None or reader.scope.get(found[0], "").startswith("${inputs."):
                    return self.generic_visit(chain)  # an input has no fields: refused below
                placeholder = f"__field_{len(fields)}"
                fields[placeholder] = found
                return ast.Name(id=placeholder, ctx=ast.Load())

            def visit_Attribute(self, chain: ast.Attribute) -> ast.AST:
                return self._field(chain)

            def visit_Subscript(self, chain: ast.Subscript) -> ast.AST:
                return self._field(chain)

        node = _Fields().visit(ast.parse(ast.unparse(node), mode="eval")).body
        for part in ast.walk(node):
            if isinstance(part, ast.Attribute | ast.Subscript | ast.Lambda):
                raise LinesError(f"{where}: only arithmetic on names, e.g. ceil(a / b)")
            if isinstance(part, ast.Call) and not isinstance(part.func, ast.Name):
                raise LinesError(f"{where}: call functions by name only, e.g. ceil(a / b)")

        named: set[str] = set()

        class _Bind(ast.NodeTransformer):
            def visit_Name(self, name: ast.Name) -> ast.AST:
                return ast.Name(id=f"__ref_{name.id}", ctx=name.ctx)

            def visit_Constant(self, constant: ast.Constant) -> ast.AST:
                before = len(reader.ambiguous)
                found = reader._input_of(constant.value, where)
                if found is None:
                    return constant
                named.add(found)
                chosen = len(reader.ambiguous) > before and before in reader.choices
                if not chosen:  # a chosen reading is said by its chooser
                    reader.bound.append(f"{where}: the goal's {constant.value!r} read as {found}")
                return ast.Name(id=f"__lit_{found}", ctx=ast.Load())

            def visit_Call(self, call: ast.Call) -> ast.AST:
                # A function's own name (ceil, min) is no reference, round's digits no input.
                digits = isinstance(call.func, ast.Name) and call.func.id == "round"
                call.args = [
                    self.visit(arg) if not (digits and n) else arg
                    for n, arg in enumerate(call.args)
                ]
                return call

            def visit_BinOp(self, operation: ast.BinOp) -> ast.AST:
                if reader._whole_of(operation):  # `1 - lost`: the whole, not "1 Gbps"
                    operation.right = self.visit(operation.right)
                    return operation
                clock = reader._clock_of(operation)
                if clock is not None:  # `5 - 1` for "from 1 to 5 PM": the range's hours
                    named.add(clock)
                    shown = ast.unparse(operation)
                    reader.bound.append(f"{where}: {shown} read as {clock}, the goal's hours")
                    return ast.Name(id=f"__lit_{clock}", ctx=ast.Load())
                fraction = reader._fraction_of(operation)
                if fraction is not None:  # `1/2` for "a 1/2 cup of oil": the cup, not a 2
                    named.add(fraction)
                    shown = ast.unparse(operation)
                    reader.bound.append(f"{where}: the goal's {shown} read as {fraction}")
                    return ast.Name(id=f"__lit_{fraction}", ctx=ast.Load())
                share = reader._share_of(operation)
                if share is not None:  # `x / 2` for "half": times the goal's share
                    named.add(share)
                    divisor = ast.unparse(operation.right)
                    floored = isinstance(operation.op, ast.FloorDiv)
                    sign = "//" if floored else "/"
                    read = f"floor(... * {share})" if floored else f"* {share}"
                    reader.bound.append(f"{where}: {sign} {divisor} read as {read}")
                    left = self.visit(operation.left)
                    times = ast.BinOp(left, ast.Mult(), ast.Name(f"__lit_{share}", ast.Load()))
                    if floored:  # `oranges // 2` for "half the oranges": still whole
                        return ast.Call(ast.Name("floor", ast.Load()), [times], [])
                    return times
                operation.left = self.visit(operation.left)
                if not isinstance(operation.op, ast.Pow):  # a square is no input
                    operation.right = self.visit(operation.right)
                return operation

        bound = _Bind().visit(ast.parse(ast.unparse(node), mode="eval"))
        text = ast.unparse(bound)
        for name in sorted(
            {n.id for n in ast.walk(node) if isinstance(n, ast.Name)},
            key=lambda name: (-len(name), name),  # longest first; a set's order varies by run
        ):
            if name in fields:
                step, path = fields[name]
                reference = reader._reference(step, where)
                text = text.replace(f"__ref_{name}", f"{reference[:-1]}.{'.'.join(path)}}}")
            elif not _is_call_name(node, name):
                text = text.replace(f"__ref_{name}", reader._reference(name, where))
        for name in sorted(named, key=lambda name: (-len(name), name)):
            # The goal's input itself, even where a step took its name.
            text = text.replace(f"__lit_{name}", f"${{inputs.{name}}}")
        return re.sub(r"'([^']*\d[^']*)'", r"(\1)", text)  # "6 h" -> (6 h)

    def _clock_of(self, operation: ast.BinOp) -> str | None:
        """The read clock range that ``end - start`` takes the hours of, if exactly one does.

        Each side is a number or a name given one alone (``end = 17``), the range's two
        times as the goal writes them (5 - 1 for "1 to 5 PM") or on a 24-hour clock
        (17 - 13), and their difference is the range's hours, as the program means it: "9
        AM to 1 PM" written ``1 - 9`` is -8 to Python, and stays so.
        """
        if not isinstance(operation.op, ast.Sub):
            return None
        end, start = self._number_of(operation.left), self._number_of(operation.right)
        if end is None or start is None:
            return None
        found = [
            name
            for name, clock in self.clocks.items()
            if (start, end) in (clock.written, clock.ends)
            and math.isclose(end - start, clock.hours)  # Python's own value: 1 - 9 is no 4 h
        ]
        if len(found) != 1:
            return None
        sides = (operation.left, operation.right)
        self.clock_ends |= {side.id for side in sides if isinstance(side, ast.Name)}
        return found[0]

    def _drop_clock_ends(self) -> None:
        """Drop the steps and constants that only held a clock range's two times.

        ``start = 13`` and ``end = 17`` read as the range where ``end - start`` is taken are
        used nowhere else; kept, their 13 and 17 would be numbers the goal does not state
        (and are no numbers to compute with: a time of day is no quantity).
        """
        for name in self.clock_ends:
            reference = self.scope.get(name)
            if reference is None:
                continue
            used = json.dumps([self.steps, self.checks, self.answer]).count(reference)
            if used:
                continue
            if reference == f"${{inputs.{name}}}":
                self.constants.pop(name, None)
            else:
                self.steps = [step for step in self.steps if f"${{{step['id']}}}" != reference]

    def _number_of(self, node: ast.expr) -> float | None:
        if isinstance(node, ast.Name):
            return self.literals.get(node.id)
        return _constant_number(node)

    def _whole_of(self, operation: ast.BinOp) -> bool:
        """Whether `operation` is ``1 - share`` or ``1 + share``, its 1 the whole, no input.

        The share is a read one (``lost`` for "12% lost"), by name or by its number. Bound
        to the goal's "1 Gbps link", the whole made a right day's volume, ``link * day *
        utilisation * (1 - traffic)``, Gbps less a share, refused for its units (a transfer
        goal written for tuning, the 1.5B model). Only where each read 1 has a unit: the 1
        of "1 pie ... ate a third" may be the pie, and stays the goal's 1.
        """
        left, right = operation.left, operation.right
        if not isinstance(operation.op, ast.Add | ast.Sub) or _constant_number(left) != 1:
            return False
        if any(number == 1 and name not in self.measured for name, number in self.numbers.items()):
            return False
        if isinstance(right, ast.Name):
            return right.id in self.shares
        share = _constant_number(right)
        return share is not None and any(
            math.isclose(share, self.numbers[name], rel_tol=1e-12)
            for name in self.shares
            if name in self.numbers
        )

    def _fraction_of(self, operation: ast.BinOp) -> str | None:
        """The read input that ``1/2`` writes as the goal does ("a 1/2 cup"), if one does.

        Its parts are no inputs: the 2 of "1/2 cup of oil" was read as "2 cups of flour"
        (GSM8K train 2153, refused for a count in 1/cup).
        """
        parts = (operation.left, operation.right)
        if not isinstance(operation.op, ast.Div) or not all(
            isinstance(part, ast.Constant) and type(part.value) is int for part in parts
        ):
            return None
        written = f"{operation.left.value}/{operation.right.value}"  # type: ignore[attr-defined]
        found = [
            name  # a quantity stated twice is its first input's, as `numbers` holds it
            for name, first in self.inputs.items()
            if first == written and name in self.numbers
        ]
        return found[0] if len(found) == 1 else None

    def _share_of(self, operation: ast.BinOp) -> str | None:
        """The read share (0.5 for "half") that ``x / 2`` divides by, if exactly one is.

        "twice as many ... half the number" reads 2 and 0.5: the 2 of ``jude / 2`` is the
        half, not the twice it would be bound to (GSM8K train 2913: "half" refused unused).
        ``oranges // 2`` is the half as well, kept whole (GSM8K test 121).
        """
        divisor = operation.right
        if not (
            isinstance(operation.op, ast.Div | ast.FloorDiv)
            and isinstance(divisor, ast.Constant)
            and isinstance(divisor.value, int | float)
            and not isinstance(divisor.value, bool)
            and divisor.value not in (0, 1)
        ):
            return None
        value = divisor.value
        found = [
            name
            for name, number in self.numbers.items()
            if name in self.shares and math.isclose(number * value, 1, rel_tol=1e-6)
        ]
        if len(found) != 1:
            return None
        if isinstance(operation.op, ast.FloorDiv) and not _exact_reciprocal(
            self.numbers[found[0]], value
        ):
            return None  # floor(33 * 0.333...) is 10: `// 3` stays a floor division
        return found[0]

    def _input_of(self, value: object, where: str = "") -> str | None:
        """The one read input whose number `value` is, if exactly one is, or as chosen."""
        if isinstance(value, bool) or not isinstance(value, int | float) or not self.numbers:
            return None
        found = [
            name
            for name, number in self.numbers.items()
            if math.isclose(value, number, rel_tol=1e-12, abs_tol=0.0)
        ]
        converted = [
            name
            for name, numbers in self.converted.items()
            if name not in found
            and any(math.isclose(value, number, rel_tol=1e-9) for number in numbers)
        ]
        if len(found) < 2 and not converted:
            return found[0] if found else None
        literal = Ambiguous(where, float(value), (*found, *converted), tuple(converted))
        self.ambiguous.append(literal)
        return self.choices.get(len(self.ambiguous) - 1, literal.default)

    def _answer(self, node: ast.expr, where: str) -> str:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            template = node.value
        elif isinstance(node, ast.JoinedStr):
            template = "".join(
                str(part.value) if isinstance(part, ast.Constant) else "{" + _field(part) + "}"
                for part in node.values
                if isinstance(part, ast.Constant | ast.FormattedValue)
            )
        else:
            raise LinesError(f'{where}: the answer is a string, e.g. answer = f"{{total}} GB"')

        def referenced(match: re.Match[str]) -> str:
            reference = self._reference(match.group(1), where)
            return f"{reference[:-1]}{match.group(2)}}}" if match.group(2) else reference

        return _ANSWER_FIELD.sub(referenced, template)


def _field(part: ast.FormattedValue) -> str:
    """An answer's field as the template writes it: ``rows[0]["held"]`` is ``rows.0.held``.

    A lookup's count in the answer (``{shareholders.count} shareholders``) was left as
    the text itself, braces and all (the suite's acme-holders, the 1.5B model).
    """
    found = _field_path(part.value)
    return ".".join([found[0], *found[1]]) if found else ast.unparse(part.value)


def _annotated_unit(annotation: ast.expr, where: str) -> str | None:
    """The unit of ``name: "GB" = ...``; None for a number written there (``legs: "2"``).

    A small model copies the annotation as a slot for a step's value; a number is no unit,
    so it is read as no unit at all rather than refused.
    """
    text = annotation.value if isinstance(annotation, ast.Constant) else None
    if isinstance(text, bool) or not isinstance(text, str | int | float):
        raise LinesError(f'{where}: write the unit as a string: name: "GB" = ...')
    return None if not isinstance(text, str) or _is_number(text) else text


def _field_path(chain: ast.expr) -> tuple[str, list[str]] | None:
    """``rows[0]["held"]`` -> ("rows", ["0", "held"]); None for anything but such a chain."""
    path: list[str] = []
    while isinstance(chain, ast.Attribute | ast.Subscript):
        if isinstance(chain, ast.Attribute):
            path.append(chain.attr)
        else:
            key = chain.slice
            if not isinstance(key, ast.Constant) or isinstance(key.value, bool):
                return None
            if isinstance(key.value, int) and key.value >= 0:
                path.append(str(key.value))
            elif isinstance(key.value, str) and re.fullmatch(r"[A-Za-z0-9_]+", key.value):
                path.append(key.value)
            else:
                return None
        chain = chain.value
    if not isinstance(chain, ast.Name) or not path:
        return None
    return chain.id, path[::-1]


def _is_number(text: str) -> bool:
    try:
        float(text.replace(",", ""))
    except ValueError:
        return not text.strip()
    return True


def _spelled_alike(name: str, scope: Collection[str]) -> str | None:
    """The one name of `scope` that is `name` but for underscores, case and plurals.

    `dumplings_1` for the read input `dumpling_1` ("1 more dumpling"), `usd_25` for
    `usd_2_5`: a word's trailing "s" and the underscores are not told apart, the
    numbers are. Only where exactly one name of `scope` is spelled so.
    """
    alike = [known for known in scope if _spelling(known) == _spelling(name)]
    return alike[0] if len(alike) == 1 else None


def _spelling(name: str) -> str:
    words = [word.casefold() for word in name.split("_") if word]
    return "".join(word[:-1] if len(word) > 3 and word.endswith("s") else word for word in words)


def _is_unused(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "unused"
    )


def _is_call_name(tree: ast.expr, name: str) -> bool:
    """Whether `name` appears only as a called function (ceil, min), never as a value."""
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    uses = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == name]
    return bool(uses) and all(id(n) in called for n in uses)

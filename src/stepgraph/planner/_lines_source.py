"""The source of plan lines: the code in a model's answer, and what else it may have meant.

Fences and prose go (`code_of`); a refused text is read again as the model may have meant
it (`second_readings`: quantities quoted, indents dropped, spaced names joined); a number
no float holds is found before anything computes with it (`too_large`).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from keyword import iskeyword

from stepgraph.model import fits_a_float

_FENCE = re.compile(r"```[a-zA-Z]*\n?")
_REFERENCE = re.compile(r"\$\{(?:inputs\.)?([A-Za-z_]\w*)\}")


def too_large(tree: ast.AST) -> ast.Constant | None:
    """A number literal no float holds (``1`` and 400 zeros, ``1e999``), or None.

    A small model padded a program with ever larger factors (transfer training goal,
    2026-12-05); the first comparison with the goal's numbers raised OverflowError and the
    run ended as an internal error.
    """
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or isinstance(node.value, bool):
            continue
        if isinstance(node.value, int | float) and not fits_a_float(node.value):
            return node
    return None


def second_readings(source: str) -> list[str]:
    """What a refused text may have meant, to be parsed in turn; anything else is the model's.

    A code model writes a quantity as it reads ("150 USD"): quoted, it is the unit string
    the syntax asks for. It indents a line at random (GSM8K train 1284: " showers = 2"):
    plan lines hold no blocks, so an indent means nothing.
    """
    quoted = _quote_quantities(source)
    dedented = "\n".join(line.lstrip() for line in source.splitlines()) + "\n"
    found = [quoted] if quoted != source else []
    if dedented != source:
        found += [dedented, _quote_quantities(dedented)]
    joined = _joined_names(dedented)
    if joined != dedented:
        found += [joined, _quote_quantities(joined)]
    return found


# A name written with a space where its underscore goes, as a line's target: "almond
# butter_cost: "USD" = ..." (GSM8K train 2121).
_SPACED_TARGET = re.compile(
    r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*(?: +[A-Za-z_][A-Za-z0-9_]*)+)\s*(?::|=(?!=))", re.MULTILINE
)


def _joined_names(source: str) -> str:
    """The text with each spaced target name joined by underscores, wherever it is written."""
    names = {
        match.group("name")
        for match in _SPACED_TARGET.finditer(source)
        if not iskeyword(match.group("name").split()[0])
    }
    for name in sorted(names, key=len, reverse=True):
        source = re.sub(rf"(?<![\w.]){re.escape(name)}(?!\w)", re.sub(" +", "_", name), source)
    return source


def _quote_quantities(source: str) -> str:
    """Each number followed by a unit word (``150 USD``, ``2.5 TB``) written as a string."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return source
    lines = source.splitlines(keepends=True)
    spans: list[tuple[int, int, int]] = []  # line, start column, end column
    for number, word, after in zip(tokens, tokens[1:], [*tokens[2:], None], strict=False):
        if number.type != tokenize.NUMBER or word.type != tokenize.NAME:
            continue
        if number.start[0] != word.start[0] or iskeyword(word.string):
            continue
        if (
            after is not None
            and after.string in ("(", ".", "=")
            and after.start[0] == word.start[0]
        ):
            continue  # a call, an attribute or a keyword argument, not a unit
        spans.append((number.start[0], number.start[1], word.end[1]))
    for row, start, end in reversed(spans):
        line = lines[row - 1]
        lines[row - 1] = f'{line[:start]}"{line[start:end]}"{line[end:]}'
    return "".join(lines)


def code_of(text: str) -> str:
    """The lines of code: fences removed, and prose lines (no '=', no '#') dropped.

    A ``${name}`` reference, as JSON plans and the feedback write them, is the name itself.
    """
    text = _FENCE.sub("", text)
    text = "\n".join(
        _REFERENCE.sub(r"{\1}" if line.lstrip().startswith("answer") else r"\1", line)
        for line in text.splitlines()
    )
    kept = []
    open_brackets, continued = 0, False  # a line that goes on: its next one is code too
    for line in text.splitlines():
        stripped = line.strip()
        is_code = stripped.startswith(("#", "assert ", "unused(")) or "=" in stripped
        is_code = is_code or is_colon_step(stripped) or open_brackets > 0 or continued
        kept.append(line if is_code or not stripped else "")
        if is_code and not stripped.startswith("#"):
            code = _STRING.sub('""', stripped).partition("#")[0].rstrip()
            open_brackets = max(0, open_brackets + _depth(code))
            continued = code.endswith("\\")
    return "\n".join(kept).strip() + "\n"


_STRING = re.compile(r"\"[^\"]*\"|'[^']*'")


def _depth(code: str) -> int:
    """The brackets a line of code opens and leaves open (negative: closes earlier ones).

    A step written over several lines, ``total = (a * b +`` then ``c * d)``, or with a
    backslash: its later lines hold no '=' and are no prose (GSM8K test 1193: the sum's
    lines were dropped as prose and the first refused as never closed).
    """
    return sum(code.count(c) for c in "([{") - sum(code.count(c) for c in ")]}")


def is_colon_step(line: str | ast.stmt) -> bool:
    """Whether a line is ``name: expression`` with an operation or a call after the colon.

    A colon typed for "=" (``factor: 1 - lost``); prose such as ``Answer: 42`` or
    ``Note: this is it`` is none.
    """
    if isinstance(line, str):
        try:
            parsed = ast.parse(line).body if ":" in line else []
        except SyntaxError:
            return False
        if len(parsed) != 1:
            return False
        line = parsed[0]
    return (
        isinstance(line, ast.AnnAssign)
        and line.value is None
        and isinstance(line.target, ast.Name)
        and isinstance(line.annotation, ast.BinOp | ast.Call)
    )


def source_line(source: str, number: int | None) -> str:
    lines = source.splitlines()
    return lines[number - 1].strip() if number and 0 < number <= len(lines) else ""


def comments_of(source: str) -> dict[int, tuple[str, bool]]:
    """Comments by line number, each with whether it stands on a line of its own."""
    found: dict[int, tuple[str, bool]] = {}
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT:
                alone = not token.line[: token.start[1]].strip()
                found[token.start[0]] = (token.string.lstrip("#").strip(), alone)
    except (tokenize.TokenError, SyntaxError):
        pass  # ast.parse accepted it; a comment lost here costs only a thought
    return found


def replace_node(old: ast.expr, new: ast.expr, parents: dict[ast.AST, ast.AST]) -> None:
    """`old` replaced by `new` where its parent holds it."""
    parent = parents[old]
    for field, value in ast.iter_fields(parent):
        if value is old:
            setattr(parent, field, new)
        elif isinstance(value, list):
            setattr(parent, field, [new if item is old else item for item in value])
    parents[new] = parent

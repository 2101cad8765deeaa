"""Plans written as plan lines: the worked examples, and plans and messages shown back."""

from __future__ import annotations

import re
from typing import Any


def plan_lines(plan: dict[str, Any]) -> str:
    """A JSON plan written in lines: the worked examples and plans shown back to the model."""

    def named(text: str) -> str:
        def python(match: re.Match[str]) -> str:  # a record's field as Python reads it
            return re.sub(r"\.(\d+)", r"[\1]", match.group(1))

        return re.sub(r"\$\{(?:inputs\.)?([^}]+)\}", python, text)

    lines = [f"# {plan['thought']}"] if plan.get("thought") else []
    for name, constant in plan.get("constants", {}).items():
        lines.append(f"{name} = {constant['value']!r}  # {constant['why']}")
    for step in plan.get("steps", []):
        unit = f': "{step["expect_unit"]}"' if step.get("expect_unit") else ""
        args = step.get("args", {})
        if step["tool"] == "calculate" and set(args) == {"expression"}:
            right = _quoted_units(named(str(args["expression"])))
        else:
            shown = ", ".join(
                f"{key}={_shown_argument(value, named)}" for key, value in args.items()
            )
            right = f"{step['tool']}({shown})"
        thought = f"  # {step['thought']}" if step.get("thought") else ""
        lines.append(f"{step['id']}{unit} = {right}{thought}")
    for check in plan.get("checks", []):
        lines.append(f"assert {named(check['expression'])}, {check.get('why', '')!r}")
    if plan.get("answer"):
        answer = re.sub(r"\$\{(?:inputs\.)?([^}]+)\}", r"{\1}", plan["answer"])
        lines.append(f"answer = f{answer!r}")
    return "\n".join(lines)


# A JSON plan's fields, named in the static checks' messages, as plan lines write them:
# a user of lines (or of programs) cannot act on `under "constants"`.
_LINES_TERMS = [
    (
        re.compile(r'needs (\S+), declare it under "constants" with why'),
        r"needs \1, give it a line of its own with why: name = \1  # why",
    ),
    (
        re.compile(r'list (?:it|its number) under "unused" with (why[^;.]*)'),
        r'write unused(name, "\1")',
    ),
    (re.compile(r"\(expect_unit, unit_convert\)"), '(name: "unit" = ..., or unit_convert)'),
]
_PARENTHESISED_QUANTITY = re.compile(r"\(\s*(\d[\d_]*(?:\.\d+)?)\s+([A-Za-z%][A-Za-z0-9/]*)\s*\)")


def as_lines_text(text: str) -> str:
    """A message about a JSON plan, its examples written as plan lines write them.

    ``ceil((${inputs.data} / ${per_hour}) / (1 day))`` becomes
    ``ceil((data / per_hour) / "1 day")``: references are names, quantities are strings.
    """
    named = re.sub(r"\$\{(?:inputs\.)?([^}]+)\}", r"\1", text)
    for json_terms, lines_terms in _LINES_TERMS:
        named = json_terms.sub(lines_terms, named)
    prose, marker, example = named.partition("e.g. ")
    if not marker:
        return named
    unwrapped = _PARENTHESISED_QUANTITY.sub(lambda m: f"{m.group(1)} {m.group(2)}", example)
    return prose + marker + _quoted_units(unwrapped)


def _shown_argument(value: Any, named: Any) -> str:
    if isinstance(value, str) and re.fullmatch(r"\$\{[^}]+\}", value):
        return str(named(value))
    return repr(value)


_QUANTITY = re.compile(
    r"(?<![\w.\"])(\d[\d_]*(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*([A-Za-z%][A-Za-z0-9/]*)"
)


def _quoted_units(expression: str) -> str:
    """``800 GB / (1 Gbit/s)`` -> ``"800 GB" / "1 Gbit/s"``: in lines a unit is a string."""
    return _QUANTITY.sub(lambda m: f'"{m.group(1)} {m.group(2)}"', expression)

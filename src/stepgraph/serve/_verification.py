"""The verification panel's content: every verdict of every round, with the values compared.

A verdict's values are journaled as text, each as its tool wrote it (``962.28 GB``
beside ``1,093,500 MB``); the panel reads them back and writes every quantity of one
dimension in the unit of the first of its kind, as the declared checks' descriptions do
(`stepgraph.units.format_alike`). Text that is not a number with a known unit is shown
as it is: reading it never defines a unit.
"""

from __future__ import annotations

import re
from typing import Any

import pint

from stepgraph.journal import RunDigest, Verdict
from stepgraph.units import format_alike, registry

KIND_LABELS = {
    "reverse": "reverse calculation",
    "check": "declared check",
    "unit": "unit check",
    "answer": "answer trace",
    "coverage": "goal coverage",
    "cross_check": "cross-check",
}
_NUMBER_HEAD = re.compile(r"^[-+]?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?")
_QUANTITY = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?(?:\s*[^\d\s].*)?")


def _unit_text(text: str) -> str | None:
    """What follows the number of a number-like text (``GB`` of ``962.28 GB``), else None."""
    match = _QUANTITY.fullmatch(text.strip())
    if match is None:
        return None
    return _NUMBER_HEAD.sub("", text.strip()).strip()


def _read(text: str) -> Any:
    """A quantity or a number when the text is one in known units, else the text."""
    if not _QUANTITY.fullmatch(text.strip()):
        return text
    try:
        value: Any = registry().Quantity(text.replace(",", "").strip())
    except (pint.PintError, TypeError, ValueError, AttributeError, SyntaxError):
        return text
    if isinstance(value, pint.Quantity) and value.dimensionless and str(value.units) == "":
        return value.magnitude
    return value


def shown_values(values: dict[str, str]) -> list[tuple[str, str]]:
    """The values a verdict compared, each quantity of a dimension in one unit."""
    units = {_unit_text(text) for text in values.values()} - {None}
    if len(units) <= 1:  # written in one unit already (most are): nothing to read back
        return list(values.items())
    read = [_read(text) for text in values.values()]
    numbers = [value for value in read if not isinstance(value, str)]
    formatted = iter(format_alike(numbers))
    shown = [text if isinstance(value, str) else next(formatted) for value, text in
             zip(read, values.values(), strict=True)]  # fmt: skip
    return list(zip(values, shown, strict=True))


def _verdict(verdict: Verdict) -> dict[str, Any]:
    return {
        "step": verdict.step,
        "kind": verdict.kind,
        "label": KIND_LABELS.get(verdict.kind, verdict.kind),
        "passed": verdict.passed,
        "description": verdict.description,
        "values": shown_values(verdict.values),
        "tolerance": verdict.tolerance,
    }


def verification_of(found: RunDigest) -> list[dict[str, Any]]:
    """The rounds that were checked, last one last, each with its verdicts in journal order.

    The last round is what the run's status and its steps' states say; earlier rounds are
    what sent the plan back for repair.
    """
    rounds: dict[int, list[Verdict]] = {}
    for verdict in found.verdicts:
        rounds.setdefault(verdict.round, []).append(verdict)
    last = max(rounds, default=0)
    return [
        {
            "round": number,
            "last": number == last,
            "passed": sum(v.passed for v in verdicts),
            "failed": sum(not v.passed for v in verdicts),
            "verdicts": [_verdict(v) for v in verdicts],
        }
        for number, verdicts in sorted(rounds.items())
    ]

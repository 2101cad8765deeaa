"""Tracing a written answer: every number in it must come from a step or an input."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

import pint

from stepgraph.model import Verdict, VerdictKind

# Numbers as people write them: 2,500 / 962.28 / -3 / 1.5e3. Bracketed step names
# ("[nights]") are removed first, so ids with digits are not read as numbers.
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w])")
_BRACKETED = re.compile(r"\[[^\]]*\]")
TRACE_TOLERANCE = 5e-3  # an answer may round 962.2800001 to 962.28 or 962.3


def _candidates(value: Any) -> list[float]:
    if isinstance(value, bool):
        return []
    if isinstance(value, pint.Quantity):
        return [float(value.magnitude)]
    if isinstance(value, int | float):
        return [float(value)]
    if isinstance(value, dict):
        return [n for item in value.values() for n in _candidates(item)]
    if isinstance(value, list | tuple):
        return [n for item in value for n in _candidates(item)]
    if isinstance(value, str):
        return [float(m.replace(",", "")) for m in _NUMBER.findall(value)]
    return []


def trace_answer(text: str, sources: Mapping[str, Any]) -> Verdict:
    """Find, for each number in `text`, the steps or inputs that produced it."""
    trace: dict[str, str] = {}
    untraced: list[str] = []
    for token in _NUMBER.findall(_BRACKETED.sub(" ", text)):
        number = float(token.replace(",", ""))
        origin = [
            name
            for name, value in sources.items()
            if any(math.isclose(number, c, rel_tol=TRACE_TOLERANCE) for c in _candidates(value))
        ]
        if origin:
            trace[token] = ", ".join(origin)
        else:
            untraced.append(token)
    description = (
        f"every number in the answer comes from a step ({len(trace)} traced)"
        if not untraced
        else f"numbers no step produced: {', '.join(untraced)}"
    )
    return Verdict(
        kind=VerdictKind.ANSWER,
        passed=not untraced,
        description=description,
        values={**trace, **{token: "untraced" for token in untraced}},
        tolerance=TRACE_TOLERANCE,
    )

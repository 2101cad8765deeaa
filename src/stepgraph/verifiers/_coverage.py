"""Coverage of a typed goal: every number the goal states must be used by the plan.

A plan whose numbers agree with each other can still ignore the goal: a real small
model answered "A 2 TB disk is 65% full. How many GB are free?" with 2,000 GB, a plan
that never used 65%. For a goal typed with its numbers (a task without inputs), each
number of the goal must appear in some step's arguments or a check: as written, or for a
percentage as its fraction or complement (12% as 0.12, 0.88 or 88), or for a clock range
("00:00 to 06:00") as its length. A number the plan does not use makes the run
unverified, never refused: the repair round tells the model which one.
"""

from __future__ import annotations

import io
import re
import tokenize
from typing import Any

from stepgraph.model import StepGraph, Verdict, VerdictKind

_CLOCK_RANGE = re.compile(r"(\d{1,2}):(\d{2})\s*(?:to|-|until|and|–)\s*(\d{1,2}):(\d{2})")
_NUMBER = re.compile(r"(?<![\w.:])(\d[\d,]*(?:\.\d+)?)(\s*%)?(?![\w:]*\d)")
_TOLERANCE = 1e-6


def _goal_numbers(goal: str) -> list[tuple[str, list[float]]]:
    """Each number of the goal as written, with the values a plan may use for it."""
    found: list[tuple[str, list[float]]] = []
    ranges = []
    for match in _CLOCK_RANGE.finditer(goal):
        start = int(match.group(1)) + int(match.group(2)) / 60
        end = int(match.group(3)) + int(match.group(4)) / 60
        found.append((match.group(0), [(end - start) % 24 or 24]))
        ranges.append(match.span())
    for match in _NUMBER.finditer(goal):
        if any(start <= match.start() < end for start, end in ranges):
            continue
        number = float(match.group(1).replace(",", ""))
        if number == 0:
            continue  # nothing to use
        values = [number]
        if match.group(2):
            values += [number / 100, 1 - number / 100, 100 - number]
        found.append((match.group(0).strip(), values))
    return found


def _numbers(value: Any) -> list[float]:
    """Numeric literals in arguments: numbers, and numbers inside expressions or quantities."""
    if isinstance(value, bool):
        return []
    if isinstance(value, int | float):
        return [float(value)]
    if isinstance(value, dict):
        return [n for item in value.values() for n in _numbers(item)]
    if isinstance(value, list | tuple):
        return [n for item in value for n in _numbers(item)]
    if not isinstance(value, str):
        return []
    found = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(value).readline):
            if token.type == tokenize.NUMBER:
                try:
                    found.append(float(token.string.replace("_", "")))
                except ValueError:
                    continue  # hex, complex: no number a goal states
    except (tokenize.TokenError, SyntaxError):
        pass  # text, not an expression: its numbers were found so far
    return found


def goal_coverage(goal: str, plan: StepGraph) -> Verdict | None:
    """A verdict on whether the plan uses every number the goal states (None: none stated)."""
    stated = _goal_numbers(goal)
    if not stated:
        return None
    used = [n for step in plan.steps for n in _numbers(step.args)]
    used += [n for check in plan.checks for n in _numbers(check.expression)]
    unused = [
        text
        for text, values in stated
        if not any(abs(u - v) <= _TOLERANCE * max(1.0, abs(v)) for u in used for v in values)
    ]
    description = (
        f"the plan uses every number the goal states ({len(stated)})"
        if not unused
        else "the goal states numbers no step uses: "
        + ", ".join(f"'{text}'" for text in unused)
        + "; use each in the plan where it belongs"
    )
    return Verdict(
        kind=VerdictKind.COVERAGE,
        passed=not unused,
        description=description,
        values={text: "unused" if text in unused else "used" for text, _ in stated},
    )


__all__ = ["goal_coverage"]

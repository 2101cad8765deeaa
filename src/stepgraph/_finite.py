"""Whether a number is one the engine can compute with, and how a huge one is shown.

Every check compares values as floats: a number no float holds (a 400-digit integer,
``1e999``, NaN) ended runs as internal errors, or was reported verified (infinity converted
back is infinity). Plans, program replies and task inputs refuse it by name instead.
"""

from __future__ import annotations

import math


def fits_a_float(number: int | float) -> bool:
    """Whether `number` is finite and within a float's range."""
    try:
        return math.isfinite(float(number))
    except OverflowError:
        return False


def shortened(text: str, limit: int = 24) -> str:
    """`text`, or its first characters and its length where it is longer than `limit`."""
    return text if len(text) <= limit else f"{text[:12]}... ({len(text)} characters)"

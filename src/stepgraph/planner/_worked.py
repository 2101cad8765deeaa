r"""The model's own worked answer: a witness the cross-check holds a plan's answer against.

The model is asked as a user would ask it without stepgraph (``prompts/worked.md``: think
step by step, then ``ANSWER: <number>``), in a conversation of its own, so the plan it
made is not shown and cannot be copied. Its arithmetic is not trusted; only its final
number and the numbers along the way are compared with what the plan's code computed.
A small model that reads a goal right but slips in its sums is then confirmed by the
plan, and a plan that answers another question is caught when the words disagree.
"""

from __future__ import annotations

import re

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


__all__ = ["final_number", "stated_numbers"]

"""A model's answer caught in a loop, stopped while it streams instead of at the token cap.

Greedy decoding of a small model can fall into writing the same lines over and over until
the token cap ends it: the 1.5B model wrote one plan line and its comment 23 times in a
1,024-token answer, about 85 s on a 2-core CPU, which the reader then refused for the line
the cap cut in half. Stopped after the fourth repeat, the answer costs a few lines, and
what came before the loop is read as any answer is.
"""

from __future__ import annotations

REPEATS = 4  # a block of lines written this many times in a row is a loop
LONGEST_BLOCK = 6  # lines; a loop of a longer block is left to the token cap
# The last lines read: a loop of the longest block, with a blank line after each line.
_TAIL_LINES = 2 * LONGEST_BLOCK * REPEATS


class LoopGuard:
    """An `on_text` for a streamed answer: False (stop) once its last lines loop."""

    def __init__(self) -> None:
        self.fired = False
        self._seen = -1  # where the last complete line looked at ends

    def __call__(self, text: str) -> bool:
        end = text.rfind("\n")  # from the end: only the line being written is scanned
        if end <= self._seen:  # no new complete line: nothing new to look at
            return True
        self._seen = end
        self.fired = looping(text[:end])
        return not self.fired

    def cut(self, text: str) -> str:
        """The answer up to its last complete line, as a stopped loop leaves it."""
        return text[: text.rfind("\n") + 1] if self.fired else text


def looping(text: str) -> bool:
    """Whether the text's last non-blank lines are one block of lines written `REPEATS` times.

    Only the text's last lines are read, so a long answer costs no more to look at than a
    short one (the guard looks at each new line of a streamed answer).
    """
    tail = text.rsplit("\n", _TAIL_LINES)[-_TAIL_LINES:]
    lines = [line.rstrip() for line in tail if line.strip()]
    for size in range(1, LONGEST_BLOCK + 1):
        if len(lines) < size * REPEATS:
            break
        block = lines[-size:]
        if all(lines[-size * (n + 1) : len(lines) - size * n] == block for n in range(REPEATS)):
            return True
    return False

"""A plan read while it is written: its steps handed out as each one is whole.

The model's answer arrives token by token (the transport is `_sse.py`). `PlanStream`
re-reads the text so far with jiter's partial mode after each piece, and hands out every step whose
JSON object is complete and passes the checks one step can pass alone (schema, tool,
arguments, malformed or self references, duplicate id). Whole-plan checks (cycles,
forward references, the answer template, units) wait for the finished text, which the
planner parses exactly as it parses an answer that was not streamed.

A step counts as complete once the model has begun the next thing after it (the next
step, or the value of the key after the steps): jiter's partial mode closes an unfinished
object, so the last element on its own cannot be told from a finished one. A plan whose
steps come last has its last step at the end of the answer, as without streaming.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import jiter
from pydantic import ValidationError

from stepgraph.exceptions import PlanProblem
from stepgraph.executor import step_problems
from stepgraph.model import Step
from stepgraph.planner._parse import _normalize_step
from stepgraph.planner._prompt import MAX_PLAN_STEPS
from stepgraph.tools import ToolRegistry

# The answer is re-read whole after each piece: past this size (a plan needs a few KB)
# reading stops, and the rest waits for the finished answer, so a runaway answer costs
# no more than about a gigabyte of parsing in all.
MAX_STREAMED_CHARS = 65_536


class PlanWatcher(Protocol):
    """What the planner tells about an answer being streamed."""

    def begin(self) -> None:
        """A new answer starts: whatever the last one started is abandoned."""
        ...

    def feed(self, text: str) -> bool:
        """The answer so far; return False to stop reading it (a step proved invalid)."""
        ...


class PlanStream:
    """The steps of one streamed answer, each handed out once, in the order written."""

    def __init__(self, tools: ToolRegistry, inputs: Mapping[str, Any]) -> None:
        self.tools = tools
        self.inputs = inputs
        self.steps: list[Step] = []  # complete and valid, in the order written
        self.problems: list[PlanProblem] = []  # of the first invalid step; then nothing more
        self._seen = 0  # raw step objects read so far
        self._closed = False  # every step is read: nothing more to find

    def feed(self, text: str) -> list[Step]:
        """The answer so far; return the steps completed since the last call."""
        if self.problems or self._closed or len(text) > MAX_STREAMED_CHARS:
            return []
        raw_steps, self._closed = _written_steps(text)
        fresh: list[Step] = []
        for raw in raw_steps[self._seen :]:
            self._seen += 1
            step = self._check(raw)
            if step is None:
                break
            self.steps.append(step)
            fresh.append(step)
        return fresh

    def _check(self, raw: Any) -> Step | None:
        index = self._seen - 1
        if self._seen > MAX_PLAN_STEPS:
            message = f"the plan has more than {MAX_PLAN_STEPS} steps, the limit"
            self.problems = [PlanProblem(None, message)]
            return None
        normalized = _normalize_step(raw, index, [])
        name = normalized.get("id") if isinstance(normalized, dict) else None
        try:
            step = Step.model_validate(normalized)
        except ValidationError as e:
            self.problems = [
                PlanProblem(
                    str(name) if name else None,
                    f"{'.'.join(map(str, item['loc'])) or 'step'}: {item['msg']}",
                )
                for item in e.errors()
            ]
            return None
        written = {s.id for s in self.steps}
        self.problems = step_problems(step, written, self.tools, self.inputs)
        return None if self.problems else step


def _written_steps(text: str) -> tuple[list[Any], bool]:
    """The step objects of a partial answer that are certainly complete; are they all?"""
    start = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=-1)
    if start < 0:
        return [], False
    try:
        data = jiter.from_json(text[start:].encode(), partial_mode="trailing-strings")
    except ValueError:  # not JSON (yet): the finished answer goes through json-repair
        return [], False
    if isinstance(data, list):  # a bare list of steps: the last is whole only at the end
        return data[:-1], False
    if not isinstance(data, dict):
        return [], False
    closed = False
    if not isinstance(data.get("steps"), list) and isinstance(data.get("plan"), dict):
        keys = list(data)
        closed = keys.index("plan") < len(keys) - 1
        data = data["plan"]
    steps = data.get("steps")
    if not isinstance(steps, list):
        return [], False
    keys = list(data)
    closed = closed or keys.index("steps") < len(keys) - 1  # a key follows the steps
    return (steps, True) if closed else (steps[:-1], False)

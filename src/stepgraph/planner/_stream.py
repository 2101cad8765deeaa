"""Plans read while they are written: a streamed answer, and its steps as each one is whole.

The model's answer arrives token by token (``stream=True``). `PlanStream` re-reads the
text so far with jiter's partial mode after each piece, and hands out every step whose
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

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

import jiter
from pydantic import ValidationError

from stepgraph.exceptions import LLMError, PlanProblem
from stepgraph.executor import step_problems
from stepgraph.model import Step
from stepgraph.planner._parse import _normalize_step
from stepgraph.planner._prompt import MAX_PLAN_STEPS
from stepgraph.tools import ToolRegistry

if TYPE_CHECKING:
    import openai

TextSink = Callable[[str], bool]
"""Called with the answer so far after each streamed piece; False stops the stream."""

StreamOutcome = Literal["complete", "stopped", "not streamed"]

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


@dataclass
class StreamedReply:
    """A streamed answer: its text, token usage, how the stream ended, and the endpoint's ids."""

    text: str
    usage: dict[str, int]
    outcome: StreamOutcome
    response_id: str | None = None
    model: str | None = None
    finish_reasons: list[str] = field(default_factory=list)


def stream_completion(
    client: openai.OpenAI, request: dict[str, Any], on_text: TextSink
) -> StreamedReply:
    """Send one chat completion with ``stream=True``; give `on_text` the answer as it grows.

    A server that ignores ``stream`` and answers with one JSON body is read whole, and
    `on_text` gets the whole answer at once (outcome "not streamed"). Errors of status,
    connection and timeout are the SDK's, for the caller's retries.
    """
    import openai  # here, not at import time: `stepgraph --help` need not load the SDK
    from openai.types.chat import ChatCompletion

    raw = client.chat.completions.with_raw_response.create(stream=True, **request)
    if "text/event-stream" not in raw.headers.get("content-type", ""):
        try:
            raw.http_response.read()
            completion = ChatCompletion.model_validate(raw.http_response.json())
        except (ValueError, ValidationError) as e:
            raise LLMError(f"the endpoint's answer is not a chat completion: {e}") from e
        text = (completion.choices[0].message.content or "") if completion.choices else ""
        usage = completion.usage.model_dump(exclude_none=True) if completion.usage else {}
        on_text(text)
        reasons = [str(c.finish_reason) for c in completion.choices if c.finish_reason]
        return StreamedReply(
            text, _counts(usage), "not streamed", completion.id, completion.model, reasons
        )
    stream = raw.parse()
    pieces: list[str] = []
    reply = StreamedReply("", {}, "complete")
    try:
        for chunk in stream:
            reply.response_id = reply.response_id or getattr(chunk, "id", None) or None
            reply.model = reply.model or getattr(chunk, "model", None) or None
            if chunk.usage is not None:  # some servers send it on the last chunk
                reply.usage = _counts(chunk.usage.model_dump(exclude_none=True))
            choice = chunk.choices[0] if chunk.choices else None
            if choice is not None and choice.finish_reason:
                reply.finish_reasons = [choice.finish_reason]
            delta = choice.delta.content if choice is not None else None
            if not delta:
                continue
            pieces.append(delta)
            if not on_text("".join(pieces)):
                reply.outcome = "stopped"
                break
    except openai.APITimeoutError:
        raise
    except openai.APIError as e:  # not retried: what was read is already acted on
        raise LLMError(f"the model's stream broke off after {len(pieces)} pieces: {e}") from e
    finally:
        stream.close()  # a stopped stream tells the server to stop generating
    reply.text = "".join(pieces)
    return reply


def _counts(usage: dict[str, Any]) -> dict[str, int]:
    return {key: value for key, value in usage.items() if isinstance(value, int)}


def streams(client: object) -> bool:
    """True when the client can stream its answers (the openai client; a replay of one)."""
    return bool(getattr(client, "streams", False))

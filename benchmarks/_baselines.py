r"""The model without stepgraph: asked alone, and as a ReAct loop with one calculator tool.

Both talk to the endpoint through the openai SDK, as a user's script would, and both are
judged as `stepgraph eval` judges: the number after ``ANSWER:`` (else ``\boxed{}``, else
the last number) against the expected answer (`final_number`, `value_matches`).
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

import openai

from stepgraph.evaluation import Expected, final_number
from stepgraph.evaluation._correct import value_matches
from stepgraph.exceptions import StepgraphError
from stepgraph.tools.expression import evaluate
from stepgraph.units import format_value

ALONE_PROMPT = "Solve the problem. Think step by step, then end with a line `ANSWER: <number>`."
REACT_PROMPT = (
    "Solve the problem. Use the calculator tool for every computation: call it with one "
    "arithmetic expression, such as 12 * (3 + 4) / 2. Think step by step, then end with a "
    "line `ANSWER: <number>`."
)
CALCULATOR = {
    "type": "function",
    "function": {
        "name": "calculator",
        "description": "Evaluate one arithmetic expression (+ - * / ** %, parentheses, "
        "round, min, max, sqrt) and return its value.",
        "parameters": {
            "type": "object",
            "properties": {
                "expression": {"type": "string", "description": "e.g. 12 * (3 + 4) / 2"}
            },
            "required": ["expression"],
        },
    },
}
UNSUPPORTED = "not supported by this server"


@dataclass
class Answer:
    """One method's answer to one question, and what it cost."""

    method: str
    question: str
    correct: bool = False
    got: float | None = None  # the number read from the answer (alone, react)
    text: str | None = None  # the final answer text
    verified: bool | None = None  # only stepgraph verifies
    model_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    wall_s: float = 0.0
    tool_calls: int = 0  # react: calculator calls executed
    calls_as_text: int = 0  # react: replies that wrote a tool call as text
    error: str | None = None
    skipped: str | None = None  # react: not asked, the server cannot call tools
    replies: list[dict[str, Any]] = field(default_factory=list)  # for --record

    def judge(self, expected: Expected, tolerance: float) -> None:
        """Read the final number of the text and compare it with the expected answer."""
        self.got = final_number(self.text) if self.text else None
        self.correct = self.got is not None and value_matches(expected, self.got, tolerance)

    def count(self, completion: Any) -> None:
        """Add one reply's usage."""
        usage = getattr(completion, "usage", None)
        self.prompt_tokens += getattr(usage, "prompt_tokens", 0) or 0
        self.completion_tokens += getattr(usage, "completion_tokens", 0) or 0


@dataclass
class Endpoint:
    """The server and model every method asks, with the same sampling (temperature 0)."""

    client: openai.OpenAI
    model: str
    max_tokens: int = 1024

    def ask(self, messages: list[dict[str, Any]], **extra: Any) -> Any:
        """One chat completion."""
        return self.client.chat.completions.create(
            model=self.model,
            messages=messages,  # type: ignore[arg-type]  # plain dicts, as a script writes them
            temperature=0,
            max_tokens=self.max_tokens,
            **extra,
        )


def alone(endpoint: Endpoint, qid: str, question: str) -> Answer:
    """The model asked directly: think step by step, then ``ANSWER: <number>``."""
    answer = Answer("alone", qid)
    messages = [
        {"role": "system", "content": ALONE_PROMPT},
        {"role": "user", "content": question},
    ]
    started = time.monotonic()
    answer.model_calls = 1
    try:
        completion = endpoint.ask(messages)
        answer.count(completion)
        answer.text = completion.choices[0].message.content or ""
        answer.replies.append({"content": answer.text})
    except openai.APIError as e:
        answer.error = f"{type(e).__name__}: {e}"
    answer.wall_s = round(time.monotonic() - started, 3)
    return answer


@dataclass
class React:
    """A ReAct loop over OpenAI tool calls, with one calculator; bounded by `max_turns`.

    A call the model writes as text instead of `tool_calls` (Qwen's template asks for
    ``<tool_call>{...}</tool_call>``; a small Qwen writes a JSON block) is run too, as a
    text-parsing ReAct loop would: the reply is cut after the call, so an answer the model
    imagined past it is dropped, and the result comes back as a user message. A server
    that answers a request with tools by an HTTP 4xx is `refused`: not asked again.
    """

    endpoint: Endpoint
    max_turns: int = 6
    refused: str | None = None
    seen_tool_calls: bool = False
    calls_as_text: int = 0
    replies: int = 0

    def unsupported(self) -> str | None:
        """Why this server cannot run the loop, or None while it may."""
        if self.refused:
            return f"{UNSUPPORTED}: it refused a request with tools ({self.refused})"
        return None

    def __call__(self, qid: str, question: str) -> Answer:
        """Run the loop for one question."""
        answer = Answer("react", qid)
        if self.refused:
            answer.skipped = self.unsupported()
            return answer
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": REACT_PROMPT},
            {"role": "user", "content": question},
        ]
        started = time.monotonic()
        try:
            self._loop(answer, messages)
        except openai.APIStatusError as e:
            if 400 <= e.status_code < 500 and not self.seen_tool_calls:
                self.refused = f"HTTP {e.status_code}: {e.message}"
                answer.skipped = self.unsupported()
            answer.error = f"{type(e).__name__}: {e}"
        except openai.APIError as e:
            answer.error = f"{type(e).__name__}: {e}"
        answer.wall_s = round(time.monotonic() - started, 3)
        return answer

    def _loop(self, answer: Answer, messages: list[dict[str, Any]]) -> None:
        for _ in range(self.max_turns):
            answer.model_calls += 1
            completion = self.endpoint.ask(messages, tools=[CALCULATOR])
            answer.count(completion)
            message = completion.choices[0].message
            calls = list(message.tool_calls or [])
            self.replies += 1
            answer.replies.append(
                {"content": message.content, "tool_calls": [c.model_dump() for c in calls]}
            )
            if calls:
                self.seen_tool_calls = True
                messages.append(
                    {
                        "role": "assistant",
                        "content": message.content or "",
                        "tool_calls": [c.model_dump(exclude_none=True) for c in calls],
                    }
                )
                for call in calls:
                    answer.tool_calls += 1
                    result = calculate(call.function.name, call.function.arguments)
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
                continue
            text_call = call_in_text(message.content or "")
            if text_call is None:
                answer.text = message.content or ""
                return
            said, name, arguments = text_call
            self.calls_as_text += 1
            answer.calls_as_text += 1
            answer.tool_calls += 1
            result = calculate(name, arguments)
            messages.append({"role": "assistant", "content": said})
            messages.append({"role": "user", "content": f"{name} returned: {result}"})
        answer.error = f"no final answer within {self.max_turns} turns"


def call_in_text(content: str) -> tuple[str, str, str] | None:
    """The first call a reply writes as text: what it said up to the call, name, arguments.

    A call is a JSON object with a ``name`` and ``arguments``; the text kept ends after it
    (and after a closing ```` ``` ```` or ``</tool_call>``). None when the reply writes none.
    """
    decoder = json.JSONDecoder()
    for start in (i for i, c in enumerate(content) if c == "{"):
        try:
            value, end = decoder.raw_decode(content, start)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict) and isinstance(value.get("name"), str) and "arguments" in value:
            said = content[:end]
            closing = re.match(r"\s*(```|</tool_call>)", content[end:])
            if closing:
                said += content[end : end + closing.end()]
            arguments = value["arguments"]
            text = arguments if isinstance(arguments, str) else json.dumps(arguments)
            return said, value["name"], text
    return None


def calculate(name: str, arguments: str) -> str:
    """The calculator's reply to one call: its value, or an error the model can act on."""
    if name != "calculator":
        return f"error: there is no tool '{name}'; the only tool is calculator"
    try:
        expression = json.loads(arguments or "{}").get("expression")
    except (json.JSONDecodeError, AttributeError):
        return 'error: the arguments must be JSON such as {"expression": "2 * 3"}'
    if not isinstance(expression, str) or not expression.strip():
        return 'error: give the expression as text, such as {"expression": "2 * 3"}'
    try:
        return format_value(evaluate(expression))
    except (StepgraphError, ArithmeticError, ValueError, TypeError) as e:  # model text: never fatal
        return f"error: {e}"

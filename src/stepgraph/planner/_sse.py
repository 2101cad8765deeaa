"""The streamed answer of one chat completion: server-sent events read through the SDK.

`OpenAIClient` sends a request with ``stream=True`` here when the planner streams an
answer (`StreamingClient`); what reads the text as it grows is the caller's `TextSink`
(for a plan, `_plan_stream.PlanStream` through the engine's `EarlyStart`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import ValidationError

from stepgraph.exceptions import LLMError
from stepgraph.journal import STREAMED_PIECES

if TYPE_CHECKING:
    import openai

TextSink = Callable[[str], bool]
"""Called with the answer so far after each streamed piece; False stops the stream."""

StreamOutcome = Literal["complete", "stopped", "not streamed"]


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
    `on_text` gets the whole answer at once (outcome "not streamed"). The token usage is
    asked for (``stream_options.include_usage``, which budgets count); a server that
    refuses the option is asked again without it. Where no usage came (that server, or a
    stream stopped before its last chunk) the pieces read are counted. Errors of
    status, connection and timeout are the SDK's, for the caller's retries.
    """
    import openai  # here, not at import time: `stepgraph --help` need not load the SDK
    from openai.types.chat import ChatCompletion

    create = client.chat.completions.with_raw_response.create
    try:  # the token counts come on a last chunk only when asked for
        raw = create(stream=True, stream_options={"include_usage": True}, **request)
    except openai.BadRequestError:  # a server that knows no stream_options: without them
        raw = create(stream=True, **request)
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
    if not reply.usage and pieces:  # stopped before the last chunk, or a server that sends none
        reply.usage = _counted_usage(len(pieces))
    return reply


def _counted_usage(pieces: int) -> dict[str, int]:
    """The usage of a stream that told none: its pieces, each at least one token."""
    return {"completion_tokens": pieces, STREAMED_PIECES: pieces}


def _counts(usage: dict[str, Any]) -> dict[str, int]:
    return {key: value for key, value in usage.items() if isinstance(value, int)}

"""What a call said, for spans that carry it: only when asked, as the conventions say.

Prompts, answers, tool arguments and results may hold anything a user typed or a tool
read, so they leave the machine only behind the GenAI instrumentations' opt-in:
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`` (or the newer values that
put content on spans, ``SPAN_ONLY`` and ``SPAN_AND_EVENT``), or `capture_content=True`.
Messages follow the conventions' JSON shapes: ``[{"role", "parts": [{"type": "text",
"content"}]}]``, an output message with its ``finish_reason``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

CAPTURE_VARIABLE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_ON = frozenset({"true", "span_only", "span_and_event"})


def capture_wanted(environ: Mapping[str, str] = os.environ) -> bool:
    """True when the environment opts in to message content on spans."""
    return environ.get(CAPTURE_VARIABLE, "").strip().lower() in _ON


def as_json(value: Any) -> str:
    """Journal data (plain JSON already) as one compact string attribute."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def input_messages(messages: Sequence[Mapping[str, str]]) -> str:
    """The ``gen_ai.input.messages`` of a chat request, system prompt included."""
    return as_json(
        [
            {
                "role": message.get("role", "user"),
                "parts": [{"type": "text", "content": message.get("content", "")}],
            }
            for message in messages
        ]
    )


def output_messages(text: str, finish_reasons: Sequence[str]) -> str:
    """The ``gen_ai.output.messages`` of one answer; an unrecorded finish reason is "unknown"."""
    reason = finish_reasons[0] if finish_reasons else "unknown"
    message = {
        "role": "assistant",
        "parts": [{"type": "text", "content": text}],
        "finish_reason": reason,
    }
    return as_json([message])

"""Offline helpers: a scripted model for tests, examples and demos with no API key."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from stepgraph.exceptions import LLMError, TaskFileError
from stepgraph.planner import LLMReply, Message


class ScriptFile(BaseModel):
    """A file of prepared model answers, replayed in order."""

    model_config = ConfigDict(extra="forbid")

    scripted: bool = Field(description="Must be true: says plainly that no model is involved.")
    description: str = Field("", description="What the script demonstrates.")
    responses: list[str] = Field(min_length=1, description="The model's answers, in order.")


STREAMED_PIECE = 32  # characters a scripted answer grows by when it is streamed


class ScriptedLLM:
    """A model that answers from a list of prepared responses and records what it was asked.

    It streams too (a `StreamingClient`): `--stream --scripted` starts read-only steps
    while the prepared answer is handed out piece by piece, as an endpoint writes it.
    """

    model = "scripted"

    def __init__(self, responses: Sequence[str]) -> None:
        self.responses = list(responses)
        self.requests: list[list[Message]] = []
        self.schemas: list[dict[str, Any] | None] = []

    @classmethod
    def from_file(cls, path: Path) -> ScriptedLLM:
        """Load a YAML script file (``scripted: true`` and a list of ``responses``)."""
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
            return cls(ScriptFile.model_validate(data).responses)
        except (OSError, UnicodeDecodeError, yaml.YAMLError, ValidationError) as e:
            raise TaskFileError(f"not a scripted-responses file: {e}", path=str(path)) from e

    def complete(
        self, messages: Sequence[Message], *, schema: dict[str, Any] | None = None, attempt: int = 1
    ) -> LLMReply:
        """Return the next prepared response; running out is an `LLMError`."""
        self.requests.append([dict(message) for message in messages])
        self.schemas.append(schema)
        if len(self.requests) > len(self.responses):
            raise LLMError(
                f"the scripted model has only {len(self.responses)} responses "
                f"and was asked for response {len(self.requests)}"
            )
        text = self.responses[len(self.requests) - 1]
        prompt_chars = sum(len(message["content"]) for message in messages)
        usage = {"prompt_chars": prompt_chars, "completion_chars": len(text)}
        return LLMReply(text=text, usage=usage, mode="text", model=self.model)

    def stream_complete(
        self,
        messages: Sequence[Message],
        *,
        on_text: Callable[[str], bool],
        schema: dict[str, Any] | None = None,
        attempt: int = 1,
    ) -> LLMReply:
        """The next prepared response, shown to `on_text` as it grows; False stops it there."""
        reply = self.complete(messages, schema=schema, attempt=attempt)
        text = reply.text
        for end in range(STREAMED_PIECE, len(text) + STREAMED_PIECE, STREAMED_PIECE):
            if not on_text(text[:end]):  # what was shown is the answer, as an endpoint's is
                reply.text, reply.stream = text[:end], "stopped"
                return reply
        reply.stream = "complete"
        return reply


__all__ = ["ScriptFile", "ScriptedLLM"]

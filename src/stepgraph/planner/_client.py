"""Talking to a model: any OpenAI-compatible Chat Completions endpoint, through the openai SDK.

Retries of HTTP 408/409/429/5xx and timeouts, with exponential backoff that honours
``Retry-After``, are the SDK's own (``max_retries``); we do not write a second loop.
What we add is the response-format fallback: a strict JSON schema where the endpoint
takes it, else JSON mode, else plain text, remembered for the rest of the run.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import openai
from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from stepgraph.exceptions import LLMError

Message = dict[str, str]
ResponseMode = Literal["json_schema", "json_object", "text"]
MODES: tuple[ResponseMode, ...] = ("json_schema", "json_object", "text")


@dataclass
class LLMReply:
    """One answer of the model, with what it cost."""

    text: str
    usage: dict[str, int] = field(default_factory=dict)
    latency_ms: float = 0.0
    mode: ResponseMode = "text"
    model: str = ""
    retries: int = 0


class LLMClient(Protocol):
    """What the planner needs from a model: one chat completion at a time."""

    model: str

    def complete(
        self, messages: Sequence[Message], *, schema: dict[str, Any] | None = None
    ) -> LLMReply:
        """Answer the conversation; with `schema`, ask for JSON in that shape."""
        ...


class LLMSettings(BaseSettings):
    """Where the model is: environment variables or matching CLI flags."""

    model_config = SettingsConfigDict(extra="ignore", populate_by_name=True)

    base_url: str | None = Field(
        None,
        validation_alias=AliasChoices("base_url", "OPENAI_BASE_URL"),
        description="OpenAI-compatible endpoint, e.g. http://localhost:11434/v1 for Ollama.",
    )
    api_key: SecretStr | None = Field(
        None,
        validation_alias=AliasChoices("api_key", "OPENAI_API_KEY"),
        description="API key; local servers usually accept any value.",
    )
    model: str = Field(
        "gpt-4o-mini",
        validation_alias=AliasChoices("model", "STEPGRAPH_MODEL"),
        description="Model name as the endpoint knows it.",
    )
    timeout: float = Field(60.0, gt=0, description="Seconds per HTTP request.")
    max_retries: int = Field(3, ge=0, le=10, description="SDK retries of 429/5xx/timeouts.")

    @property
    def configured(self) -> bool:
        """True when an endpoint or a key has been given."""
        return bool(self.base_url or self.api_key)


class OpenAIClient:
    """A Chat Completions client for OpenAI, vLLM, Ollama or a llama.cpp server."""

    def __init__(self, settings: LLMSettings) -> None:
        self.settings = settings
        self.model = settings.model
        key = settings.api_key.get_secret_value() if settings.api_key else "not-needed"
        self._client = openai.OpenAI(
            base_url=settings.base_url,
            api_key=key,
            timeout=settings.timeout,
            max_retries=settings.max_retries,
        )
        self.mode: ResponseMode | None = None  # the first format the endpoint accepted

    def complete(
        self, messages: Sequence[Message], *, schema: dict[str, Any] | None = None
    ) -> LLMReply:
        """One completion; a response format the endpoint rejects falls back to the next."""
        modes: Sequence[ResponseMode] = (
            ("text",) if schema is None else ((self.mode,) if self.mode else MODES)
        )
        for index, mode in enumerate(modes):
            try:
                reply = self._create(messages, mode, schema)
            except (openai.BadRequestError, openai.UnprocessableEntityError) as e:
                if index + 1 < len(modes):
                    continue  # this endpoint does not take this response_format
                raise LLMError(_status_message(e), status=e.status_code) from e
            if schema is not None:
                self.mode = mode
            return reply
        raise AssertionError("unreachable: the last mode raises or returns")

    def _create(
        self, messages: Sequence[Message], mode: ResponseMode, schema: dict[str, Any] | None
    ) -> LLMReply:
        started = time.monotonic()
        try:
            raw = self._client.chat.completions.with_raw_response.create(
                model=self.model,
                messages=list(messages),  # type: ignore[arg-type]
                temperature=0,
                **_response_format(mode, schema),
            )
            completion = raw.parse()
        except (openai.BadRequestError, openai.UnprocessableEntityError):
            raise
        except openai.APIStatusError as e:
            raise LLMError(_status_message(e), status=e.status_code) from e
        except openai.APITimeoutError as e:
            raise LLMError(f"the model endpoint timed out after {self.settings.timeout:g} s") from e
        except openai.APIConnectionError as e:
            raise LLMError(f"cannot reach the model endpoint {self._client.base_url}: {e}") from e
        except (openai.APIResponseValidationError, ValueError) as e:
            raise LLMError(f"the endpoint's answer is not a chat completion: {e}") from e
        choices = getattr(completion, "choices", None)
        if not choices or choices[0].message is None:
            body = str(completion)[:200]
            raise LLMError(f"the endpoint's answer is not a chat completion: {body!r}")
        usage = completion.usage.model_dump(exclude_none=True) if completion.usage else {}
        return LLMReply(
            text=choices[0].message.content or "",
            usage={k: v for k, v in usage.items() if isinstance(v, int)},
            latency_ms=round((time.monotonic() - started) * 1000, 3),
            mode=mode,
            model=self.model,
            retries=raw.retries_taken,
        )


def _response_format(mode: ResponseMode, schema: dict[str, Any] | None) -> dict[str, Any]:
    if mode == "json_schema" and schema is not None:
        spec = {"name": "step_graph", "schema": schema, "strict": True}
        return {"response_format": {"type": "json_schema", "json_schema": spec}}
    if mode == "json_object":
        return {"response_format": {"type": "json_object"}}
    return {}


def _status_message(error: openai.APIStatusError) -> str:
    body = error.response.text[:300] if error.response is not None else ""
    return f"the model endpoint answered HTTP {error.status_code}: {body}"

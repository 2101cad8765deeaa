"""Talking to a model: any OpenAI-compatible Chat Completions endpoint, through the openai SDK.

Response formats: a strict JSON schema where the endpoint takes it, else JSON mode
carrying the schema (llama.cpp's server and vLLM constrain the output with it), else
plain JSON mode, else plain text. In `auto` a refusal of the format, in any 4xx or 5xx
body, moves to the next one at once (llama-cpp-python answers json_schema with HTTP
500); what worked is remembered for the rest of the run and journaled with each reply.

Retries are ours, not the SDK's: the SDK would also re-send a request that timed out,
while a local server is still computing the abandoned one, so work piles up. Here
429, 5xx and refused connections are retried with backoff (honouring ``Retry-After``);
a timeout is reported at once, with every attempt and how long it took.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from stepgraph.exceptions import LLMError

if TYPE_CHECKING:  # imported when a client is made: `stepgraph --help` need not load it
    import openai

Message = dict[str, str]
ResponseFormat = Literal["auto", "json_schema", "json_object", "text"]
ResponseMode = Literal["json_schema", "json_object+schema", "json_object", "text"]
MODES: tuple[ResponseMode, ...] = ("json_schema", "json_object+schema", "json_object", "text")
_LADDERS: dict[ResponseFormat, tuple[ResponseMode, ...]] = {
    "auto": MODES,
    "json_schema": ("json_schema",),
    "json_object": ("json_object+schema", "json_object"),
    "text": ("text",),
}
_FORMAT_WORDS = ("response_format", "json_schema", "json_object", "schema")
BACKOFF_SECONDS = 0.5


@dataclass
class LLMReply:
    """One answer of the model, with what it cost."""

    text: str
    usage: dict[str, int] = field(default_factory=dict)
    latency_ms: float = 0.0
    mode: ResponseMode = "text"
    model: str = ""
    retries: int = 0
    stream: str | None = None  # streamed: "complete", "stopped" or "not streamed"
    response_id: str | None = None  # the endpoint's id of the completion
    response_model: str | None = None  # the model that answered, as the endpoint names it
    finish_reasons: list[str] = field(default_factory=list)  # one per choice, where given


@dataclass(frozen=True)
class RequestSettings:
    """What a request goes out with, as far as a client knows it before sending it."""

    temperature: float | None = None
    seed: int | None = None
    max_tokens: int | None = None
    server_address: str | None = None  # the endpoint's host; never its path or credentials
    server_port: int | None = None


@runtime_checkable
class DescribesRequests(Protocol):
    """A client that can say, before a call, how it will send it (for the journal)."""

    def request_settings(self, attempt: int) -> RequestSettings:
        """The sampling and the endpoint of the request `complete(attempt=attempt)` sends."""
        ...


class LLMClient(Protocol):
    """What the planner needs from a model: one chat completion at a time."""

    model: str

    def complete(
        self,
        messages: Sequence[Message],
        *,
        schema: dict[str, Any] | None = None,
        attempt: int = 1,
    ) -> LLMReply:
        """Answer the conversation; with `schema`, ask for JSON in that shape.

        `attempt` counts the tries at one answer: later ones may sample differently.
        """
        ...


@runtime_checkable
class StreamingClient(Protocol):
    """A client that can stream an answer, showing `on_text` the text as it grows.

    The planner streams a plan only to a client that declares this; any other client's
    answer is read whole (a run asked to stream then records that it did not).
    """

    def stream_complete(
        self,
        messages: Sequence[Message],
        *,
        on_text: Callable[[str], bool],
        schema: dict[str, Any] | None = None,
        attempt: int = 1,
    ) -> LLMReply:
        """Answer as `complete` does, calling `on_text` with the answer so far; False stops it."""
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
    timeout: float = Field(
        300.0,
        gt=0,
        validation_alias=AliasChoices("timeout", "STEPGRAPH_TIMEOUT"),
        description="Seconds one request may take; a CPU server needs minutes for a plan.",
    )
    max_retries: int = Field(
        2,
        ge=0,
        le=10,
        validation_alias=AliasChoices("max_retries", "STEPGRAPH_MAX_RETRIES"),
        description="Retries of HTTP 429, 5xx and refused connections (never of a timeout).",
    )
    max_tokens: int | None = Field(
        None,
        gt=0,
        validation_alias=AliasChoices("max_tokens", "STEPGRAPH_MAX_TOKENS"),
        description="Tokens one answer may take; unset: the server's limit. A small model "
        "sampling a retry can repeat itself until the timeout: a cap ends it sooner.",
    )
    response_format: ResponseFormat = Field(
        "auto",
        validation_alias=AliasChoices("response_format", "STEPGRAPH_RESPONSE_FORMAT"),
        description="auto (try json_schema, json_object with the schema, json_object, text) "
        "or one of them.",
    )

    @property
    def configured(self) -> bool:
        """True when an endpoint or a key has been given."""
        return bool(self.base_url or self.api_key)


class OpenAIClient:
    """A Chat Completions client for OpenAI, vLLM, Ollama or a llama.cpp server."""

    # An endpoint serves requests side by side (llama.cpp: one slot each), so a question
    # that does not depend on the plan can be asked while the plan is made (`_ahead`).
    answers_concurrently = True

    def __init__(self, settings: LLMSettings) -> None:
        import openai

        self.settings = settings
        self.model = settings.model
        key = settings.api_key.get_secret_value() if settings.api_key else "not-needed"
        self._client = openai.OpenAI(
            base_url=settings.base_url, api_key=key, timeout=settings.timeout, max_retries=0
        )
        self.mode: ResponseMode | None = None  # the first format the endpoint accepted

    def request_settings(self, attempt: int) -> RequestSettings:
        """The sampling of that attempt and the endpoint's host and port."""
        url = self._client.base_url
        port = url.port or {"https": 443, "http": 80}.get(url.scheme)
        sampling = _sampling(attempt)
        return RequestSettings(
            temperature=sampling["temperature"],
            seed=sampling.get("seed"),
            max_tokens=self.settings.max_tokens,
            server_address=url.host or None,
            server_port=port,
        )

    def stream_complete(
        self,
        messages: Sequence[Message],
        *,
        on_text: Callable[[str], bool],
        schema: dict[str, Any] | None = None,
        attempt: int = 1,
    ) -> LLMReply:
        """`complete`, streamed: `on_text` sees the answer grow (`StreamingClient`)."""
        return self.complete(messages, schema=schema, attempt=attempt, on_text=on_text)

    def complete(
        self,
        messages: Sequence[Message],
        *,
        schema: dict[str, Any] | None = None,
        attempt: int = 1,
        on_text: Callable[[str], bool] | None = None,
    ) -> LLMReply:
        """One completion; a response format the endpoint refuses falls back to the next.

        With `on_text` the answer is streamed, and `on_text` sees it grow (see `_sse`).
        """
        if schema is None:
            return self._send(messages, "text", None, attempt, on_text)
        modes = [self.mode] if self.mode else list(_LADDERS[self.settings.response_format])
        while True:
            mode = modes.pop(0)
            try:
                reply = self._send(messages, mode, schema, attempt, on_text)
            except _Refused as e:
                if mode == "json_object+schema" and "schema" not in e.body:
                    modes = [m for m in modes if m != "json_object"]  # JSON mode itself refused
                if not modes:
                    raise LLMError(e.message, status=e.status) from None
                continue
            self.mode = mode
            return reply

    def _send(
        self,
        messages: Sequence[Message],
        mode: ResponseMode,
        schema: dict[str, Any] | None,
        attempt: int,
        on_text: Callable[[str], bool] | None = None,
    ) -> LLMReply:
        """One request, retried on 429/5xx/refused connections; a timeout is final."""
        import openai  # loaded by __init__ already: a lookup in sys.modules

        took: list[float] = []
        probing = schema is not None and self.mode is None  # a refusal must fail fast
        for number in range(1, self.settings.max_retries + 2):
            started = time.monotonic()
            try:
                reply = self._create(messages, mode, schema, attempt, on_text)
            except openai.APITimeoutError as e:
                took.append(time.monotonic() - started)
                raise LLMError(
                    f"the model endpoint timed out after {self.settings.timeout:g} s "
                    f"({_attempts(took)}); a timed-out request is not sent again, since the "
                    "server may still be working on it: raise --timeout for a slow server"
                ) from e
            except openai.APIStatusError as e:
                took.append(time.monotonic() - started)
                body = e.response.text[:500] if e.response is not None else ""
                refused = e.status_code in (400, 422) or (
                    e.status_code >= 500 and any(word in body for word in _FORMAT_WORDS)
                )
                if refused and (probing or e.status_code in (400, 422)) and mode != "text":
                    raise _Refused(_status_message(e), e.status_code, body) from e
                if not _retryable(e.status_code) or number > self.settings.max_retries:
                    raise LLMError(
                        f"{_status_message(e)} ({_attempts(took)})", status=e.status_code
                    ) from e
                time.sleep(_retry_after(e) or BACKOFF_SECONDS * 2 ** (number - 1))
                continue
            except openai.APIConnectionError as e:
                took.append(time.monotonic() - started)
                if number > self.settings.max_retries:
                    raise LLMError(
                        f"cannot reach the model endpoint {self._client.base_url}: {e} "
                        f"({_attempts(took)})"
                    ) from e
                time.sleep(BACKOFF_SECONDS * 2 ** (number - 1))
                continue
            reply.retries = number - 1
            return reply
        raise AssertionError("unreachable: the last attempt raises or returns")

    def _create(
        self,
        messages: Sequence[Message],
        mode: ResponseMode,
        schema: dict[str, Any] | None,
        attempt: int,
        on_text: Callable[[str], bool] | None = None,
    ) -> LLMReply:
        import openai

        started = time.monotonic()
        request = {
            "model": self.model,
            "messages": list(messages),
            **_sampling(attempt),
            **_response_format(mode, schema),
        }
        if self.settings.max_tokens is not None:
            request["max_tokens"] = self.settings.max_tokens
        if on_text is not None:
            from stepgraph.planner._sse import stream_completion  # only a streamed run

            streamed = stream_completion(self._client, request, on_text)
            return LLMReply(
                streamed.text,
                streamed.usage,
                round((time.monotonic() - started) * 1000, 3),
                mode,
                self.model,
                stream=streamed.outcome,
                response_id=streamed.response_id,
                response_model=streamed.model,
                finish_reasons=streamed.finish_reasons,
            )
        try:
            completion = self._client.chat.completions.create(**request)
        except (openai.APIStatusError, openai.APITimeoutError, openai.APIConnectionError):
            raise
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
            # A lax server may leave these out: the SDK builds its answer without validation.
            response_id=getattr(completion, "id", None) or None,
            response_model=getattr(completion, "model", None) or None,
            finish_reasons=[r for c in choices if (r := getattr(c, "finish_reason", None))],
        )


class _Refused(Exception):  # noqa: N818  # internal signal: try the next response format
    def __init__(self, message: str, status: int, body: str) -> None:
        super().__init__(message)
        self.message, self.status, self.body = message, status, body


def _sampling(attempt: int) -> dict[str, Any]:
    """Greedy first; a retry samples a little more widely, so it is not the same answer."""
    if attempt <= 1:
        return {"temperature": 0}
    return {"temperature": min(0.4 * (attempt - 1), 1.0), "seed": attempt}


def _retryable(status: int) -> bool:
    return status in (408, 409, 429) or status >= 500


def _retry_after(error: openai.APIStatusError) -> float | None:
    headers = error.response.headers if error.response is not None else {}
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is not None:
            try:
                return min(float(value) * scale, 60.0)
            except ValueError:
                return None
    return None


def _attempts(took: list[float]) -> str:
    times = ", ".join(f"{seconds:.1f} s" for seconds in took)
    return f"{len(took)} attempt{'s' if len(took) > 1 else ''}: {times}"


def _response_format(mode: ResponseMode, schema: dict[str, Any] | None) -> dict[str, Any]:
    if mode == "json_schema" and schema is not None:
        spec = {"name": "step_graph", "schema": schema, "strict": True}
        return {"response_format": {"type": "json_schema", "json_schema": spec}}
    if mode == "json_object+schema" and schema is not None:
        return {"response_format": {"type": "json_object", "schema": schema}}
    if mode in ("json_object", "json_object+schema"):
        return {"response_format": {"type": "json_object"}}
    return {}


def _status_message(error: openai.APIStatusError) -> str:
    body = error.response.text[:300] if error.response is not None else ""
    return f"the model endpoint answered HTTP {error.status_code}: {body}"

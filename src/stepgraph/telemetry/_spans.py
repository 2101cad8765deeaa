"""Spans from journal events: the run, each model call, each step and each tool attempt.

The journal is the source of truth; this listener only re-tells it in OpenTelemetry's
terms, following the GenAI semantic conventions (``invoke_agent``, ``chat``,
``execute_tool``; model, provider, endpoint, sampling, response id, finish reasons,
token usage) plus ``stepgraph.*`` attributes. Every time on a span, its start, its end
and its events, is an event's own timestamp, so a live run and `stepgraph otel JOURNAL`
export alike. Message content, tool arguments and results are sent only when asked
(see `_content`).

A step span ends when its round of verification is over (a repair, the answer, the
end), at its final observation's time: the verdicts about it come after it ran.
"""

from __future__ import annotations

import importlib.metadata
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.semconv._incubating.attributes.gen_ai_attributes import (
    GEN_AI_AGENT_NAME,
    GEN_AI_INPUT_MESSAGES,
    GEN_AI_OPERATION_NAME,
    GEN_AI_OUTPUT_MESSAGES,
    GEN_AI_OUTPUT_TYPE,
    GEN_AI_PROVIDER_NAME,
    GEN_AI_REQUEST_MAX_TOKENS,
    GEN_AI_REQUEST_MODEL,
    GEN_AI_REQUEST_SEED,
    GEN_AI_REQUEST_TEMPERATURE,
    GEN_AI_RESPONSE_FINISH_REASONS,
    GEN_AI_RESPONSE_ID,
    GEN_AI_RESPONSE_MODEL,
    GEN_AI_TOOL_CALL_ARGUMENTS,
    GEN_AI_TOOL_CALL_ID,
    GEN_AI_TOOL_CALL_RESULT,
    GEN_AI_TOOL_NAME,
    GEN_AI_TOOL_TYPE,
    GEN_AI_USAGE_INPUT_TOKENS,
    GEN_AI_USAGE_OUTPUT_TOKENS,
    GenAiOperationNameValues,
    GenAiOutputTypeValues,
)
from opentelemetry.semconv.attributes.error_attributes import ERROR_TYPE, ErrorTypeValues
from opentelemetry.semconv.attributes.server_attributes import SERVER_ADDRESS, SERVER_PORT
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from stepgraph.journal import (
    Action,
    AnswerEvent,
    BudgetExceeded,
    CheckEvent,
    JournalEvent,
    LLMRequest,
    LLMResponse,
    ObservationEvent,
    PlanRepair,
    RunEnd,
    RunResume,
    RunStart,
    StepReused,
    StepSkipped,
    Thought,
)
from stepgraph.telemetry._content import as_json, capture_wanted, input_messages, output_messages
from stepgraph.telemetry._provider import provider_name

AGENT = "stepgraph"
CHAT = GenAiOperationNameValues.CHAT.value
EXECUTE_TOOL = GenAiOperationNameValues.EXECUTE_TOOL.value
INVOKE_AGENT = GenAiOperationNameValues.INVOKE_AGENT.value
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_FINE = frozenset({"verified", "unchecked", "not_run"})  # run statuses that are not errors
_ERROR_TYPE = re.compile(r"^([A-Za-z_][A-Za-z0-9_.]*(Error|Exception|Exceeded)):")


def _ns(ts: str) -> int:
    """An event's ISO timestamp in nanoseconds since the epoch, exactly (no float on the way)."""
    stamp = datetime.fromisoformat(ts)
    if stamp.tzinfo is None:  # the journal writes UTC
        stamp = stamp.replace(tzinfo=UTC)
    since = stamp - _EPOCH
    return (since.days * 86_400 + since.seconds) * 1_000_000_000 + since.microseconds * 1_000


def _error_type(message: str) -> str:
    found = _ERROR_TYPE.match(message)
    return found.group(1) if found else ErrorTypeValues.OTHER.value


def _version() -> str:
    try:
        return importlib.metadata.version("stepgraph")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree
        return "0"


@dataclass
class _Step:
    span: Span
    end_ns: int | None = None  # the final observation's time, once it is known
    verdict: str | None = None
    attempts: dict[int, Span] = field(default_factory=dict)


class SpanListener:
    """A journal listener that turns events into spans on a tracer provider.

    Attach it to a run (``Engine.run(listeners=[SpanListener(provider)])``) or feed it a
    journal's events (`export_journal`). It never raises into the run: the first error
    it meets is kept in `error` and it stops making spans. `capture_content` puts prompts,
    answers, tool arguments and results on the spans; None asks the environment
    (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT), off unless it says true.
    """

    def __init__(self, provider: TracerProvider, *, capture_content: bool | None = None) -> None:
        self._tracer = provider.get_tracer("stepgraph", _version())
        self.capture_content = capture_wanted() if capture_content is None else capture_content
        self._run: Span | None = None
        self._round = 0
        self._steps: dict[str, _Step] = {}
        self._calls: dict[tuple[str, int], Span] = {}  # (purpose, attempt) -> model span
        self._last_ns = 0
        self._usage = [0, 0]
        self.spans = 0
        self.unsent = 0  # spans the exporter did not take, once flushed
        self.problem: str | None = None  # why, where the exporter's session saw it
        self.error: Exception | None = None

    def __call__(self, event: JournalEvent) -> None:
        """Turn one event into span starts, ends and attributes."""
        if self.error is not None:
            return
        try:
            self._handle(event)
        except Exception as e:  # telemetry must not stop a run; the journal has it all
            self.error = e

    def _start(
        self,
        name: str,
        ns: int,
        attrs: dict[str, Any],
        parent: Span | None = None,
        kind: SpanKind = SpanKind.INTERNAL,
    ) -> Span:
        self.spans += 1
        context = trace.set_span_in_context(parent) if parent is not None else None
        return self._tracer.start_span(
            name, context=context, kind=kind, start_time=ns, attributes=attrs
        )

    def _handle(self, event: JournalEvent) -> None:
        ns = _ns(event.ts) if event.ts else self._last_ns
        self._last_ns = max(self._last_ns, ns)
        if isinstance(event, RunStart | RunResume):
            self._begin_run(event, ns)
            return
        if self._run is None:  # a journal cut before its start: nothing to hang spans on
            return
        step = event.step
        if isinstance(event, LLMRequest):
            self._model_call(event, ns)
        elif isinstance(event, LLMResponse):
            self._model_reply(event, ns)
        elif isinstance(event, Thought) and step is not None:
            self._step(step, ns)
        elif isinstance(event, Action) and step is not None:
            record = self._step(step, ns)
            record.span.set_attribute("stepgraph.tool", event.tool)
            attrs = {
                GEN_AI_OPERATION_NAME: EXECUTE_TOOL,
                GEN_AI_TOOL_NAME: event.tool,
                GEN_AI_TOOL_TYPE: "function",
                GEN_AI_TOOL_CALL_ID: f"{step}#{event.attempt}",
                "stepgraph.step.id": step,
                "stepgraph.attempt": event.attempt,
                "stepgraph.repair_round": self._round,
            }
            if self.capture_content:
                attrs[GEN_AI_TOOL_CALL_ARGUMENTS] = as_json(event.args)
            name = f"{EXECUTE_TOOL} {event.tool}"
            record.attempts[event.attempt] = self._start(name, ns, attrs, record.span)
        elif isinstance(event, ObservationEvent) and step is not None:
            self._observed(event, step, ns)
        elif isinstance(event, StepSkipped | StepReused) and step is not None:
            record = self._step(step, ns)
            state = "skipped" if isinstance(event, StepSkipped) else "reused"
            record.span.set_attribute("stepgraph.step.state", state)
            record.end_ns = ns
        elif isinstance(event, CheckEvent):
            self._check(event, ns)
        elif isinstance(event, PlanRepair):
            self._close_steps()
            self._round = event.round
            self._run.add_event("plan.repair", {"stepgraph.repair_round": event.round}, ns)
        elif isinstance(event, AnswerEvent | BudgetExceeded):
            self._close_steps()
            if isinstance(event, BudgetExceeded):
                self._run.add_event("budget.exceeded", {"stepgraph.budget.limit": event.limit}, ns)
        elif isinstance(event, RunEnd):
            self._end_run(event, ns)
        elif event.event.startswith("plan."):
            self._run.add_event(event.event, timestamp=ns)

    def _begin_run(self, event: RunStart | RunResume, ns: int) -> None:
        self.close()  # a journal that resumed: the earlier segment ends where it stopped
        attrs: dict[str, Any] = {
            GEN_AI_OPERATION_NAME: INVOKE_AGENT,
            GEN_AI_AGENT_NAME: AGENT,
            "stepgraph.run_id": event.run_id,
            "stepgraph.resumed": isinstance(event, RunResume),
        }
        if isinstance(event, RunStart):
            attrs["stepgraph.task"] = event.task
            if self.capture_content:  # the goal is the user's prompt: content like any other
                attrs["stepgraph.goal"] = event.goal
        self._run = self._start(f"{INVOKE_AGENT} {AGENT}", ns, attrs, kind=SpanKind.INTERNAL)
        self._usage = [0, 0]

    def _model_call(self, event: LLMRequest, ns: int) -> None:
        assert self._run is not None
        attrs: dict[str, Any] = {
            GEN_AI_OPERATION_NAME: CHAT,
            GEN_AI_REQUEST_MODEL: event.model,
            GEN_AI_PROVIDER_NAME: provider_name(event.server_address, event.model),
            "stepgraph.purpose": event.purpose,
            "stepgraph.attempt": event.attempt,
            "stepgraph.repair_round": self._round,
        }
        recorded = {
            SERVER_ADDRESS: event.server_address,
            SERVER_PORT: event.server_port,
            GEN_AI_REQUEST_TEMPERATURE: event.temperature,
            GEN_AI_REQUEST_SEED: event.seed,
            GEN_AI_REQUEST_MAX_TOKENS: event.max_tokens,
        }
        attrs.update({key: value for key, value in recorded.items() if value is not None})
        if self.capture_content:
            attrs[GEN_AI_INPUT_MESSAGES] = input_messages(event.messages)
        span = self._start(f"{CHAT} {event.model}", ns, attrs, self._run, SpanKind.CLIENT)
        self._calls[(event.purpose, event.attempt)] = span

    def _model_reply(self, event: LLMResponse, ns: int) -> None:
        span = self._calls.pop((event.purpose, event.attempt), None)
        if span is None:
            return
        usage = event.usage
        prompt = usage.get("prompt_tokens", usage.get("input_tokens"))
        completion = usage.get("completion_tokens", usage.get("output_tokens"))
        if prompt is not None:
            span.set_attribute(GEN_AI_USAGE_INPUT_TOKENS, prompt)
            self._usage[0] += prompt
        if completion is not None:
            span.set_attribute(GEN_AI_USAGE_OUTPUT_TOKENS, completion)
            self._usage[1] += completion
        model = event.response_model or event.model
        if model:
            span.set_attribute(GEN_AI_RESPONSE_MODEL, model)
        if event.response_id:
            span.set_attribute(GEN_AI_RESPONSE_ID, event.response_id)
        if event.finish_reasons:
            span.set_attribute(GEN_AI_RESPONSE_FINISH_REASONS, event.finish_reasons)
        json_mode = event.mode.startswith("json")
        output = GenAiOutputTypeValues.JSON if json_mode else GenAiOutputTypeValues.TEXT
        span.set_attribute(GEN_AI_OUTPUT_TYPE, output.value)
        if self.capture_content:
            span.set_attribute(
                GEN_AI_OUTPUT_MESSAGES, output_messages(event.text, event.finish_reasons)
            )
        span.set_attribute("stepgraph.response_mode", event.mode)
        span.set_attribute("stepgraph.retries", event.retries)
        span.end(end_time=ns)

    def _step(self, step: str, ns: int) -> _Step:
        record = self._steps.get(step)
        if record is None:
            attrs = {"stepgraph.step.id": step, "stepgraph.repair_round": self._round}
            span = self._start(f"step {step}", ns, attrs, self._run)
            record = self._steps[step] = _Step(span)
        return record

    def _observed(self, event: ObservationEvent, step: str, ns: int) -> None:
        record = self._step(step, ns)
        attempt = record.attempts.get(event.attempt)
        if attempt is not None and attempt.is_recording():
            if not event.ok:
                error = event.error or "failed"
                attempt.set_attribute(ERROR_TYPE, _error_type(error))
                attempt.set_status(Status(StatusCode.ERROR, error))
            elif self.capture_content:
                attempt.set_attribute(GEN_AI_TOOL_CALL_RESULT, as_json(event.value))
            attempt.end(end_time=ns)
        if not event.final:
            return
        record.end_ns = ns
        record.span.set_attribute("stepgraph.attempts", event.attempt)
        record.span.set_attribute("stepgraph.step.state", "done" if event.ok else "failed")
        if not event.ok:
            error = event.error or "failed"
            record.span.set_attribute(ERROR_TYPE, _error_type(error))
            record.span.set_status(Status(StatusCode.ERROR, error))

    def _check(self, event: CheckEvent, ns: int) -> None:
        record = self._steps.get(event.step) if event.step else None
        attrs: dict[str, str | bool] = {
            "stepgraph.check.kind": event.kind,
            "stepgraph.check.passed": event.passed,
            "stepgraph.check.description": event.description,
        }
        if record is None:
            assert self._run is not None
            self._run.add_event("check", attrs, ns)
            return
        record.span.add_event("check", attrs, ns)
        if record.verdict != "fail":
            record.verdict = "pass" if event.passed else "fail"
        record.span.set_attribute("stepgraph.verdict", record.verdict)

    def _close_steps(self) -> None:
        for record in self._steps.values():
            for attempt in record.attempts.values():
                if attempt.is_recording():  # started, never observed: the run stopped
                    attempt.end(end_time=record.end_ns or self._last_ns)
            record.span.end(end_time=record.end_ns or self._last_ns)
        self._steps.clear()

    def _end_run(self, event: RunEnd, ns: int) -> None:
        assert self._run is not None
        reason = event.reason or event.status
        for span in self._calls.values():  # a request with no reply: the endpoint failed
            span.set_attribute(ERROR_TYPE, _error_type(reason))
            span.set_status(Status(StatusCode.ERROR, reason))
            span.end(end_time=ns)
        self._calls.clear()
        self._close_steps()
        self._run.set_attribute("stepgraph.status", event.status)
        self._run.set_attribute(GEN_AI_USAGE_INPUT_TOKENS, self._usage[0])
        self._run.set_attribute(GEN_AI_USAGE_OUTPUT_TOKENS, self._usage[1])
        if event.status not in _FINE:
            self._run.set_attribute(ERROR_TYPE, event.status)
            self._run.set_status(Status(StatusCode.ERROR, reason))
        self._run.end(end_time=ns)
        self._run = None

    def close(self) -> None:
        """End whatever is still open (a journal cut off mid-run) at the last time seen."""
        if self._run is None:
            return
        for span in self._calls.values():
            span.end(end_time=self._last_ns)
        self._calls.clear()
        self._close_steps()
        self._run.set_attribute("stepgraph.status", "interrupted")
        self._run.end(end_time=self._last_ns)
        self._run = None

"""Spans from journal events: the run, each model call, each step and each tool attempt.

The journal is the source of truth; this listener only re-tells it in OpenTelemetry's
terms, following the GenAI semantic conventions (``invoke_agent``, ``chat``,
``execute_tool``; model, token usage) plus ``stepgraph.*`` attributes. Span times are
the events' own timestamps, so a live run and `stepgraph otel JOURNAL` export alike.

A step span ends when its round of verification is over (a repair, the answer, the
end), at its final observation's time: the verdicts about it come after it ran.
"""

from __future__ import annotations

import importlib.metadata
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
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

AGENT = "stepgraph"
_FINE = frozenset({"verified", "unchecked", "not_run"})  # run statuses that are not errors
_ERROR_TYPE = re.compile(r"^([A-Za-z_][A-Za-z0-9_.]*(Error|Exception|Exceeded)):")


def _ns(ts: str) -> int:
    stamp = datetime.fromisoformat(ts)
    return int(stamp.timestamp()) * 1_000_000_000 + stamp.microsecond * 1_000


def _error_type(message: str) -> str:
    found = _ERROR_TYPE.match(message)
    return found.group(1) if found else "_OTHER"


def _version() -> str:
    try:
        return importlib.metadata.version("stepgraph")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree
        return "0"


def _provider(model: str) -> str:
    # The client speaks the OpenAI Chat Completions API to whatever endpoint is set.
    return "stepgraph.scripted" if model == "scripted" else "openai"


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
    it meets is kept in `error` and it stops making spans.
    """

    def __init__(self, provider: TracerProvider) -> None:
        self._tracer = provider.get_tracer("stepgraph", _version())
        self._run: Span | None = None
        self._round = 0
        self._steps: dict[str, _Step] = {}
        self._calls: dict[tuple[str, int], Span] = {}  # (purpose, attempt) -> model span
        self._last_ns = 0
        self._usage = [0, 0]
        self.spans = 0
        self.unsent = 0  # spans the exporter did not take, once flushed
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
            attrs = {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": event.model,
                "gen_ai.provider.name": _provider(event.model),
                "gen_ai.system": _provider(event.model),
                "stepgraph.purpose": event.purpose,
                "stepgraph.attempt": event.attempt,
                "stepgraph.repair_round": self._round,
            }
            name = f"chat {event.model}"
            self._calls[(event.purpose, event.attempt)] = self._start(
                name, ns, attrs, self._run, SpanKind.CLIENT
            )
        elif isinstance(event, LLMResponse):
            self._model_reply(event, ns)
        elif isinstance(event, Thought) and step is not None:
            self._step(step, ns)
        elif isinstance(event, Action) and step is not None:
            record = self._step(step, ns)
            record.span.set_attribute("stepgraph.tool", event.tool)
            attrs = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": event.tool,
                "gen_ai.tool.type": "function",
                "gen_ai.tool.call.id": f"{step}#{event.attempt}",
                "stepgraph.step.id": step,
                "stepgraph.attempt": event.attempt,
                "stepgraph.repair_round": self._round,
            }
            name = f"execute_tool {event.tool}"
            record.attempts[event.attempt] = self._start(name, ns, attrs, record.span)
        elif isinstance(event, ObservationEvent) and step is not None:
            self._observed(event, step, ns)
        elif isinstance(event, StepSkipped | StepReused) and step is not None:
            record = self._step(step, ns)
            state = "skipped" if isinstance(event, StepSkipped) else "reused"
            record.span.set_attribute("stepgraph.step.state", state)
            record.end_ns = ns
        elif isinstance(event, CheckEvent):
            self._check(event)
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
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": AGENT,
            "stepgraph.run_id": event.run_id,
            "stepgraph.resumed": isinstance(event, RunResume),
        }
        if isinstance(event, RunStart):
            attrs.update({"stepgraph.task": event.task, "stepgraph.goal": event.goal})
        self._run = self._start(f"invoke_agent {AGENT}", ns, attrs, kind=SpanKind.INTERNAL)
        self._usage = [0, 0]

    def _model_reply(self, event: LLMResponse, ns: int) -> None:
        span = self._calls.pop((event.purpose, event.attempt), None)
        if span is None:
            return
        usage = event.usage
        prompt = usage.get("prompt_tokens", usage.get("input_tokens"))
        completion = usage.get("completion_tokens", usage.get("output_tokens"))
        if prompt is not None:
            span.set_attribute("gen_ai.usage.input_tokens", prompt)
            self._usage[0] += prompt
        if completion is not None:
            span.set_attribute("gen_ai.usage.output_tokens", completion)
            self._usage[1] += completion
        model = getattr(event, "model", None)
        if model:
            span.set_attribute("gen_ai.response.model", str(model))
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
                attempt.set_attribute("error.type", _error_type(error))
                attempt.set_status(Status(StatusCode.ERROR, error))
            attempt.end(end_time=ns)
        if not event.final:
            return
        record.end_ns = ns
        record.span.set_attribute("stepgraph.attempts", event.attempt)
        record.span.set_attribute("stepgraph.step.state", "done" if event.ok else "failed")
        if not event.ok:
            error = event.error or "failed"
            record.span.set_attribute("error.type", _error_type(error))
            record.span.set_status(Status(StatusCode.ERROR, error))

    def _check(self, event: CheckEvent) -> None:
        record = self._steps.get(event.step) if event.step else None
        attrs: dict[str, str | bool] = {
            "stepgraph.check.kind": event.kind,
            "stepgraph.check.passed": event.passed,
            "stepgraph.check.description": event.description,
        }
        if record is None:
            assert self._run is not None
            self._run.add_event("check", attrs)
            return
        record.span.add_event("check", attrs)
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
            span.set_attribute("error.type", _error_type(reason))
            span.set_status(Status(StatusCode.ERROR, reason))
            span.end(end_time=ns)
        self._calls.clear()
        self._close_steps()
        self._run.set_attribute("stepgraph.status", event.status)
        self._run.set_attribute("gen_ai.usage.input_tokens", self._usage[0])
        self._run.set_attribute("gen_ai.usage.output_tokens", self._usage[1])
        if event.status not in _FINE:
            self._run.set_attribute("error.type", event.status)
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

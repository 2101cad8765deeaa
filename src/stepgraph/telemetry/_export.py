"""Where spans go: an OTLP/HTTP exporter set by the standard OTEL_* variables, or one given."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)

from stepgraph.exceptions import TaskFileError
from stepgraph.journal import JournalEvent
from stepgraph.telemetry._spans import SpanListener

_HTTP = ("http/protobuf", "")


def otlp_exporter() -> SpanExporter:
    """The OTLP/HTTP (protobuf) exporter, configured by OTEL_EXPORTER_OTLP_* as usual.

    Raises:
        TaskFileError: the variables ask for a protocol this exporter does not speak.
    """
    protocol = os.environ.get(
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", "")
    )
    if protocol.strip() not in _HTTP:
        raise TaskFileError(
            f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol}: stepgraph exports OTLP over HTTP "
            "(http/protobuf); point it at the collector's HTTP port (4318)"
        )
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter()


def tracer_provider(exporter: SpanExporter | None = None, *, batch: bool = True) -> TracerProvider:
    """A provider whose spans go to `exporter` (default: OTLP/HTTP from the environment).

    `batch` exports from a background thread, off the run's path; without it each span
    is exported as it ends (tests, and exporting a finished journal).
    """
    attributes = {} if os.environ.get("OTEL_SERVICE_NAME") else {"service.name": "stepgraph"}
    provider = TracerProvider(resource=Resource.create(attributes))
    exporter = exporter or otlp_exporter()
    provider.add_span_processor(
        BatchSpanProcessor(exporter) if batch else SimpleSpanProcessor(exporter)
    )
    return provider


class _Checked(SpanExporter):
    """Passes spans on and remembers whether every export went through."""

    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner
        self.failed = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = self.inner.export(spans)
        if result is not SpanExportResult.SUCCESS:
            self.failed += len(spans)
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.inner.force_flush(timeout_millis)


@contextmanager
def traced(exporter: SpanExporter | None = None, *, batch: bool = True) -> Iterator[SpanListener]:
    """A span listener for one run; on leaving, open spans end and every span is flushed.

    Spans the exporter did not take are counted in the listener's `unsent`.
    """
    checked = _Checked(exporter or otlp_exporter())
    provider = tracer_provider(checked, batch=batch)
    listener = SpanListener(provider)
    try:
        yield listener
    finally:
        listener.close()
        provider.shutdown()  # flushes the batch
        listener.unsent = checked.failed


def export_journal(events: Iterable[JournalEvent], exporter: SpanExporter | None = None) -> int:
    """Send a recorded run's spans, timed by the journal's timestamps; return how many.

    Raises:
        TaskFileError: the exporter did not take every span (the collector is down?).
    """
    with traced(exporter, batch=False) as listener:
        for event in events:
            listener(event)
    if listener.error is not None:
        raise listener.error
    if listener.unsent:
        raise TaskFileError(
            f"{listener.unsent} of {listener.spans} spans were not accepted by the exporter; "
            "is the collector running at OTEL_EXPORTER_OTLP_ENDPOINT?"
        )
    return listener.spans

"""Where spans go: an OTLP/HTTP exporter set by the standard OTEL_* variables, or one given.

A collector that is down costs seconds, not minutes: a connection that cannot be made is
not retried (`_session`), an export waits 5 s unless OTEL_EXPORTER_OTLP_TIMEOUT (or
..._TRACES_TIMEOUT) says otherwise, and a recorded run goes out in one request per
`BATCH` spans, not one per span.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

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

if TYPE_CHECKING:
    from stepgraph.telemetry._session import FailFastSession

_HTTP = ("http/protobuf", "")
_DEFAULT_BASE = "http://localhost:4318"
TRACES_PATH = "/v1/traces"
DEFAULT_TIMEOUT = 5.0  # seconds; the SDK's own default is 10
BATCH = 512  # spans per request, as the SDK's batch processor sends them
_TIMEOUTS = ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT")
# A credential provider brings its own session (the SDK loads it): it is left alone.
_CREDENTIALS = (
    "OTEL_PYTHON_EXPORTER_OTLP_HTTP_TRACES_CREDENTIAL_PROVIDER",
    "OTEL_PYTHON_EXPORTER_OTLP_HTTP_CREDENTIAL_PROVIDER",
)


def traces_url(endpoint: str) -> str:
    """The traces URL of a collector named by its base URL or by its traces URL.

    ``http://host:4318`` is a base, as OTEL_EXPORTER_OTLP_ENDPOINT is: ``/v1/traces`` is
    added. A URL whose path ends in ``/v1/traces`` is the traces URL itself, as
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is, and is used as it is.

    Raises:
        TaskFileError: not an http(s) URL with a host.
    """
    parts = urlsplit(endpoint.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise TaskFileError(
            f"endpoint {endpoint!r}: give the collector's OTLP/HTTP URL, "
            "e.g. http://127.0.0.1:4318 (or its traces URL, http://127.0.0.1:4318/v1/traces)"
        )
    path = parts.path.rstrip("/")
    if not path.endswith(TRACES_PATH):
        path += TRACES_PATH
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def _otlp(endpoint: str | None = None, timeout: float | None = None) -> _Checked:
    protocol = os.environ.get(
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", "")
    )
    if protocol.strip() not in _HTTP:
        raise TaskFileError(
            f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol}: stepgraph exports OTLP over HTTP "
            "(http/protobuf); point it at the collector's HTTP port (4318)"
        )
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    from stepgraph.telemetry._session import FailFastSession

    if endpoint is not None:
        url = traces_url(endpoint)
    else:  # as the SDK reads the variables: a traces URL as it is, a base with the path
        base = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or _DEFAULT_BASE
        url = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or base.rstrip("/") + TRACES_PATH
    if timeout is None and not any(os.environ.get(name) for name in _TIMEOUTS):
        timeout = DEFAULT_TIMEOUT
    session = None if any(os.environ.get(name) for name in _CREDENTIALS) else FailFastSession()
    exporter = OTLPSpanExporter(endpoint=url, timeout=timeout, session=session)
    return _Checked(exporter, session, url)


def otlp_exporter(endpoint: str | None = None, *, timeout: float | None = None) -> SpanExporter:
    """The OTLP/HTTP (protobuf) exporter, configured by OTEL_EXPORTER_OTLP_* as usual.

    `endpoint` (a base URL or the traces URL, see `traces_url`) and `timeout` (seconds)
    take the place of the variables.

    Raises:
        TaskFileError: the variables ask for a protocol this exporter does not speak, or
            `endpoint` is not a URL.
    """
    return _otlp(endpoint, timeout).inner


def tracer_provider(exporter: SpanExporter | None = None, *, batch: bool = True) -> TracerProvider:
    """A provider whose spans go to `exporter` (default: OTLP/HTTP from the environment).

    `batch` exports from a background thread, off the run's path; without it each span
    is exported as it ends (tests).
    """
    attributes = {} if os.environ.get("OTEL_SERVICE_NAME") else {"service.name": "stepgraph"}
    provider = TracerProvider(resource=Resource.create(attributes))
    exporter = exporter or otlp_exporter()
    provider.add_span_processor(
        BatchSpanProcessor(exporter) if batch else SimpleSpanProcessor(exporter)
    )
    return provider


class _Checked(SpanExporter):
    """Passes spans on and counts those an export did not take, with the last reason."""

    def __init__(
        self,
        inner: SpanExporter,
        session: FailFastSession | None = None,
        url: str | None = None,
    ) -> None:
        self.inner = inner
        self.session = session
        self.url = url  # where an OTLP exporter sends
        self.failed = 0
        self._raised: str | None = None

    @property
    def problem(self) -> str | None:
        """What went wrong with the last export that failed, where it is known."""
        seen = self.session.problem if self.session is not None else None
        return seen or self._raised

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            result = self.inner.export(spans)
        except Exception as e:  # older exporters let a failed connection out as an exception
            self._raised = str(e) or type(e).__name__
            result = SpanExportResult.FAILURE
        if result is not SpanExportResult.SUCCESS:
            self.failed += len(spans)
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.inner.force_flush(timeout_millis)


def _checked(
    exporter: SpanExporter | None, endpoint: str | None, timeout: float | None
) -> _Checked:
    return _Checked(exporter) if exporter is not None else _otlp(endpoint, timeout)


@contextmanager
def traced(
    exporter: SpanExporter | None = None,
    *,
    batch: bool = True,
    endpoint: str | None = None,
    timeout: float | None = None,
    capture_content: bool | None = None,
) -> Iterator[SpanListener]:
    """A span listener for one run; on leaving, open spans end and every span is flushed.

    Without `exporter`, spans go over OTLP/HTTP (`otlp_exporter(endpoint, timeout=...)`).
    Spans the exporter did not take are counted in the listener's `unsent`, and why in
    its `problem`. `capture_content`: see `SpanListener`.
    """
    checked = _checked(exporter, endpoint, timeout)
    provider = tracer_provider(checked, batch=batch)
    listener = SpanListener(provider, capture_content=capture_content)
    try:
        yield listener
    finally:
        listener.close()
        provider.shutdown()  # flushes the batch
        listener.unsent = checked.failed
        listener.problem = checked.problem


class _Kept(SpanExporter):
    """Keeps every finished span, to be sent in batches once the journal is read."""

    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.spans.extend(spans)
        return SpanExportResult.SUCCESS


def export_journal(
    events: Iterable[JournalEvent],
    exporter: SpanExporter | None = None,
    *,
    endpoint: str | None = None,
    timeout: float | None = None,
    capture_content: bool | None = None,
) -> int:
    """Send a recorded run's spans, timed by the journal's timestamps; return how many.

    The spans are built first, then sent in requests of up to `BATCH` spans each; the
    first request that fails ends the export. Without `exporter` they go over OTLP/HTTP
    (`otlp_exporter(endpoint, timeout=...)`).

    Raises:
        TaskFileError: the exporter did not take every span (the collector is down?).
    """
    checked = _checked(exporter, endpoint, timeout)  # a bad endpoint fails before the work
    kept = _Kept()
    provider = tracer_provider(kept, batch=False)
    listener = SpanListener(provider, capture_content=capture_content)
    for event in events:
        listener(event)
    listener.close()
    provider.shutdown()
    if listener.error is not None:
        checked.shutdown()
        raise listener.error
    sent = 0
    try:
        for start in range(0, len(kept.spans), BATCH):
            chunk = kept.spans[start : start + BATCH]
            if checked.export(chunk) is not SpanExportResult.SUCCESS:
                break
            sent += len(chunk)
    finally:
        checked.shutdown()
    if sent < len(kept.spans):
        where = f" at {checked.url}" if checked.url else ""
        raise TaskFileError(
            f"the collector{where} did not take the spans "
            f"({checked.problem or 'the export failed'}): {sent} of {len(kept.spans)} sent; "
            "is it running, and is that its OTLP/HTTP port?"
        )
    return len(kept.spans)

"""A real OTLP/HTTP receiver for the tests: it decodes what arrives with opentelemetry-proto."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from werkzeug import Request, Response


def value(any_value: AnyValue) -> Any:
    """An attribute's value as Python data (arrays as lists)."""
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [value(v) for v in any_value.array_value.values]
    return getattr(any_value, kind) if kind else None


def attributes(span: Any) -> dict[str, Any]:
    return {a.key: value(a.value) for a in span.attributes}


def ns(ts: str) -> int:
    """A journal timestamp in nanoseconds since the epoch."""
    since = datetime.fromisoformat(ts) - datetime(1970, 1, 1, tzinfo=UTC)
    return (since.days * 86_400 + since.seconds) * 10**9 + since.microseconds * 1000


@dataclass
class Received:
    """One HTTP request the collector got."""

    path: str
    content_type: str
    spans: list[Any] = field(default_factory=list)
    services: set[str] = field(default_factory=set)


class Collector:
    """An OTLP/HTTP receiver on 127.0.0.1 (pytest-httpserver) that records every request."""

    def __init__(self, httpserver: Any) -> None:
        self.requests: list[Received] = []
        traces = re.compile(r"^/(?!v1/chat/).*")  # everything but a chat server beside it
        httpserver.expect_request(traces, method="POST").respond_with_handler(self.handle)
        self.url = httpserver.url_for("/").rstrip("/")

    def handle(self, request: Request) -> Response:
        received = Received(request.path, request.headers.get("Content-Type", ""))
        message = ExportTraceServiceRequest()
        message.ParseFromString(request.get_data())
        for resource in message.resource_spans:
            service = {a.key: value(a.value) for a in resource.resource.attributes}
            received.services.add(service["service.name"])
            for scope in resource.scope_spans:
                received.spans.extend(scope.spans)
        self.requests.append(received)
        body = ExportTraceServiceResponse().SerializeToString()
        return Response(body, status=200, content_type="application/x-protobuf")

    @property
    def spans(self) -> list[Any]:
        return [span for received in self.requests for span in received.spans]

    def named(self, name: str) -> list[Any]:
        return [span for span in self.spans if span.name == name]

    def names(self) -> list[str]:
        return sorted(span.name for span in self.spans)

"""A tiny OTLP/HTTP receiver that prints the spans it gets: see stepgraph's traces offline.

    python examples/otel_receiver.py &            # listens on 127.0.0.1:4318
    OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 stepgraph run examples/migration.yaml
    stepgraph otel runs/<journal>.jsonl --endpoint http://127.0.0.1:4318   # a past run

It decodes each ExportTraceServiceRequest with opentelemetry-proto (installed with
``pip install 'stepgraph[otel]'``) and answers as a collector would.
"""

from __future__ import annotations

import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue


def _value(value: AnyValue) -> object:
    kind = value.WhichOneof("value") or "string_value"
    if kind == "array_value":  # gen_ai.response.finish_reasons
        return [_value(v) for v in value.array_value.values]
    return getattr(value, kind)


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802  # the name http.server calls
        request = ExportTraceServiceRequest()
        request.ParseFromString(self.rfile.read(int(self.headers["Content-Length"])))
        for resource in request.resource_spans:
            for scope in resource.scope_spans:
                for span in scope.spans:
                    ms = (span.end_time_unix_nano - span.start_time_unix_nano) / 1e6
                    attributes = {
                        a.key: _value(a.value)
                        for a in span.attributes
                        if a.key.startswith(("gen_ai.", "stepgraph.step", "stepgraph.verdict"))
                    }
                    print(f"{span.name:32} {ms:8.2f} ms  {attributes}", flush=True)
        body = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002  # the base's name
        """Quiet: only the spans are printed."""


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 4318
    HTTPServer(("127.0.0.1", port), Receiver).serve_forever()

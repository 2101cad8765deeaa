"""OpenTelemetry traces of runs, built from journal events (install ``stepgraph[otel]``).

Nothing else in the package imports this folder at import time: the command line
imports it only when a run is traced (``--otel`` or OTEL_EXPORTER_OTLP_* set) or a
journal is exported (``stepgraph otel JOURNAL``).
"""

from stepgraph.telemetry._export import export_journal, otlp_exporter, traced, tracer_provider
from stepgraph.telemetry._spans import SpanListener

__all__ = ["SpanListener", "export_journal", "otlp_exporter", "traced", "tracer_provider"]

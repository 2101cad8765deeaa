"""Tracing from the command line: `run --otel` (or OTEL_* set) and `stepgraph otel JOURNAL`.

`stepgraph.telemetry` and the OpenTelemetry SDK are imported only here, and only when
spans are wanted: a command that does not trace does not pay for them.
"""

from __future__ import annotations

import os
from contextlib import ExitStack
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from stepgraph.cli._errors import ExitCode, fail, handle_errors

if TYPE_CHECKING:
    from stepgraph.journal import Listener

OtelOpt = Annotated[
    bool,
    typer.Option(
        "--otel",
        help="Send OpenTelemetry spans over OTLP/HTTP (also on when OTEL_EXPORTER_OTLP_ENDPOINT "
        "is set); OTEL_EXPORTER_OTLP_* configure it as usual.",
    ),
]
_ENDPOINTS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")


def tracing_wanted(flag: bool) -> bool:
    """`--otel`, or an OTLP endpoint in the environment (unless the SDK is switched off)."""
    if os.environ.get("OTEL_SDK_DISABLED", "").lower() == "true":
        return False
    if os.environ.get("OTEL_TRACES_EXPORTER", "").lower() == "none":
        return False
    return flag or any(os.environ.get(name) for name in _ENDPOINTS)


def _telemetry() -> ModuleType:
    try:
        import stepgraph.telemetry as telemetry
    except ImportError as e:
        fail(
            f"tracing needs the OpenTelemetry SDK ({e.name} is missing): "
            "pip install 'stepgraph[otel]'",
            ExitCode.USAGE,
        )
    return telemetry


def tracing(stack: ExitStack, flag: bool) -> list[Listener]:
    """The span listener of a run, closed and flushed when `stack` closes; [] if not wanted.

    Spans that did not reach the collector are reported then; the run itself is in the
    journal, and `stepgraph otel JOURNAL` sends it again.
    """
    if not tracing_wanted(flag):
        return []
    telemetry = _telemetry()
    listeners: list[Any] = []
    stack.callback(lambda: _report(listeners))  # after the flush: callbacks run in reverse
    listeners.append(stack.enter_context(telemetry.traced()))
    return list(listeners)


def _report(listeners: list[Any]) -> None:
    for listener in listeners:
        problem = (
            f"{listener.unsent} of {listener.spans} spans did not reach the collector"
            if listener.unsent
            else f"tracing stopped: {listener.error}"
            if listener.error
            else None
        )
        if problem:
            Console(stderr=True).print(
                f"warning: {problem}; the journal has the whole run, and "
                "`stepgraph otel JOURNAL` sends it again",
                style="yellow",
                highlight=False,
            )


@handle_errors
def otel_command(
    journal: Annotated[Path, typer.Argument(help="A journal (.jsonl).", show_default=False)],
    endpoint: Annotated[
        str | None,
        typer.Option(
            help="The collector's OTLP/HTTP base URL, e.g. http://127.0.0.1:4318 "
            "(default: OTEL_EXPORTER_OTLP_ENDPOINT, else http://localhost:4318)."
        ),
    ] = None,
) -> None:
    """Send a recorded run to an OpenTelemetry collector, timed by the journal's timestamps."""
    telemetry = _telemetry()
    from stepgraph.journal import read_journal

    events = read_journal(journal)
    exporter = None
    if endpoint is not None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter(endpoint=endpoint.rstrip("/") + "/v1/traces")
    count = telemetry.export_journal(events.events, exporter)
    Console(stderr=True).print(f"{count} spans exported from {journal}", highlight=False)

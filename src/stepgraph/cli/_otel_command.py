"""Tracing from the command line: `run --otel` (or OTEL_* set) and `stepgraph otel JOURNAL`.

`stepgraph.telemetry` and the OpenTelemetry SDK are imported only here, and only when
spans are wanted: a command that does not trace does not pay for them.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
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


@contextmanager
def _sdk_quiet() -> Iterator[None]:
    """The SDK's own log lines off: it warns once per failed try, and we say it once."""
    logger = logging.getLogger("opentelemetry")
    level = logger.level
    logger.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        logger.setLevel(level)


def tracing(stack: ExitStack, flag: bool) -> list[Listener]:
    """The span listener of a run, closed and flushed when `stack` closes; [] if not wanted.

    Spans that did not reach the collector are reported then, in one line; the run itself
    is in the journal, and `stepgraph otel JOURNAL` sends it again.
    """
    if not tracing_wanted(flag):
        return []
    telemetry = _telemetry()
    listeners: list[Any] = []
    stack.callback(lambda: _report(listeners))  # after the flush: callbacks run in reverse
    stack.enter_context(_sdk_quiet())
    listeners.append(stack.enter_context(telemetry.traced()))
    return list(listeners)


def _report(listeners: list[Any]) -> None:
    for listener in listeners:
        why = f" ({listener.problem})" if listener.problem else ""
        problem = (
            f"{listener.unsent} of {listener.spans} spans did not reach the collector{why}"
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
            help="The collector: its OTLP/HTTP base URL, e.g. http://127.0.0.1:4318 "
            "(/v1/traces is added), or its traces URL, ending in /v1/traces. "
            "Default: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_ENDPOINT, "
            "else http://localhost:4318.",
            show_default=False,
        ),
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option(
            min=0.1,
            help="Seconds to wait for the collector (default: OTEL_EXPORTER_OTLP_TIMEOUT, else 5).",
            show_default=False,
        ),
    ] = None,
    capture_content: Annotated[
        bool,
        typer.Option(
            "--capture-content",
            help="Send the messages to and from the model, the goal, and tool arguments "
            "and results (also on with OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
            "=true). Off by default: they may hold anything the run read.",
        ),
    ] = False,
) -> None:
    """Send a recorded run to an OpenTelemetry collector, timed by the journal's timestamps."""
    telemetry = _telemetry()
    from stepgraph.journal import read_journal

    events = read_journal(journal)
    with _sdk_quiet():
        count = telemetry.export_journal(
            events.events,
            endpoint=endpoint,
            timeout=timeout,
            capture_content=capture_content or None,  # None: the environment decides
        )
    Console(stderr=True).print(f"{count} spans exported from {journal}", highlight=False)

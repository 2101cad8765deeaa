"""Spans built from journal events: the tree, the GenAI attributes, errors, and OTLP over HTTP."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import datetime

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from stepgraph import Engine, Planner, Task, tool
from stepgraph.cli import ExitCode
from stepgraph.journal import read_journal
from stepgraph.telemetry import export_journal, traced
from tests.conftest import EXAMPLES, ROOT, flat, invoke, make_task
from tests.planner.conftest import migration_plan
from tests.planner.test_http import ChatServer, client
from tests.telemetry.collector import Collector, attributes

ANSWER = "${nights} nights"


def _traced_run(task, tmp_path, engine=None):
    exporter = InMemorySpanExporter()
    journal = tmp_path / "j.jsonl"
    with traced(exporter, batch=False) as listener:
        result = (engine or Engine()).run(task, journal=journal, listeners=[listener])
    assert listener.error is None
    return result, exporter.get_finished_spans(), journal


def _parent(spans, span):
    by_id = {s.context.span_id: s for s in spans}
    return by_id[span.parent.span_id] if span.parent is not None else None


def _named(spans, name):
    return [span for span in spans if span.name == name]


def test_model_calls_steps_and_tool_attempts_form_one_tree(httpserver, tmp_path):
    """One root run span; chat and step spans under it; each tool attempt under its step."""
    server = ChatServer(httpserver, [(200, migration_plan(answer=ANSWER))])
    engine = Engine(planner=Planner(client(server.url)))
    goal = Task(name="goal", goal="nights", inputs={"data": "2.5 TB", "link": "450 Mbps"})
    result, spans, journal = _traced_run(goal, tmp_path, engine)

    [run] = _named(spans, "invoke_agent stepgraph")
    assert run.parent is None
    assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run.attributes["stepgraph.run_id"] == result.run_id
    assert run.attributes["stepgraph.status"] == "verified"
    assert {span.context.trace_id for span in spans} == {run.context.trace_id}

    [chat] = _named(spans, "chat test-model")
    assert _parent(spans, chat) is run
    assert chat.attributes["gen_ai.operation.name"] == "chat"
    assert chat.attributes["gen_ai.request.model"] == "test-model"
    assert chat.attributes["gen_ai.provider.name"] == "local"  # a server on 127.0.0.1
    assert chat.attributes["gen_ai.usage.input_tokens"] == 321
    assert chat.attributes["gen_ai.usage.output_tokens"] == 54
    assert chat.attributes["stepgraph.purpose"] == "plan"

    steps = {
        span.attributes["stepgraph.step.id"]: span
        for span in spans
        if span.name.startswith("step ")
    }
    assert set(steps) == {"rate", "total", "per_night", "nights"}
    for step_id, step in steps.items():
        assert _parent(spans, step) is run
        assert step.attributes["stepgraph.verdict"] == "pass"
        [attempt] = [
            s for s in spans if s.name.startswith("execute_tool") and _parent(spans, s) is step
        ]
        assert attempt.attributes["gen_ai.tool.name"] == step.attributes["stepgraph.tool"]
        assert attempt.attributes["stepgraph.step.id"] == step_id

    # Span times are the journal's: the run span starts at run.start's timestamp.
    start = read_journal(journal).events[0]
    stamp = datetime.fromisoformat(start.ts)
    assert run.start_time == int(stamp.timestamp()) * 10**9 + stamp.microsecond * 1000


def test_a_failed_step_has_error_status_and_each_attempt_a_span(tmp_path):
    calls = []

    @tool
    def flaky(x: float) -> float:
        """Always fails."""
        calls.append(x)
        raise RuntimeError("the device is gone")

    task = make_task(
        [
            {"id": "a", "tool": "flaky", "args": {"x": 1}, "retries": 1},
            {"id": "b", "tool": "calculate", "args": {"expression": "${a} + 1"}},
        ]
    )
    exporter = InMemorySpanExporter()
    with traced(exporter, batch=False) as listener:
        Engine(tools=[flaky]).run(task, journal=tmp_path / "j.jsonl", listeners=[listener])
    spans = exporter.get_finished_spans()

    [step] = _named(spans, "step a")
    assert step.status.status_code is StatusCode.ERROR
    assert "the device is gone" in step.status.description
    assert step.attributes["stepgraph.step.state"] == "failed"
    attempts = [s for s in spans if _parent(spans, s) is step]
    assert sorted(s.attributes["stepgraph.attempt"] for s in attempts) == [1, 2]
    assert all(s.status.status_code is StatusCode.ERROR for s in attempts)
    assert all(s.attributes["error.type"] == "RuntimeError" for s in attempts)
    [skipped] = _named(spans, "step b")
    assert skipped.attributes["stepgraph.step.state"] == "skipped"
    [run] = _named(spans, "invoke_agent stepgraph")
    assert run.status.status_code is StatusCode.ERROR
    assert run.attributes["stepgraph.status"] == "step_failed"


def test_a_repair_round_is_an_attribute_of_the_spans_after_it(httpserver, tmp_path):
    """floor() fails a declared check; the re-run step and its attempt carry repair round 1."""
    script = [(200, migration_plan("floor", answer=ANSWER)), (200, migration_plan(answer=ANSWER))]
    server = ChatServer(httpserver, script)
    engine = Engine(planner=Planner(client(server.url)))
    goal = Task(name="goal", goal="nights", inputs={"data": "2.5 TB", "link": "450 Mbps"})
    result, spans, _ = _traced_run(goal, tmp_path, engine)

    assert result.verified
    nights = sorted(_named(spans, "step nights"), key=lambda s: s.start_time)
    assert [s.attributes["stepgraph.repair_round"] for s in nights] == [0, 1]
    [run] = _named(spans, "invoke_agent stepgraph")
    failed = [
        e for e in run.events if e.name == "check" and not e.attributes["stepgraph.check.passed"]
    ]
    assert [e.attributes["stepgraph.check.kind"] for e in failed] == ["check"]  # round 0's
    assert [e.name for e in run.events if e.name == "plan.repair"] == ["plan.repair"]
    chats = sorted(_named(spans, "chat test-model"), key=lambda s: s.start_time)
    assert [c.attributes["stepgraph.purpose"] for c in chats] == ["plan", "repair"]
    assert [c.attributes["stepgraph.repair_round"] for c in chats] == [0, 0]


def test_stepgraph_otel_exports_a_past_run_over_otlp_http(httpserver, tmp_path):
    collector = Collector(httpserver)
    journal = tmp_path / "j.jsonl"
    assert invoke("run", EXAMPLES / "migration.yaml", "--journal", journal).exit_code == 0

    result = invoke("otel", journal, "--endpoint", collector.url)

    assert result.exit_code == ExitCode.OK, result.output
    assert "9 spans exported" in result.output
    assert collector.names() == sorted(
        ["invoke_agent stepgraph"]
        + [f"step {s}" for s in ("rate", "total", "per_night", "nights")]
        + ["execute_tool unit_convert"] * 2
        + ["execute_tool calculate"] * 2
    )
    spans = {span.name: span for span in collector.spans}
    run = spans["invoke_agent stepgraph"]
    assert attributes(run)["stepgraph.task"] == "migration"
    step = spans["step per_night"]
    assert step.parent_span_id == run.span_id and step.trace_id == run.trace_id
    events = read_journal(journal)
    [observation] = [e for e in events.for_step("per_night") if e.event == "observation"]
    stamp = datetime.fromisoformat(observation.ts)
    assert step.end_time_unix_nano == int(stamp.timestamp()) * 10**9 + stamp.microsecond * 1000
    assert {service for r in collector.requests for service in r.services} == {"stepgraph"}


def test_run_with_otel_variables_sends_spans_live(httpserver, tmp_path):
    collector = Collector(httpserver)
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": collector.url, "OTEL_SERVICE_NAME": "nightly"}
    result = invoke("run", EXAMPLES / "migration.yaml", "--journal", tmp_path / "j.jsonl", env=env)
    assert result.exit_code == ExitCode.OK, result.output
    assert len(collector.spans) == 9  # flushed before the command returned
    assert {service for r in collector.requests for service in r.services} == {"nightly"}


def test_a_grpc_protocol_is_a_clear_error(tmp_path):
    env = {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
    result = invoke("run", EXAMPLES / "migration.yaml", "--otel", env=env)
    assert result.exit_code == ExitCode.INVALID
    assert "stepgraph exports OTLP over HTTP" in flat(result.output)


def test_the_command_line_does_not_load_opentelemetry_or_prices_unless_asked(tmp_path):
    script = (
        "import sys; from typer.testing import CliRunner; from stepgraph.cli import app; "
        f"r = CliRunner().invoke(app, ['run', 'examples/migration.yaml', '--journal', "
        f"'{tmp_path / 'j.jsonl'}']); "
        "print(r.exit_code, sorted({m.split('.')[0] for m in sys.modules "
        "if m.startswith(('opentelemetry', 'genai_prices'))}))"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    out = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.split() == ["0", "[]"]


def test_a_budget_stop_and_its_resume_export_as_two_run_spans(tmp_path):
    """Each segment of a journal is a run span; the stopped one says why, in error status."""
    from stepgraph import Budget, BudgetExceededError
    from stepgraph.engine import RunOptions, resume

    journal = tmp_path / "j.jsonl"
    with pytest.raises(BudgetExceededError):
        Engine().run(
            EXAMPLES / "migration.yaml",
            journal=journal,
            options=RunOptions(budget=Budget(tool_calls=2)),
        )
    resume(journal, budget=Budget(tool_calls=4))
    exporter = InMemorySpanExporter()
    export_journal(read_journal(journal).events, exporter)
    spans = exporter.get_finished_spans()

    first, second = sorted(_named(spans, "invoke_agent stepgraph"), key=lambda s: s.start_time)
    assert first.status.status_code is StatusCode.ERROR
    assert first.attributes["stepgraph.status"] == "budget_exceeded"
    assert [
        e.attributes["stepgraph.budget.limit"] for e in first.events if e.name == "budget.exceeded"
    ] == ["tool_calls"]
    assert second.attributes["stepgraph.resumed"] is True
    assert second.attributes["stepgraph.status"] == "verified"
    tools = [s for s in spans if s.name.startswith("execute_tool")]
    assert len(tools) == 4  # two before the stop, two after: none twice


def test_the_example_receiver_prints_the_spans_of_an_exported_run(tmp_path):
    """examples/otel_receiver.py, the offline demo of the docs, decodes what `otel` sends."""
    import socket
    import time

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    receiver = subprocess.Popen(
        [sys.executable, str(EXAMPLES / "otel_receiver.py"), str(port)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the receiver did not start"
                time.sleep(0.05)
        journal = tmp_path / "j.jsonl"
        Engine().run(EXAMPLES / "migration.yaml", journal=journal)
        result = invoke("otel", journal, "--endpoint", f"http://127.0.0.1:{port}")
        assert result.exit_code == ExitCode.OK, result.output
    finally:
        receiver.terminate()
        output, _ = receiver.communicate(timeout=10)
    lines = output.splitlines()
    assert len(lines) == 9
    assert any(
        line.startswith("step per_night") and "'stepgraph.verdict': 'pass'" in line
        for line in lines
    )


def test_a_failing_span_listener_does_not_stop_the_run(tmp_path):
    """Telemetry is a copy of the journal: its failure is kept aside, the run goes on."""
    from opentelemetry.sdk.trace import TracerProvider

    from stepgraph.telemetry import SpanListener

    class BrokenProvider(TracerProvider):
        def get_tracer(self, *args, **kwargs):
            tracer = super().get_tracer(*args, **kwargs)

            def start_span(*a, **k):
                raise RuntimeError("collector library bug")

            tracer.start_span = start_span
            return tracer

    listener = SpanListener(BrokenProvider())
    result = Engine().run(
        EXAMPLES / "migration.yaml", journal=tmp_path / "j.jsonl", listeners=[listener]
    )
    assert result.verified
    assert isinstance(listener.error, RuntimeError)


def test_tracing_without_the_otel_extra_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "stepgraph.telemetry", None)  # as if not installed
    result = invoke("run", EXAMPLES / "migration.yaml", "--otel", "--journal", tmp_path / "j.jsonl")
    assert result.exit_code == ExitCode.USAGE
    assert "pip install 'stepgraph[otel]'" in flat(result.output)
    assert not (tmp_path / "j.jsonl").exists()  # refused before anything ran


def test_exporting_a_file_that_is_not_a_journal_is_a_clear_error(tmp_path):
    (tmp_path / "task.yaml").write_text("goal: not a journal\n")
    result = invoke("otel", tmp_path / "task.yaml", "--endpoint", "http://127.0.0.1:9")
    assert result.exit_code == ExitCode.INVALID
    assert "not a stepgraph journal" in flat(result.output)


def test_a_collector_that_is_down_costs_the_run_nothing_but_a_warning(tmp_path, closed_port):
    """No retries against a closed port, no SDK log lines: one warning, and the run's result."""
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{closed_port}"}
    journal = tmp_path / "j.jsonl"
    started = time.monotonic()
    result = invoke("run", EXAMPLES / "migration.yaml", "--journal", journal, env=env)
    assert time.monotonic() - started < 5
    assert result.exit_code == ExitCode.OK
    [warning] = [line for line in result.output.splitlines() if "warning" in line.lower()]
    assert "9 of 9 spans did not reach the collector (connection refused)" in flat(result.output)
    assert warning.startswith("warning: 9 of 9 spans")
    assert read_journal(journal).events[-1].status == "verified"

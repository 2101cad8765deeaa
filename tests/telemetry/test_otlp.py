"""`stepgraph otel` against a real OTLP/HTTP receiver: what arrives, where, when, and how often."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from stepgraph import Engine, Planner, Task, TaskFileError
from stepgraph.cli import ExitCode
from stepgraph.journal import read_journal
from stepgraph.telemetry import export_journal
from tests.conftest import EXAMPLES, ROOT, flat, invoke, make_task
from tests.planner.conftest import migration_plan
from tests.planner.test_http import ChatServer, client
from tests.telemetry.collector import Collector, attributes, ns

ANSWER = "${nights} nights"
GOAL = "Nights to move 2.5 TB over 450 Mbps, 6 h a night"
CONTENT = (
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "stepgraph.goal",
)


def _planned_run(httpserver, tmp_path):
    """A run planned over HTTP by the real openai client: a refused answer, then a plan."""
    script = [(200, "I would rather not plan this."), (200, migration_plan(answer=ANSWER))]
    server = ChatServer(httpserver, script)
    journal = tmp_path / "j.jsonl"
    task = Task(name="goal", goal=GOAL, inputs={"data": "2.5 TB", "link": "450 Mbps"})
    result = Engine(planner=Planner(client(server.url))).run(task, journal=journal)
    assert result.verified
    return journal


def _tool_spans(collector, step):
    return [
        span
        for span in collector.spans
        if span.name.startswith("execute_tool ") and attributes(span)["stepgraph.step.id"] == step
    ]


def test_a_past_run_arrives_in_one_request_with_the_conventions_attributes(httpserver, tmp_path):
    """Model calls carry provider, endpoint, sampling, response id and finish reasons."""
    collector = Collector(httpserver)
    journal = _planned_run(httpserver, tmp_path)

    result = invoke("otel", journal, "--endpoint", collector.url)

    assert result.exit_code == ExitCode.OK, result.output
    [received] = collector.requests  # every span in one request
    assert received.path == "/v1/traces"
    assert received.content_type == "application/x-protobuf"
    assert f"{len(received.spans)} spans exported" in result.output
    first, second = sorted(collector.named("chat test-model"), key=lambda s: s.start_time_unix_nano)
    expected = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "local",  # a server on this machine: no provider to name
        "gen_ai.request.model": "test-model",
        "gen_ai.response.model": "test-model",
        "gen_ai.response.id": "chatcmpl-test",
        "gen_ai.response.finish_reasons": ["stop"],
        "gen_ai.output.type": "json",
        "gen_ai.usage.input_tokens": 321,
        "gen_ai.usage.output_tokens": 54,
        "server.address": "localhost",  # as the base URL names it
        "server.port": httpserver.port,
        "gen_ai.request.temperature": 0.0,  # greedy first
    }
    assert {key: attributes(first).get(key) for key in expected} == expected
    assert "gen_ai.request.seed" not in attributes(first)
    assert attributes(second)["gen_ai.request.temperature"] == 0.4  # a retry samples wider
    assert attributes(second)["gen_ai.request.seed"] == 2
    for span in collector.spans:
        keys = attributes(span)
        assert "gen_ai.system" not in keys  # deprecated: gen_ai.provider.name replaces it
        assert "gen_ai.request.max_tokens" not in keys  # the client sends none
        assert not keys.keys() & set(CONTENT)  # content only when asked


def test_every_time_on_a_span_is_the_journals_own(httpserver, tmp_path):
    """Starts, ends and events (checks included) carry the events' timestamps, not export time."""
    collector = Collector(httpserver)
    journal_path = _planned_run(httpserver, tmp_path)
    journal = read_journal(journal_path)
    time.sleep(0.01)  # an export that stamped its own time would now show it

    assert invoke("otel", journal_path, "--endpoint", collector.url).exit_code == ExitCode.OK

    stamps = {ns(event.ts) for event in journal.events}
    for span in collector.spans:
        assert {span.start_time_unix_nano, span.end_time_unix_nano} <= stamps, span.name
        assert {event.time_unix_nano for event in span.events} <= stamps, span.name
    span_checks = Counter(
        e.time_unix_nano for span in collector.spans for e in span.events if e.name == "check"
    )
    assert span_checks == Counter(ns(e.ts) for e in journal.of_kind("check"))
    chats = sorted(collector.named("chat test-model"), key=lambda s: s.start_time_unix_nano)
    requests, responses = journal.of_kind("llm.request"), journal.of_kind("llm.response")
    assert [(s.start_time_unix_nano, s.end_time_unix_nano) for s in chats] == [
        (ns(q.ts), ns(r.ts)) for q, r in zip(requests, responses, strict=True)
    ]
    [tool] = _tool_spans(collector, "rate")
    [action] = [e for e in journal.for_step("rate") if e.event == "action"]
    [observation] = [e for e in journal.for_step("rate") if e.event == "observation"]
    assert (tool.start_time_unix_nano, tool.end_time_unix_nano) == (
        ns(action.ts),
        ns(observation.ts),
    )


@pytest.mark.parametrize(
    "env",
    [{}, {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "false"}],
    ids=["unset", "false"],
)
def test_content_stays_home_by_default(httpserver, tmp_path, env):
    """No prompt, answer, goal, tool argument or result leaves without the opt-in."""
    collector = Collector(httpserver)
    journal = _planned_run(httpserver, tmp_path)
    assert invoke("otel", journal, "--endpoint", collector.url, env=env).exit_code == 0
    for span in collector.spans:
        assert not attributes(span).keys() & set(CONTENT), span.name
    body = b"".join(span.SerializeToString() for span in collector.spans)
    assert GOAL.encode() not in body and b"unit_convert(" not in body


@pytest.mark.parametrize(
    ("flag", "env"),
    [
        (["--capture-content"], {}),
        ([], {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}),
        ([], {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"}),
    ],
    ids=["flag", "env-true", "env-span-only"],
)
def test_content_is_sent_with_the_opt_in(httpserver, tmp_path, flag, env):
    """Messages in the conventions' JSON shape; tool arguments and results as journaled."""
    collector = Collector(httpserver)
    journal_path = _planned_run(httpserver, tmp_path)
    journal = read_journal(journal_path)

    result = invoke("otel", journal_path, "--endpoint", collector.url, *flag, env=env)

    assert result.exit_code == ExitCode.OK, result.output
    chats = sorted(collector.named("chat test-model"), key=lambda s: s.start_time_unix_nano)
    requests, responses = journal.of_kind("llm.request"), journal.of_kind("llm.response")
    for chat, request, response in zip(chats, requests, responses, strict=True):
        sent = json.loads(attributes(chat)["gen_ai.input.messages"])
        assert sent == [
            {"role": m["role"], "parts": [{"type": "text", "content": m["content"]}]}
            for m in request.messages
        ]
        [answer] = json.loads(attributes(chat)["gen_ai.output.messages"])
        assert answer == {
            "role": "assistant",
            "parts": [{"type": "text", "content": response.text}],
            "finish_reason": "stop",
        }
    [tool] = _tool_spans(collector, "per_night")
    [action] = [e for e in journal.for_step("per_night") if e.event == "action"]
    [observation] = [e for e in journal.for_step("per_night") if e.event == "observation"]
    assert json.loads(attributes(tool)["gen_ai.tool.call.arguments"]) == action.args
    assert json.loads(attributes(tool)["gen_ai.tool.call.result"]) == observation.value
    [run] = collector.named("invoke_agent stepgraph")
    assert attributes(run)["stepgraph.goal"] == GOAL


@pytest.mark.parametrize(
    ("endpoint", "env", "path"),
    [
        ("{url}", {}, "/v1/traces"),
        ("{url}/", {}, "/v1/traces"),
        ("{url}/v1/traces", {}, "/v1/traces"),  # a traces URL is not extended
        ("{url}/otlp", {}, "/otlp/v1/traces"),
        (None, {"OTEL_EXPORTER_OTLP_ENDPOINT": "{url}"}, "/v1/traces"),
        (None, {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "{url}/custom/traces"}, "/custom/traces"),
    ],
    ids=["base", "base-slash", "traces-url", "base-with-path", "env-base", "env-traces-url"],
)
def test_a_base_endpoint_and_a_traces_url_both_reach_the_traces_path(
    httpserver, tmp_path, endpoint, env, path
):
    collector = Collector(httpserver)
    journal = tmp_path / "j.jsonl"
    Engine().run(EXAMPLES / "migration.yaml", journal=journal)
    option = ["--endpoint", endpoint.format(url=collector.url)] if endpoint else []
    env = {key: value.format(url=collector.url) for key, value in env.items()}

    result = invoke("otel", journal, *option, env=env)

    assert result.exit_code == ExitCode.OK, result.output
    assert [received.path for received in collector.requests] == [path]


def test_a_long_run_goes_out_in_requests_of_at_most_512_spans(httpserver, tmp_path):
    collector = Collector(httpserver)
    steps = [
        {"id": f"s{i}", "tool": "calculate", "args": {"expression": "1 + 1"}} for i in range(300)
    ]
    journal = tmp_path / "j.jsonl"
    Engine().run(make_task(steps), journal=journal)

    assert export_journal(read_journal(journal).events, endpoint=collector.url) == 601
    assert [len(received.spans) for received in collector.requests] == [512, 89]


def test_a_collector_that_is_down_is_one_error_line_within_seconds(tmp_path, closed_port):
    """No retry storm and no SDK warnings: one line, a nonzero exit, in a second or two."""
    journal = tmp_path / "j.jsonl"
    Engine().run(EXAMPLES / "migration.yaml", journal=journal)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")} | {"COLUMNS": "300"}
    url = f"http://127.0.0.1:{closed_port}"
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "stepgraph", "otel", str(journal), "--endpoint", url],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    took = time.monotonic() - started
    assert done.returncode == ExitCode.INVALID
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        f"error: the collector at {url}/v1/traces did not take the spans (connection refused): "
        "0 of 9 sent; is it running, and is that its OTLP/HTTP port?"
    ]
    assert took < 8, took  # an interpreter's start included; the export itself is immediate


def test_exporting_to_a_closed_port_in_python_raises_at_once(tmp_path, closed_port):
    journal = tmp_path / "j.jsonl"
    Engine().run(EXAMPLES / "migration.yaml", journal=journal)
    started = time.monotonic()
    with pytest.raises(TaskFileError, match=r"did not take the spans \(connection refused\)"):
        export_journal(read_journal(journal).events, endpoint=f"http://127.0.0.1:{closed_port}")
    assert time.monotonic() - started < 2


def test_an_endpoint_that_is_not_a_url_is_a_clear_error(tmp_path):
    journal = tmp_path / "j.jsonl"
    Engine().run(EXAMPLES / "migration.yaml", journal=journal)
    result = invoke("otel", journal, "--endpoint", "127.0.0.1:4318")
    assert result.exit_code == ExitCode.INVALID
    assert "give the collector's OTLP/HTTP URL, e.g. http://127.0.0.1:4318" in flat(result.output)


def test_a_journal_from_before_these_fields_still_exports(httpserver, tmp_path):
    """Old llm.request/llm.response lines: no endpoint known, so no server.* and provider _OTHER."""
    journal = _planned_run(httpserver, tmp_path)
    new = {
        "temperature", "seed", "max_tokens", "server_address", "server_port",
        "response_id", "response_model", "finish_reasons",
    }  # fmt: skip
    lines = [json.loads(line) for line in journal.read_text().splitlines()]
    old = tmp_path / "old.jsonl"
    old.write_text(
        "".join(json.dumps({k: v for k, v in e.items() if k not in new}) + "\n" for e in lines)
    )
    exporter = InMemorySpanExporter()

    export_journal(read_journal(old).events, exporter)

    chats = [s for s in exporter.get_finished_spans() if s.name == "chat test-model"]
    assert len(chats) == 2
    for chat in chats:
        assert chat.attributes["gen_ai.provider.name"] == "_OTHER"
        assert chat.attributes["gen_ai.response.model"] == "test-model"
        assert not {"server.address", "gen_ai.request.temperature", "gen_ai.response.id"} & set(
            chat.attributes
        )


def test_the_scripted_model_is_named_as_such(tmp_path):
    from stepgraph.testing import ScriptedLLM

    journal = tmp_path / "j.jsonl"
    task = Task(name="goal", goal=GOAL, inputs={"data": "2.5 TB", "link": "450 Mbps"})
    Engine(planner=Planner(ScriptedLLM([migration_plan(answer=ANSWER)]))).run(task, journal=journal)
    exporter = InMemorySpanExporter()
    export_journal(read_journal(journal).events, exporter)
    [chat] = [s for s in exporter.get_finished_spans() if s.name == "chat scripted"]
    assert chat.attributes["gen_ai.provider.name"] == "stepgraph.scripted"
    assert "server.address" not in chat.attributes

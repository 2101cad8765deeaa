"""The real openai client over HTTP against a local Chat Completions server."""

import json
import time

import pytest
from werkzeug import Request, Response

from stepgraph import Engine, LLMError, LLMSettings, OpenAIClient, Planner, RunStatus, Task
from stepgraph.exceptions import PlanningError
from stepgraph.journal import JournalWriter, read_journal
from tests.planner.conftest import INPUTS, migration_plan, prepared

SECRET = "sk-test-do-not-log-me"


def completion(text, prompt_tokens=321, completion_tokens=54):
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": "test-model",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


class ChatServer:
    """Answers chat completions from a script of (status, body) and records every request."""

    def __init__(self, httpserver, script, reject_formats=()):
        self.script = list(script)
        self.requests = []
        self.reject_formats = set(reject_formats)
        httpserver.expect_request("/v1/chat/completions", method="POST").respond_with_handler(
            self.handle
        )
        self.url = httpserver.url_for("/v1")

    def handle(self, request: Request) -> Response:
        body = request.get_json()
        self.requests.append({"body": body, "auth": request.headers.get("Authorization")})
        kind = (body.get("response_format") or {}).get("type", "text")
        if kind in self.reject_formats:
            error = {"error": {"message": f"response_format {kind} is not supported"}}
            return Response(json.dumps(error), status=400, content_type="application/json")
        status, payload, *headers = self.script.pop(0)
        if isinstance(payload, str) and status == 200 and not headers:
            payload = completion(payload)
        data = payload if isinstance(payload, str) else json.dumps(payload)
        content_type = (
            "application/json"
            if not headers
            else headers[0].get("content-type", "application/json")
        )
        extra = {k: v for h in headers for k, v in h.items() if k != "content-type"}
        return Response(data, status=status, content_type=content_type, headers=extra)

    def formats(self):
        return [(r["body"].get("response_format") or {}).get("type", "text") for r in self.requests]


def client(url, **settings):
    options = {
        "base_url": url,
        "api_key": SECRET,
        "model": "test-model",
        "max_retries": 2,
        "timeout": 5,
    }
    return OpenAIClient(LLMSettings(**{**options, **settings}))


def test_plan_run_and_answer_through_the_openai_client(httpserver, tmp_path):
    """Goal in, plan over HTTP, run, final answer over HTTP with each number traced."""
    answer = "3 nights [nights], moving 962.28 GB per night [per_night]."
    server = ChatServer(httpserver, [(200, migration_plan()), (200, answer)])
    engine = Engine(planner=Planner(client(server.url)))
    task = Task(
        name="goal",
        goal="Nights to move 2.5 TB over 450 Mbps",
        inputs={"data": "2.5 TB", "link": "450 Mbps"},
    )
    journal_path = tmp_path / "j.jsonl"
    result = engine.run(task, journal=journal_path)

    assert result.status is RunStatus.VERIFIED, [
        v.description for v in result.verdicts if not v.passed
    ]
    assert result.answer == answer
    first = server.requests[0]["body"]
    assert first["response_format"]["type"] == "json_schema"
    assert first["response_format"]["json_schema"]["strict"] is True
    assert (
        first["messages"][0]["role"] == "system"
        and "## unit_convert" in first["messages"][0]["content"]
    )
    assert server.requests[0]["auth"] == f"Bearer {SECRET}"

    journal = read_journal(journal_path)
    responses = journal.of_kind("llm.response")
    assert [r.purpose for r in responses] == ["plan", "answer"]
    assert responses[0].usage == {
        "prompt_tokens": 321,
        "completion_tokens": 54,
        "total_tokens": 375,
    }
    assert responses[0].latency_ms > 0
    requests = journal.of_kind("llm.request")
    assert requests[0].messages == first["messages"]  # the full text is kept
    assert SECRET not in journal_path.read_text()


def test_http_429_is_retried_and_the_retry_is_journaled(httpserver, tmp_path):
    rate_limited = (429, {"error": {"message": "slow down"}}, {"retry-after-ms": "5"})
    server = ChatServer(httpserver, [rate_limited, (200, migration_plan())])
    journal_path = tmp_path / "j.jsonl"
    plan = Engine(planner=Planner(client(server.url))).plan(
        Task(goal="nights", inputs={"data": "2.5 TB", "link": "450 Mbps"}), journal=journal_path
    )
    assert len(plan.steps) == 4
    assert len(server.requests) == 2
    [response] = read_journal(journal_path).of_kind("llm.response")
    assert response.retries == 1


def test_a_persistent_500_becomes_a_clear_error(httpserver):
    broken = (500, {"error": {"message": "model crashed"}}, {"retry-after-ms": "1"})
    server = ChatServer(httpserver, [broken, broken])
    planner = Planner(client(server.url, max_retries=1))
    with pytest.raises(LLMError, match="HTTP 500") as error:
        planner.plan(prepared("nights", INPUTS))
    assert error.value.status == 500
    assert len(server.requests) == 2  # the first try and one retry


def test_a_body_that_is_not_json_becomes_a_clear_error(httpserver):
    html = (200, "<html><body>502 Bad Gateway</body></html>", {"content-type": "text/html"})
    server = ChatServer(httpserver, [html])
    with pytest.raises(LLMError, match="not a chat completion"):
        Planner(client(server.url)).plan(prepared("nights", INPUTS))


def test_an_endpoint_without_json_schema_falls_back_and_remembers(httpserver):
    """json_schema is refused once; the retry after a bad plan goes straight to JSON mode."""
    invalid = migration_plan(rounding="ceil").replace('"unit_convert"', '"convert_units"', 1)
    server = ChatServer(
        httpserver, [(200, invalid), (200, migration_plan())], reject_formats={"json_schema"}
    )
    plan = Planner(client(server.url)).plan(prepared("nights", INPUTS))
    assert len(plan.steps) == 4
    assert server.formats() == ["json_schema", "json_object", "json_object"]


def test_an_endpoint_without_any_json_mode_gets_plain_text(httpserver):
    server = ChatServer(
        httpserver,
        [(200, f"Here you go:\n{migration_plan()}")],
        reject_formats={"json_schema", "json_object"},
    )
    plan = Planner(client(server.url)).plan(prepared("nights", INPUTS))
    assert len(plan.steps) == 4
    assert server.formats() == ["json_schema", "json_object", "text"]


def test_a_slow_endpoint_times_out(httpserver):
    def slow(request):
        time.sleep(0.5)
        return Response(json.dumps(completion("{}")), content_type="application/json")

    httpserver.expect_request("/v1/chat/completions").respond_with_handler(slow)
    planner = Planner(client(httpserver.url_for("/v1"), timeout=0.1, max_retries=0))
    with pytest.raises(LLMError, match="timed out"):
        planner.plan(prepared("nights", INPUTS))


def test_a_server_refusing_json_schema_with_500_falls_back_without_retries(httpserver, tmp_path):
    """llama-cpp-python answers json_schema with HTTP 500; JSON mode then carries the schema."""
    refusal = (500, {"detail": "response_format: Input should be 'text' or 'json_object'"})
    server = ChatServer(httpserver, [refusal, (200, migration_plan())])
    journal_path = tmp_path / "j.jsonl"
    plan = Engine(planner=Planner(client(server.url))).plan(
        Task(goal="nights", inputs={"data": "2.5 TB", "link": "450 Mbps"}), journal=journal_path
    )
    assert len(plan.steps) == 4
    assert server.formats() == ["json_schema", "json_object"]  # no retry of the refusal
    assert server.requests[1]["body"]["response_format"]["schema"]["title"] == "StepGraph"
    [response] = read_journal(journal_path).of_kind("llm.response")
    assert response.mode == "json_object+schema"


def test_a_500_that_is_not_about_the_format_is_retried_and_the_attempts_are_named(httpserver):
    broken = (500, {"error": {"message": "out of memory"}}, {"retry-after-ms": "1"})
    server = ChatServer(httpserver, [broken, broken, broken])
    with pytest.raises(LLMError, match=r"HTTP 500.*3 attempts: [\d.]+ s, [\d.]+ s, [\d.]+ s"):
        Planner(client(server.url, max_retries=2, response_format="text")).plan(
            prepared("nights", INPUTS)
        )
    assert len(server.requests) == 3


def test_a_timed_out_request_is_not_sent_again(httpserver):
    requests = []

    def slow(request):
        requests.append(1)
        time.sleep(0.5)
        return Response(json.dumps(completion("{}")), content_type="application/json")

    httpserver.expect_request("/v1/chat/completions").respond_with_handler(slow)
    planner = Planner(client(httpserver.url_for("/v1"), timeout=0.1, max_retries=3))
    with pytest.raises(LLMError, match=r"timed out after 0.1 s \(1 attempt: .*not sent again"):
        planner.plan(prepared("nights", INPUTS))
    assert len(requests) == 1


def test_retries_sample_differently_and_a_repeated_refused_answer_is_named(httpserver):
    invalid = migration_plan(rounding="ceil").replace('"unit_convert"', '"convert_units"', 1)
    server = ChatServer(httpserver, [(200, invalid), (200, invalid), (200, migration_plan())])
    plan = Planner(client(server.url), plan_retries=2).plan(prepared("nights", INPUTS))
    assert len(plan.steps) == 4
    temperatures = [r["body"].get("temperature") for r in server.requests]
    assert temperatures[0] == 0 and temperatures[1] > 0 and temperatures[2] > temperatures[1]
    roles = [[m["role"] for m in r["body"]["messages"]] for r in server.requests]
    assert roles[1] == ["system", "user", "assistant", "user"]  # the last answer, refused
    assert roles[2] == ["system", "user"]  # after a repeat: no refused answer to copy
    second_feedback = server.requests[2]["body"]["messages"][-1]["content"]
    assert "Write a different plan" in second_feedback
    assert "identical to one already refused" in second_feedback
    assert "unknown tool 'convert_units'" in second_feedback
    assert second_feedback.count("unknown tool 'convert_units'") == 1  # each problem once
    assert '"tool": "convert_units"' in second_feedback  # the step as the model wrote it


def test_fresh_retries_ask_the_opening_request_again_sampled_wider(httpserver):
    """`retry_with="fresh"`: no refused answer and no feedback to copy; only the sampling moves."""
    invalid = migration_plan(rounding="ceil").replace('"unit_convert"', '"convert_units"', 1)
    other = invalid.replace('"convert_units"', '"change_units"', 1)
    server = ChatServer(httpserver, [(200, invalid), (200, other), (200, migration_plan())])
    planner = Planner(client(server.url), plan_retries=2, retry_with="fresh")
    plan = planner.plan(prepared("nights", INPUTS))
    assert len(plan.steps) == 4
    sent = [r["body"] for r in server.requests]
    assert [b["messages"] for b in sent[1:]] == [sent[0]["messages"]] * 2
    temperatures = [b.get("temperature") for b in sent]
    assert temperatures[0] == 0 and 0 < temperatures[1] < temperatures[2]
    assert len({b.get("seed") for b in sent[1:]}) == 2


def test_fresh_retries_that_all_fail_still_name_the_last_problems(httpserver):
    invalid = migration_plan(rounding="ceil").replace('"unit_convert"', '"convert_units"', 1)
    server = ChatServer(httpserver, [(200, invalid)] * 2)
    planner = Planner(client(server.url), plan_retries=1, retry_with="fresh")
    with pytest.raises(PlanningError, match="no valid plan in 2 attempts") as raised:
        planner.plan(prepared("nights", INPUTS))
    shown = "\n".join(str(p) for p in raised.value.problems)
    assert "identical to one already refused" in shown and "convert_units" in shown


def test_the_response_format_can_be_chosen(httpserver):
    server = ChatServer(httpserver, [(200, migration_plan())])
    Planner(client(server.url, response_format="json_object")).plan(prepared("nights", INPUTS))
    assert server.formats() == ["json_object"]


def test_run_end_carries_the_reason_a_run_stopped(httpserver, tmp_path):
    broken = (503, {"error": {"message": "loading model"}}, {"retry-after-ms": "1"})
    server = ChatServer(httpserver, [broken, broken])
    engine = Engine(planner=Planner(client(server.url, max_retries=1)))
    journal_path = tmp_path / "j.jsonl"
    with pytest.raises(LLMError):
        engine.run(Task(goal="nights"), journal=journal_path)
    [end] = read_journal(journal_path).of_kind("run.end")
    assert end.status == "error"
    assert end.reason.startswith("LLMError: the model endpoint answered HTTP 503")
    assert "2 attempts" in end.reason


def test_the_journal_records_how_each_request_went_out_and_what_came_back(httpserver, tmp_path):
    """Sampling as sent (a repeat samples wider still), the endpoint, response id and reasons."""
    from stepgraph.journal import JournalWriter

    invalid = migration_plan(rounding="ceil").replace('"unit_convert"', '"convert_units"', 1)
    script = [(200, invalid), (200, invalid), (200, migration_plan())]
    server = ChatServer(httpserver, script)
    path = tmp_path / "j.jsonl"
    writer = JournalWriter(path, "run")
    Planner(client(server.url), plan_retries=2).plan(prepared("nights", INPUTS), journal=writer)
    writer.close()

    journal = read_journal(path)
    sent = [(r["body"].get("temperature"), r["body"].get("seed")) for r in server.requests]
    assert [(e.temperature, e.seed) for e in journal.of_kind("llm.request")] == sent
    assert sent[0] == (0, None) and sent[2][1] is not None
    for request in journal.of_kind("llm.request"):
        assert (request.server_address, request.server_port) == ("localhost", httpserver.port)
        assert request.max_tokens is None  # none is sent
    for response in journal.of_kind("llm.response"):
        assert response.response_id == "chatcmpl-test"
        assert response.response_model == "test-model"
        assert response.finish_reasons == ["stop"]


def test_max_tokens_caps_each_answer_and_is_journaled(httpserver, tmp_path, monkeypatch):
    """A retry at a higher temperature can repeat itself until the timeout: a cap ends it."""
    server = ChatServer(httpserver, [(200, migration_plan()), (200, migration_plan())])
    Planner(client(server.url)).plan(prepared("nights", INPUTS))
    assert "max_tokens" not in server.requests[0]["body"]  # unset: the server's own limit
    monkeypatch.setenv("STEPGRAPH_MAX_TOKENS", "700")
    capped = OpenAIClient(LLMSettings(base_url=server.url, api_key=SECRET, model="m"))
    journal = JournalWriter(tmp_path / "j.jsonl", "run1")
    with journal:
        Planner(capped).plan(prepared("nights", INPUTS), journal)
    assert server.requests[1]["body"]["max_tokens"] == 700
    [request] = read_journal(tmp_path / "j.jsonl").of_kind("llm.request")
    assert request.max_tokens == 700

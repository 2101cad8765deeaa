"""The real openai client over HTTP against a local Chat Completions server."""

import json
import time

import pytest
from werkzeug import Request, Response

from stepgraph import Engine, LLMError, LLMSettings, OpenAIClient, Planner, RunStatus, Task
from stepgraph.journal import read_journal
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

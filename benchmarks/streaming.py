"""Benchmark 5: plans streamed into execution against plans read whole.

A local OpenAI-compatible server writes each plan at a simulated token rate (20 tokens/s,
a model on a CPU); the real openai client reads it over HTTP. Each tool call takes a
simulated I/O latency. Measured for the migration and the fan-out plans, streamed and
not: time from `Engine.run` to the first action, and the wall time of the run.
"""

from __future__ import annotations

import json
import tempfile
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from benchmarks._chat_server import ChatStreamServer, tokens
from benchmarks._common import table
from benchmarks.economy import FAN_OUT_GOAL, MIGRATION_GOAL, fan_out_steps, migration_steps
from stepgraph import Engine, LLMSettings, OpenAIClient, Planner, RunStatus, Task
from stepgraph.executor import ToolCall
from stepgraph.journal import JournalEvent

TOKENS_PER_SECOND = 20.0
TOOL_LATENCY_S = 0.5  # each tool call, as a lookup over the network would take


class SlowBackend:
    """Runs each tool call on a thread after a simulated I/O latency."""

    def __init__(self, latency_s: float) -> None:
        self._latency = latency_s
        self._pool = ThreadPoolExecutor(max_workers=16)

    def submit(self, call: ToolCall) -> Future[Any]:
        """The call, after the latency."""
        return self._pool.submit(self._slow, call)

    def _slow(self, call: ToolCall) -> Any:
        time.sleep(self._latency)
        return call.run()

    def cancel(self, future: Future[Any]) -> None:
        """Nothing to stop: the calls are short."""
        future.cancel()

    def shutdown(self) -> None:
        """Let the threads go."""
        self._pool.shutdown(wait=False)


def plans() -> dict[str, tuple[str, str]]:
    """The two plans as a model writes them: a thought per step, an answer template."""
    thoughts = {
        "rate": "the link in bytes per second",
        "total": "the data in GB",
        "per_night": "one night's volume after utilisation and retries",
        "nights": "whole nights, rounded up",
        "total_fan": "the sum of the archives",
    }
    migration = [
        {"id": s["id"], "thought": thoughts[s["id"]], **{k: v for k, v in s.items() if k != "id"}}
        for s in migration_steps()
    ]
    fan_out = [
        {"id": s["id"], "thought": f"archive {s['id'][4:]} in GB", **s}
        if s["id"] != "total"
        else {**s, "thought": thoughts["total_fan"]}
        for s in fan_out_steps()
    ]
    return {
        "migration": (
            MIGRATION_GOAL,
            json.dumps(
                {
                    "thought": "convert, multiply, divide, round up",
                    "steps": migration,
                    "answer": "${nights} nights",
                }
            ),
        ),
        "fan-out (10 + 1)": (
            FAN_OUT_GOAL,
            json.dumps(
                {"thought": "convert each, then add", "steps": fan_out, "answer": "${total}"}
            ),
        ),
    }


def _one_run(goal: str, text: str, *, stream: bool, rate: float, latency: float) -> dict[str, Any]:
    first_action: list[float] = []

    def listen(event: JournalEvent) -> None:
        if event.event == "action" and not first_action:
            first_action.append(time.perf_counter())

    with (
        ChatStreamServer([text], tokens_per_second=rate) as server,
        tempfile.TemporaryDirectory() as tmp,
    ):
        settings = LLMSettings(base_url=server.url, api_key="x", model="m", max_retries=0)
        engine = Engine(
            planner=Planner(OpenAIClient(settings)),
            stream=stream,
            backend=lambda: SlowBackend(latency),
            journal_dir=tmp,
        )
        started = time.perf_counter()
        result = engine.run(Task(goal=goal), journal=Path(tmp) / "run.jsonl", listeners=[listen])
        wall = time.perf_counter() - started
    if result.status is not RunStatus.VERIFIED:
        raise RuntimeError(f"the benchmark run did not verify: {result.status} {result.answer}")
    return {"first": first_action[0] - started, "wall": wall, "answer": result.answer}


def run(rate: float = TOKENS_PER_SECOND, latency: float = TOOL_LATENCY_S) -> str:
    """Time to first action and wall time, streamed and not, per plan; printed as a table."""
    rows = []
    for name, (goal, text) in plans().items():
        _one_run(goal, text, stream=True, rate=100_000, latency=0.0)  # warm: imports, units
        plain = _one_run(goal, text, stream=False, rate=rate, latency=latency)
        streamed = _one_run(goal, text, stream=True, rate=rate, latency=latency)
        assert plain["answer"] == streamed["answer"], (plain["answer"], streamed["answer"])
        writing = len(tokens(text)) / rate
        rows.append(
            [
                name,
                len(tokens(text)),
                f"{writing:.2f} s",
                f"{plain['first']:.2f} s",
                f"{streamed['first']:.2f} s",
                f"{plain['wall']:.2f} s",
                f"{streamed['wall']:.2f} s",
                f"{streamed['wall'] / plain['wall']:.2f}x",
            ]
        )
    return table(
        f"7. Plans streamed into execution ({rate:g} tokens/s, {latency * 1000:g} ms per tool "
        "call, openai client over HTTP)",
        [
            "plan",
            "tokens",
            "writing",
            "first action, whole",
            "first action, streamed",
            "wall, whole",
            "wall, streamed",
            "streamed / whole",
        ],
        rows,
    )


if __name__ == "__main__":
    print(run())

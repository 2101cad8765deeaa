"""The benchmarks still run (tiny sizes; speed itself is judged by `python -m benchmarks.run`)."""

import pytest
from benchmarks import (
    critical_path,
    dask_overhead,
    economy,
    mcp_calls,
    overhead,
    replay_phases,
    scale,
    telemetry,
)
from benchmarks._common import critical_path_ms, random_dag


def test_the_critical_path_bound_is_the_longest_latency_weighted_chain():
    plan = random_dag(30, 5, seed=3, latency=(1, 2))
    bound = critical_path_ms(plan)
    assert 0 < bound <= sum(step.args["ms"] for step in plan.steps)


def test_random_graphs_are_seeded():
    assert random_dag(50, 8, seed=1) == random_dag(50, 8, seed=1)
    assert random_dag(50, 8, seed=1) != random_dag(50, 8, seed=2)


def test_every_benchmark_prints_its_table(monkeypatch):
    monkeypatch.setattr(economy, "MODEL_LATENCY_S", 0.001)
    outputs = [
        critical_path.run(steps=15, serial=False),
        overhead.run(steps=200, repeats=1),
        scale.run(sizes=(100,), events=500, replay_steps=50),
        economy.run(),
        telemetry.run(steps=50, repeats=1),
        mcp_calls.run(steps=5, repeats=1),
    ]
    for number, output in zip(("1.", "2.", "3a.", "4.", "5.", "6."), outputs, strict=True):
        assert output.startswith(f"## {number}") and "|" in output
    assert "(identical)" in outputs[2]
    assert "made 101 spans" in outputs[4]  # a step and a tool span per step, and the run


@pytest.mark.filterwarnings(  # distributed warns about its own sockets at cluster shutdown
    "ignore::ResourceWarning", "ignore::pytest.PytestUnraisableExceptionWarning"
)
def test_the_dask_benchmark_prints_its_table_and_its_goals():
    output = dask_overhead.run(steps=12, width=3, repeats=1)
    assert output.startswith("## 8.") and "plain Client.submit" in output
    assert "Goal: sleep graph within 1.1x" in output


def test_the_replay_phases_benchmark_names_each_phase_and_restores_what_it_wrapped():
    from stepgraph.engine import _session

    start = _session.RunSession._start
    output = replay_phases.run((60,))
    for phase in ("reading the record", "writing run.start", "the run", "comparing"):
        assert f"| {phase}" in output
    assert "x the journal." in output
    assert _session.RunSession._start is start, "the measured functions are restored"

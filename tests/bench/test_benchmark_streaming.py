"""The streaming benchmark runs and prints its table (tiny and fast; speed is judged by it)."""

from benchmarks import streaming


def test_the_streaming_benchmark_prints_its_table_with_both_plans():
    output = streaming.run(rate=20_000, latency=0.0)
    assert output.startswith("## 7.") and "| migration" in output and "| fan-out" in output


def test_the_benchmark_plans_are_the_shapes_it_names():
    plans = streaming.plans()
    assert sorted(plans) == ["fan-out (10 + 1)", "migration"]
    assert plans["fan-out (10 + 1)"][1].count('"tool": "unit_convert"') == 10

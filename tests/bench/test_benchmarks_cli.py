"""The command-line benchmark still runs (tiny sizes; `python -m benchmarks.run` judges speed)."""

from benchmarks import cli


def test_the_cli_benchmark_prints_every_table():
    output = cli.run(
        display_sizes=(20,),
        repeats=1,
        load_steps=50,
        validate_sizes=(50,),
        replay_sizes=(20,),
        memory_steps=20,
    )
    for number in ("5a.", "5b.", "5c.", "5d.", "5e.", "5f."):
        assert f"## {number}" in output
    assert "run 20 steps" in output and "(identical)" in output
    assert "stepgraph validate migration.yaml" in output
    assert "the same, no unit cache, pint with numpy and Dask" in output

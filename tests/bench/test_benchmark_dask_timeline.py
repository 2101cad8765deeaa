"""The Dask timeline still runs (tiny sizes; what it measures is judged by running it)."""

import re

import pytest
from benchmarks import dask_timeline


@pytest.mark.filterwarnings(  # distributed warns about its own sockets at cluster shutdown
    "ignore::ResourceWarning", "ignore::pytest.PytestUnraisableExceptionWarning"
)
def test_the_dask_timeline_prints_both_contenders_and_the_steps_sent_ahead():
    output = dask_timeline.run(steps=12, width=3, repeats=1)
    assert output.startswith("## 8b.")
    assert "| plain Client.submit " in output and "| stepgraph Engine.run " in output
    assert re.search(r"stepgraph: \d+ of 12 steps were on the cluster before", output)

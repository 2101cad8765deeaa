"""The serve figures still run (tiny sizes; the figures come from `python -m benchmarks.serve`)."""

from benchmarks.serve import index_figures


def test_the_index_figures_run_against_a_real_stepgraph_serve_process():
    rows = index_figures(12)
    assert [row[0] for row in rows][:2] == [
        "index rebuilt from 12 journals",
        "index refresh, 12 journals, nothing changed",
    ]
    assert all(row[1].endswith((" s", " ms", " MB")) for row in rows)

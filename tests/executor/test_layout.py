"""The layered layout the run page and `stepgraph graph` share."""

from __future__ import annotations

import networkx as nx
import pytest
from benchmarks._common import random_dag

from stepgraph.executor import build_graph, layered_layout, natural_key, route_crossings
from stepgraph.executor._layout import dot_available, straight_routes

ENGINES = ["sugiyama", pytest.param("dot", marks=pytest.mark.skipif(
    not dot_available(), reason="Graphviz is not installed"))]  # fmt: skip


def naive_routes(graph: nx.DiGraph, key=str) -> list:
    """The page's old drawing: columns by generation, rows sorted by `key`, straight lines."""
    where = {}
    for column, generation in enumerate(nx.topological_generations(graph)):
        for row, sid in enumerate(sorted(generation, key=key)):
            where[sid] = (10 + column * 230, 10 + row * 68)
    return straight_routes(graph, where.__getitem__, 170, 46)


def test_ids_sort_by_the_numbers_in_them():
    assert sorted(["s10", "s2", "s1", "a10b", "a9b"], key=natural_key) == [
        "a9b", "a10b", "s1", "s2", "s10",
    ]  # fmt: skip


def test_a_column_of_independent_steps_is_in_natural_order():
    """s2 is drawn above s10 (string order put s10 first)."""
    graph = nx.DiGraph([("root", f"s{i}") for i in range(12)])
    layout = layered_layout(graph, engine="sugiyama")
    column = sorted((b for b in layout.boxes.values() if b.id != "root"), key=lambda b: b.y)
    assert [b.id for b in column] == [f"s{i}" for i in range(12)]


@pytest.mark.parametrize("engine", ENGINES)
def test_no_two_boxes_overlap_at_200_steps(engine):
    graph = build_graph(random_dag(200, 12, 7).steps)
    layout = layered_layout(graph, node_w=170, node_h=46, engine=engine)
    assert layout.engine == engine and len(layout.boxes) == 200
    boxes = list(layout.boxes.values())
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            assert abs(a.x - b.x) >= 170 or abs(a.y - b.y) >= 46, (a, b)
    assert all(b.x >= 0 and b.x + 170 <= layout.width for b in boxes)
    assert all(b.y >= 0 and b.y + 46 <= layout.height for b in boxes)


@pytest.mark.parametrize("engine", ENGINES)
def test_every_step_sits_right_of_the_steps_it_needs(engine):
    graph = build_graph(random_dag(60, 6, 3).steps)
    layout = layered_layout(graph, engine=engine)
    for a, b in graph.edges:
        assert layout.boxes[a].x + layout.node_w < layout.boxes[b].x
    assert {(r.source, r.target) for r in layout.routes} == set(graph.edges)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_crossed_pair_of_columns_is_untangled(engine):
    """a_i feeds b_(3-i): in name order every pair of edges crosses (6); laid out, none do."""
    graph = nx.DiGraph([(f"a{i}", f"b{3 - i}") for i in range(4)])
    graph.add_edges_from(("r", f"a{i}") for i in range(4))
    assert route_crossings(naive_routes(graph)) == 6
    assert route_crossings(layered_layout(graph, engine=engine).routes) == 0


@pytest.mark.parametrize("engine", ENGINES)
def test_fewer_crossings_than_the_old_drawing_at_200_steps(engine):
    graph = build_graph(random_dag(200, 12, 7).steps)
    before = route_crossings(naive_routes(graph))
    after = route_crossings(layered_layout(graph, engine=engine).routes)
    assert after < 0.7 * before, (before, after)


def test_a_cycle_is_not_laid_out():
    with pytest.raises(ValueError, match="acyclic"):
        layered_layout(nx.DiGraph([("a", "b"), ("b", "a")]))


def test_the_layout_travels_as_json_with_every_step_and_edge():
    graph = build_graph(random_dag(30, 4, 1).steps)
    data = layered_layout(graph, engine="sugiyama").as_dict()
    assert {n["id"] for n in data["nodes"]} == set(graph)
    assert len(data["edges"]) == graph.number_of_edges()
    assert all(e["d"].startswith("M") and " C" in e["d"] for e in data["edges"])

"""Where each step of a plan is drawn: a layered (Sugiyama) layout, left to right.

One layout serves every picture of a plan: the run page's graph and the PNG/SVG of
`stepgraph graph`. Graphviz `dot` lays it out where it is installed; otherwise grandalf,
a pure-Python Sugiyama layout, does (the same four phases as dot: layers, dummy steps on
long edges, crossing reduction, coordinates). Either way a step sits in the column of
its dependency depth, steps of a column start in natural order of their ids (s2 before
s10), and edges leave a step's right side and reach the next one's left side.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import networkx as nx

Point = tuple[float, float]
Engine = Literal["auto", "dot", "sugiyama"]

_DIGITS = re.compile(r"(\d+)")
_DOT_TIMEOUT_S = 20  # a plan of a thousand steps takes dot about a second
_BEND_W = 6.0  # across a layer, the room a long edge takes where it passes
_ORDER_ROUNDS = 40  # sweeps of crossing reduction; the best ordering seen is kept


def natural_key(text: str) -> tuple[tuple[int, int | str], ...]:
    """A sort key that orders the numbers inside ids by value: s2 before s10."""
    return tuple((0, int(part)) if part.isdigit() else (1, part) for part in _DIGITS.split(text))


@dataclass(frozen=True)
class Box:
    """One step's place: the top-left corner of its box, and its column and row."""

    id: str
    x: float
    y: float
    layer: int
    row: int


@dataclass(frozen=True)
class Route:
    """One dependency as a chain of cubic Bézier segments: p0, c1, c2, p1, c1, c2, p2, ..."""

    source: str
    target: str
    points: tuple[Point, ...]

    def svg_path(self) -> str:
        """The route as the `d` attribute of an SVG path."""
        (x0, y0), rest = self.points[0], self.points[1:]
        curves = " ".join(f"{x:.1f},{y:.1f}" for x, y in rest)
        return f"M{x0:.1f},{y0:.1f} C{curves}"


@dataclass
class GraphLayout:
    """The boxes and routes of a plan's graph, in pixels, and which engine placed them."""

    node_w: float
    node_h: float
    boxes: dict[str, Box] = field(default_factory=dict)
    routes: list[Route] = field(default_factory=list)
    width: float = 0.0
    height: float = 0.0
    engine: str = "none"

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON: the page reads the same layout the pictures draw."""
        return {
            "engine": self.engine,
            "width": round(self.width, 1),
            "height": round(self.height, 1),
            "node_w": self.node_w,
            "node_h": self.node_h,
            "nodes": [
                {"id": b.id, "x": round(b.x, 1), "y": round(b.y, 1), "layer": b.layer}
                for b in self.boxes.values()
            ],
            "edges": [
                {"source": r.source, "target": r.target, "d": r.svg_path()} for r in self.routes
            ],
        }


def dot_available() -> bool:
    """Whether Graphviz's `dot` is on the PATH."""
    return shutil.which("dot") is not None


def layered_layout(
    graph: nx.DiGraph,
    *,
    node_w: float = 170,
    node_h: float = 46,
    gap_x: float = 60,
    gap_y: float = 22,
    margin: float = 10,
    engine: Engine = "auto",
) -> GraphLayout:
    """Lay a DAG out left to right in layers, with few crossings; `engine` picks who does it.

    `auto` is `dot` where Graphviz is installed, else the pure-Python Sugiyama layout. A
    graph with a cycle is not a plan that can be drawn in layers: `ValueError`.
    """
    if not nx.is_directed_acyclic_graph(graph):
        raise ValueError("only an acyclic graph is laid out in layers")
    layout = GraphLayout(node_w=node_w, node_h=node_h)
    if len(graph) == 0:
        return layout
    use_dot = engine == "dot" or (engine == "auto" and dot_available())
    if use_dot:
        centres, routes = _dot(graph, node_w, node_h, gap_x, gap_y)
        layout.engine = "dot"
    else:
        centres, routes = _sugiyama(graph, node_w, node_h, gap_x, gap_y)
        layout.engine = "sugiyama"
    _place(layout, graph, centres, routes, margin)
    return layout


def _place(
    layout: GraphLayout,
    graph: nx.DiGraph,
    centres: dict[str, Point],
    routes: dict[tuple[str, str], list[Point]],
    margin: float,
) -> None:
    """Shift everything so the drawing starts at the margin; boxes from centres."""
    w, h = layout.node_w, layout.node_h
    xs = [x for x, _ in centres.values()] + [p[0] for r in routes.values() for p in r]
    ys = [y for _, y in centres.values()] + [p[1] for r in routes.values() for p in r]
    left = min(min(xs), min(x for x, _ in centres.values()) - w / 2) - margin
    top = min(min(ys), min(y for _, y in centres.values()) - h / 2) - margin
    layers = _layers(graph)
    rows: dict[int, list[str]] = {}
    for sid in sorted(centres, key=lambda s: (layers[s], centres[s][1])):
        rows.setdefault(layers[sid], []).append(sid)
    for sid in sorted(centres, key=natural_key):
        cx, cy = centres[sid]
        row = rows[layers[sid]].index(sid)
        layout.boxes[sid] = Box(sid, cx - w / 2 - left, cy - h / 2 - top, layers[sid], row)
    for (a, b), points in routes.items():
        moved = tuple((x - left, y - top) for x, y in points)
        layout.routes.append(Route(a, b, moved))
    layout.routes.sort(key=lambda r: (natural_key(r.source), natural_key(r.target)))
    right = max(max(xs), max(x for x, _ in centres.values()) + w / 2) - left
    bottom = max(max(ys), max(y for _, y in centres.values()) + h / 2) - top
    layout.width, layout.height = right + margin, bottom + margin


def _layers(graph: nx.DiGraph) -> dict[str, int]:
    """Each step's column: its dependency depth (the longest path from a step with no inputs)."""
    return {
        node: depth
        for depth, generation in enumerate(nx.topological_generations(graph))
        for node in generation
    }


def _curve(points: Sequence[Point]) -> list[Point]:
    """A polyline as Bézier segments that leave and reach each point horizontally."""
    chain = [points[0]]
    for (x0, y0), (x1, y1) in zip(points, points[1:], strict=False):
        middle = (x0 + x1) / 2
        chain += [(middle, y0), (middle, y1), (x1, y1)]
    return chain


# -- grandalf ------------------------------------------------------------------------------


def _sugiyama(
    graph: nx.DiGraph, node_w: float, node_h: float, gap_x: float, gap_y: float
) -> tuple[dict[str, Point], dict[tuple[str, str], list[Point]]]:
    """Grandalf lays layers top to bottom: it is given boxes turned a quarter, then turned back."""
    from grandalf.graphs import Edge, Graph, Vertex  # type: ignore[import-untyped]  # no stubs
    from grandalf.layouts import SugiyamaLayout  # type: ignore[import-untyped]

    class _View:
        # grandalf reads a vertex's size from its `view`; across a layer is the box's height.
        def __init__(self) -> None:
            self.w, self.h = node_h, node_w
            self.xy: Point = (0.0, 0.0)

    class _EdgeView:
        def __init__(self) -> None:
            self.path: list[Point] = []

        def setpath(self, path: list[Point]) -> None:
            self.path = path

    names = sorted(graph, key=natural_key)
    vertices = {name: Vertex(name) for name in names}
    for vertex in vertices.values():
        vertex.view = _View()
    edges = {}
    for a, b in sorted(graph.edges, key=lambda e: (natural_key(e[0]), natural_key(e[1]))):
        edge = Edge(vertices[a], vertices[b])
        edge.view = _EdgeView()
        edges[(a, b)] = edge
    core = Graph(list(vertices.values()), list(edges.values()))
    centres: dict[str, Point] = {}
    routes: dict[tuple[str, str], list[Point]] = {}
    # Each connected part is laid out alone (grandalf's rule), the parts stacked top to bottom.
    offset = 0.0
    for part in sorted(core.C, key=lambda c: min(natural_key(v.data) for v in c.sV)):
        sugiyama = SugiyamaLayout(part)
        sugiyama.xspace, sugiyama.yspace = gap_y, gap_x
        roots = sorted((v for v in part.sV if not v.e_in()), key=lambda v: natural_key(v.data))
        sugiyama.init_all(roots=roots, inverted_edges=[])
        for layer in sugiyama.layers:  # a long edge's bend needs room for a line, not a box
            for vertex in layer:
                if getattr(vertex, "ctrl", None) is not None:
                    vertex.view.w = _BEND_W
        _natural_layers(sugiyama)
        _reduce_crossings(sugiyama)
        sugiyama.setxy()
        _separate(sugiyama, gap_y)
        sugiyama.draw_edges()
        low = min(v.view.xy[0] - node_h / 2 for layer in sugiyama.layers for v in layer)
        high = max(v.view.xy[0] + node_h / 2 for layer in sugiyama.layers for v in layer)
        for vertex in part.sV:
            across, along = vertex.view.xy
            centres[vertex.data] = (along, across - low + offset)
        for edge in part.sE:
            a, b = edge.v[0].data, edge.v[1].data
            path = [(along, across - low + offset) for across, along in edge.view.path]
            path[0] = (path[0][0] + node_w / 2, path[0][1])
            path[-1] = (path[-1][0] - node_w / 2, path[-1][1])
            routes[(a, b)] = _curve(path)
        offset += high - low + gap_y * 2
    return centres, routes


def _layer_key(sugiyama: Any, vertex: Any) -> tuple[Any, ...]:
    """Natural order of ids; a dummy step of a long edge sorts by its edge's ends."""
    control = getattr(vertex, "ctrl", None)
    if control is None:
        return (natural_key(vertex.data),)
    ranks = sorted(control)
    return (natural_key(control[ranks[0]].data), natural_key(control[ranks[-1]].data))


def _natural_layers(sugiyama: Any) -> None:
    for layer in sugiyama.layers:
        layer.sort(key=lambda v: _layer_key(sugiyama, v))
    for layer in sugiyama.layers:
        layer.setup(sugiyama)


def _reduce_crossings(sugiyama: Any) -> None:
    """Sweep down and up; keep the ordering with the fewest crossings (grandalf keeps the last)."""

    def orders() -> list[list[Any]]:
        return [list(layer) for layer in sugiyama.layers]

    def crossings() -> int:
        sugiyama.dirv = -1  # count each pair of layers once, looking up
        sugiyama._edge_inverter()  # grandalf's switch into its acyclic state, as `order` does
        count: int = sum(layer._cc() for layer in sugiyama.layers)
        sugiyama._edge_inverter()
        return count

    best, fewest = orders(), crossings()
    for _ in range(_ORDER_ROUNDS):
        for _step in sugiyama.ordering_step():
            pass
        count = crossings()
        if count < fewest:
            best, fewest = orders(), count
        if fewest == 0:
            break
    for layer, order in zip(sugiyama.layers, best, strict=True):
        layer[:] = order
        layer.setup(sugiyama)


def _separate(sugiyama: Any, gap: float) -> None:
    """Push apart boxes of a layer that Brandes-Köpf's averaged coordinates let overlap."""
    for layer in sugiyama.layers:
        previous: Any = None
        for vertex in layer:
            x, y = vertex.view.xy
            if previous is not None:
                px = previous.view.xy[0]
                least = px + (previous.view.w + vertex.view.w) / 2 + gap
                if x < least:
                    vertex.view.xy = (least, y)
            previous = vertex


# -- Graphviz ------------------------------------------------------------------------------


def _dot(
    graph: nx.DiGraph, node_w: float, node_h: float, gap_x: float, gap_y: float
) -> tuple[dict[str, Point], dict[tuple[str, str], list[Point]]]:
    """Ask `dot` for positions and splines (its JSON output), in points: 72 to the inch."""
    names = sorted(graph, key=natural_key)
    index = {name: f"n{i}" for i, name in enumerate(names)}  # ids never need quoting
    lines = [
        "digraph plan {",
        f"  rankdir=LR; nodesep={gap_y / 72:.3f}; ranksep={gap_x / 72:.3f};",
        f"  node [shape=box, fixedsize=true, width={node_w / 72:.3f}, "
        f'height={node_h / 72:.3f}, label=""];',
    ]
    lines += [f"  {index[name]};" for name in names]
    lines += [
        f"  {index[a]} -> {index[b]};"
        for a, b in sorted(graph.edges, key=lambda e: (natural_key(e[0]), natural_key(e[1])))
    ]
    lines.append("}")
    done = subprocess.run(
        ["dot", "-Tjson0"],
        input="\n".join(lines),
        capture_output=True,
        text=True,
        timeout=_DOT_TIMEOUT_S,
        check=True,
    )
    data = json.loads(done.stdout)
    back = {v: k for k, v in index.items()}
    top = float(data["bb"].split(",")[3])  # dot's y grows upwards; a page's downwards
    centres: dict[str, Point] = {}
    by_gvid: dict[int, str] = {}
    for obj in data.get("objects", []):
        if obj.get("name") in back:
            x, y = (float(v) for v in obj["pos"].split(","))
            centres[back[obj["name"]]] = (x, top - y)
            by_gvid[obj["_gvid"]] = back[obj["name"]]
    routes: dict[tuple[str, str], list[Point]] = {}
    for edge in data.get("edges", []):
        a, b = by_gvid[edge["tail"]], by_gvid[edge["head"]]
        routes[(a, b)] = _dot_spline(edge["pos"], top)
    return centres, routes


def _dot_spline(pos: str, top: float) -> list[Point]:
    """Dot's `pos` of an edge: an optional end point (e,x,y), then the B-spline's points."""
    end: Point | None = None
    points: list[Point] = []
    for item in pos.split():
        parts = item.split(",")
        if parts[0] == "e":
            end = (float(parts[1]), top - float(parts[2]))
        elif parts[0] != "s":
            points.append((float(parts[0]), top - float(parts[1])))
    if end is not None:
        points[-1] = end  # the arrow's tip: the page draws the head itself
    return points


# -- measures ------------------------------------------------------------------------------


def route_crossings(routes: Iterable[Route], samples: int = 6) -> int:
    """How many times two dependencies' drawn lines cross (lines that share a step do not count).

    Each Bézier segment is drawn as `samples` straight pieces, and every pair of pieces
    from two routes without a shared end is tested, so this counts what a person sees.
    """
    import numpy as np

    pieces: list[tuple[Point, Point]] = []
    owners: list[tuple[str, str]] = []
    for route in routes:
        line = _flatten(route.points, samples)
        for p, q in zip(line, line[1:], strict=False):
            pieces.append((p, q))
            owners.append((route.source, route.target))
    if len(pieces) < 2:
        return 0
    seg = np.array(pieces)  # (n, 2, 2)
    starts, r = seg[:, 0, :], seg[:, 1, :] - seg[:, 0, :]
    route_of = {owner: i for i, owner in enumerate(dict.fromkeys(owners))}
    rid = np.array([route_of[o] for o in owners])
    crossed: set[tuple[int, int]] = set()
    for i in range(len(pieces) - 1):
        others, dirs = starts[i + 1 :], r[i + 1 :]
        denom = _cross(r[i], dirs)
        with np.errstate(divide="ignore", invalid="ignore"):
            t = _cross(others - starts[i], dirs) / denom
            u = _cross(others - starts[i], r[i]) / denom
        # Inclusive: lines that meet where a piece ends cross too (routes sharing a step are
        # left out below, so their shared ends do not count).
        hit = (np.abs(denom) > 1e-9) & (t >= 0) & (t <= 1) & (u >= 0) & (u <= 1)
        for j in np.nonzero(hit)[0]:
            a, b = owners[i], owners[i + 1 + j]
            if a == b or set(a) & set(b):
                continue
            crossed.add((min(rid[i], rid[i + 1 + j]), max(rid[i], rid[i + 1 + j])))
    return len(crossed)


def _cross(a: Any, b: Any) -> Any:
    return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]


def _flatten(points: Sequence[Point], samples: int) -> list[Point]:
    line = [points[0]]
    for k in range(1, len(points) - 2, 3):
        p0, c1, c2, p1 = points[k - 1], points[k], points[k + 1], points[k + 2]
        for i in range(1, samples + 1):
            t = i / samples
            a, b, c, d = (1 - t) ** 3, 3 * (1 - t) ** 2 * t, 3 * (1 - t) * t**2, t**3
            line.append(
                (
                    a * p0[0] + b * c1[0] + c * c2[0] + d * p1[0],
                    a * p0[1] + b * c1[1] + c * c2[1] + d * p1[1],
                )
            )
    return line


def straight_routes(
    graph: nx.DiGraph, where: Callable[[str], Point], node_w: float, node_h: float
) -> list[Route]:
    """Straight lines from each step's right side to the next one's left (boxes by top-left)."""
    routes = []
    for a, b in graph.edges:
        (x1, y1), (x2, y2) = where(a), where(b)
        start, end = (x1 + node_w, y1 + node_h / 2), (x2, y2 + node_h / 2)
        third = ((end[0] - start[0]) / 3, (end[1] - start[1]) / 3)
        c1 = (start[0] + third[0], start[1] + third[1])
        c2 = (start[0] + 2 * third[0], start[1] + 2 * third[1])
        routes.append(Route(a, b, (start, c1, c2, end)))
    return routes

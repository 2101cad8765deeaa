"""The graph a plan runs as: a networkx DiGraph whose per-step data is made small.

A run holds its graph to the end, and networkx gives every node a dict for its data and
every edge another: 200 and 64 bytes, most of a big replay's graph. A step graph's
nodes carry their step (and, for drawing, a layer); its edges carry nothing.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from typing import Any

import networkx as nx

_UNSET = object()


class NoEdgeData(dict[str, Any]):
    """The data of every edge: one shared empty dict, which refuses to be written."""

    def _refuse(self, *args: Any, **kwargs: Any) -> None:
        if args and args[0] or kwargs or len(args) > 1:
            raise TypeError("the edges of a step graph carry no data")

    update = __setitem__ = setdefault = _refuse


_EDGE_DATA = NoEdgeData()


class NodeData(MutableMapping[str, Any]):
    """A node's data: its step in a slot (48 bytes), other keys in a dict made when needed."""

    __slots__ = ("_step", "_more")

    def __init__(self) -> None:
        self._step: Any = _UNSET
        self._more: dict[str, Any] | None = None

    def __getitem__(self, key: str) -> Any:
        if key == "step":
            if self._step is not _UNSET:
                return self._step
        elif self._more is not None and key in self._more:
            return self._more[key]
        raise KeyError(key)

    def __setitem__(self, key: str, value: Any) -> None:
        if key == "step":
            self._step = value
        elif self._more is None:
            self._more = {key: value}
        else:
            self._more[key] = value

    def __delitem__(self, key: str) -> None:
        if key == "step" and self._step is not _UNSET:
            self._step = _UNSET
        elif self._more is not None and key in self._more:
            del self._more[key]
        else:
            raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        if self._step is not _UNSET:
            yield "step"
        if self._more:
            yield from self._more

    def update(self, other: Any = (), /, **kwargs: Any) -> None:
        """Set keys; a plain ``{"step": ...}`` (what a plan's nodes are added with) at once."""
        if type(other) is dict and not kwargs and len(other) == 1 and "step" in other:
            self._step = other["step"]
        else:
            super().update(other, **kwargs)

    def __len__(self) -> int:
        return (self._step is not _UNSET) + len(self._more or ())

    def copy(self) -> dict[str, Any]:
        """A plain dict of the data (what networkx copies a node's data with)."""
        return dict(self)

    def __repr__(self) -> str:
        return repr(dict(self))


class StepDiGraph(nx.DiGraph):  # type: ignore[misc]  # networkx is untyped
    """A DiGraph with small node data and shared, empty edge data."""

    node_attr_dict_factory = NodeData
    edge_attr_dict_factory = staticmethod(lambda: _EDGE_DATA)

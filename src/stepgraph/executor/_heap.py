"""Keeping the collector off the objects a run starts with.

A run allocates a few objects per step and keeps most of them (records, observations,
the graph). CPython's full collections walk every tracked object in the process: the
unit registry, pydantic's schemas, the plan. On a 10k-step run three of them took a
quarter of the run. `gc.freeze()` moves what exists at the start into a permanent
generation that collections skip; young collections still run and still free cycles
made during the run.

Two guards keep this from holding garbage: only one run at a time freezes (a run that
starts while another holds the freeze runs without, so the heap is handed back whenever
the holder ends, however runs overlap), and at the end, if enough young collections
happened since the last full one that CPython would have made one, it is made then:
once per big run instead of several times, and never for a small run.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

# CPython considers a full collection after this many middle-generation ones.
YOUNG_COLLECTIONS_PER_FULL = 10

_lock = threading.Lock()
_held = False  # one run holds the freeze at a time
_young_since_full = 0  # middle-generation collections in frozen blocks since a full one
_full_at_exit = 0  # full collections counted when the last frozen block ended


def _collections(generation: int) -> int:
    return int(gc.get_stats()[generation]["collections"])


@contextmanager
def frozen_heap() -> Iterator[None]:
    """Collections during the block skip the objects that existed before it."""
    global _held, _young_since_full
    with _lock:
        mine = not _held
        if mine:
            _held = True
            if _collections(2) != _full_at_exit:  # one ran between blocks, over everything
                _young_since_full = 0
            young_before = _collections(1)
            gc.freeze()
    try:
        yield
    finally:
        if mine:
            with _lock:
                gc.unfreeze()
                _held = False
                _collect_if_due(_collections(1) - young_before)


def _collect_if_due(young: int) -> None:
    """The full collection the frozen block put off, if CPython would have made one by now."""
    global _young_since_full, _full_at_exit
    _young_since_full += young
    if _young_since_full >= YOUNG_COLLECTIONS_PER_FULL and gc.isenabled():
        gc.collect()
        _young_since_full = 0
    _full_at_exit = _collections(2)

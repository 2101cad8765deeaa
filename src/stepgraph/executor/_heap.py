"""Keeping the collector off the objects a run starts with.

A run allocates a few objects per step and keeps most of them (records, observations,
the graph). CPython's full collections walk every tracked object in the process: the
unit registry, pydantic's schemas, the plan. On a 10k-step run three of them took a
quarter of the run. `gc.freeze()` moves what exists at the start into a permanent
generation that collections skip; young collections still run and still free cycles
made during the run, and `gc.unfreeze()` hands everything back at the end.

It is the host's process, though. A run never freezes a heap that someone else froze: a
host that calls `gc.freeze()` before forking workers keeps its frozen objects frozen after
the run (only stepgraph's own freeze, `freeze_imports` of the command line, is handed back).
Asking whether anything is frozen walks the frozen objects (`gc.get_freeze_count`), so it
is asked only while nothing of stepgraph's is frozen, and once a host's freeze is seen the
process's runs leave the heap alone for good. `frozen_heap(False)`, a run's
`RunConfig.freeze_heap` switched off, leaves the collector alone for the block and
everything nested in it (the scheduler's own `frozen_heap()` included).

Two guards keep this from holding garbage. Only one run at a time freezes (a run that
starts while another holds the freeze runs without, so the heap is handed back whenever
the holder ends, however runs overlap). And a run that starts on a heap grown by a
quarter since the last full collection makes one first: CPython's own rule, which
back-to-back runs would otherwise keep from ever firing, so garbage left between runs
is freed about when CPython would free it. The heap is measured in allocated memory
blocks (`sys.getallocatedblocks`, a walk over arenas, a tenth of a millisecond):
counting the tracked objects (`gc.get_freeze_count`) walks them all, 80 ms on a heap
with distributed loaded.
"""

from __future__ import annotations

import gc
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

GROWTH_BEFORE_FULL = 1.25  # CPython: a full collection once survivors grew by a quarter

_lock = threading.Lock()
_held = False  # one run holds the freeze at a time
_baseline = 0  # memory blocks after the last full collection (0: not measured yet)
_full_at_exit = -1  # full collections counted when the last frozen block ended
_ours = False  # what is frozen now was frozen by stepgraph (`freeze_imports`): runs may thaw it
_foreign = False  # a heap frozen by the host was seen: no run of this process freezes
# Set inside `frozen_heap(False)`: nested blocks (a run's scheduler) leave the heap alone too.
_left_alone: ContextVar[bool] = ContextVar("stepgraph_heap_left_alone", default=False)


def _full_collections() -> int:
    return int(gc.get_stats()[2]["collections"])


@contextmanager
def frozen_heap(wanted: bool = True) -> Iterator[None]:
    """Collections during the block skip the objects that existed before it.

    Not when `wanted` is False (then nothing nested in the block freezes either), when
    another block holds the freeze, or when the heap is already frozen by someone else:
    their `gc.freeze()` is theirs to undo.
    """
    global _held
    if not wanted:
        token = _left_alone.set(True)
        try:
            yield
        finally:
            _left_alone.reset(token)
        return
    with _lock:
        mine = not _held and not _left_alone.get() and not _host_froze()
        if mine:
            _held = True
            _freeze()
    try:
        yield
    finally:
        if mine:
            with _lock:
                global _full_at_exit, _ours
                gc.unfreeze()
                _held = _ours = False
                _full_at_exit = _full_collections()


def _host_froze() -> bool:
    """Whether objects are frozen that the host froze (not stepgraph); sticky once seen."""
    global _foreign
    if not _foreign and not _ours:
        # Walks the frozen objects: none to walk, unless someone froze some.
        _foreign = gc.get_freeze_count() > 0
    return _foreign


def freeze_imports() -> None:
    """Freeze the heap as stepgraph's own: the command line's imports, handed back by a run."""
    global _ours
    with _lock:
        theirs = _host_froze()  # a host's frozen objects stay the host's
        gc.freeze()
        _ours = not theirs


def _freeze() -> None:
    """Freeze the heap, after the full collection it is due, if it is due."""
    global _baseline
    gc.freeze()
    size = sys.getallocatedblocks()
    if _baseline == 0 or _full_collections() != _full_at_exit:  # one ran between blocks
        _baseline = size
    elif size > _baseline * GROWTH_BEFORE_FULL and gc.isenabled():
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        _baseline = sys.getallocatedblocks()


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic collection during the block (if the collector was on, it is on again after).

    For work that allocates much, keeps most of it and makes no cycles, such as checking a
    plan: each collection walks what the block has built so far, so its cost per step grew
    with the plan (12 us a step at 1k steps, 23 at 100k; 15 with the collector paused).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()

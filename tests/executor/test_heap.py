"""The collector is kept off a run's starting heap, and the heap is always handed back."""

import gc
import weakref

import pytest

from stepgraph import Engine
from stepgraph.executor import frozen_heap
from tests.conftest import EXAMPLES


class _Node:
    """An object that can sit in a reference cycle and be watched through a weakref."""

    def __init__(self) -> None:
        self.partner: _Node | None = None


def test_a_run_hands_the_heap_back(tmp_path):
    """Nothing stays frozen after a run, so later collections see everything again."""
    result = Engine(journal_dir=tmp_path).run(EXAMPLES / "migration.yaml")
    assert result.verified
    assert gc.get_freeze_count() == 0


def test_a_block_that_raises_still_hands_the_heap_back():
    with pytest.raises(RuntimeError), frozen_heap():
        assert gc.get_freeze_count() > 0
        raise RuntimeError("a run that fails")
    assert gc.get_freeze_count() == 0


def test_an_overlapping_run_leaves_the_freeze_to_its_holder():
    """A second run inside the first neither freezes again nor unfreezes the first's heap."""
    with frozen_heap():
        frozen = gc.get_freeze_count()
        with frozen_heap():
            assert gc.get_freeze_count() == frozen
        assert gc.get_freeze_count() == frozen
    assert gc.get_freeze_count() == 0


def test_a_cycle_let_go_during_a_big_run_is_collected_at_its_end():
    """The full collection a frozen block puts off is made when it ends, not left for later."""
    first = _Node()
    first.partner = _Node()
    first.partner.partner = first
    watch = weakref.ref(first)
    gc.collect()  # the cycle is old now: a frozen block's collections skip it
    with frozen_heap():
        del first
        for _ in range(12):  # as many young collections as a 10k-step run makes
            gc.collect(1)
        assert watch() is not None
    assert watch() is None

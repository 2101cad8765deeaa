"""The collector is kept off a run's starting heap, and the heap is always handed back."""

import gc
import sys
import weakref

import pytest

from stepgraph import Engine, PlanValidationError
from stepgraph.executor import frozen_heap, validate_plan
from stepgraph.tools import default_registry
from tests.conftest import EXAMPLES, make_task


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
        made_since = [[] for _ in range(1000)]  # a second freeze would take these in too
        # Frozen objects that die meanwhile (a finished run's worker threads ending) lower
        # the count: what must not happen is a rise (a second freeze) or zero (an unfreeze).
        with frozen_heap():
            assert 0 < gc.get_freeze_count() <= frozen
        assert 0 < gc.get_freeze_count() <= frozen
        assert len(made_since) == 1000
    assert gc.get_freeze_count() == 0


def test_garbage_left_between_runs_is_freed_once_the_heap_grew_by_a_quarter():
    """Back-to-back runs never let CPython's own full collection fire; a run start does it."""
    first = _Node()
    first.partner = _Node()
    first.partner.partner = first
    watch = weakref.ref(first)
    gc.collect()
    with frozen_heap():  # the heap is measured here
        pass
    del first  # garbage now, in the oldest generation: young collections never see it
    ballast = [[] for _ in range(sys.getallocatedblocks() // 3)]  # the heap grows by a third
    with frozen_heap():
        assert watch() is None
    assert len(ballast) > 0


@pytest.mark.parametrize("enabled", [True, False])
def test_checking_a_plan_leaves_the_collector_as_it_found_it(enabled):
    """Validation pauses the collector while it builds; a valid or a refused plan alike."""
    good = make_task([{"id": "a", "tool": "calculate", "args": {"expression": "1 + 1"}}]).plan
    bad = make_task([{"id": "a", "tool": "nope"}]).plan
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        validate_plan(good, default_registry())
        assert gc.isenabled() is enabled
        with pytest.raises(PlanValidationError):
            validate_plan(bad, default_registry())
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()
